#!/usr/bin/env bash
# Same seed, same bytes: train every preset for 200 steps and hash model.safetensors, metrics.csv
# and snapshots.safetensors, then hash the `claims` array of `icl repro zhang2025 --scale smoke`'s
# report.json. Compares with tests/same-bytes/expected.txt (written by the commit before a
# refactoring; `--write` replaces it). Not in CI (a few minutes on 2 cores); run it around any
# change that must keep every run's bytes.
#   ICL=target/release/icl bash tests/same-bytes/run.sh [--write] [PRESET...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
icl="${ICL:-$root/target/release/icl}"
write=0
if [ "${1:-}" = --write ]; then write=1; shift; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="$work/hashes.txt"
if [ $# -gt 0 ]; then presets=("$@"); elif [ $write = 0 ]; then
  # the presets of the baseline (a preset added since has no hash to compare with)
  mapfile -t presets < <(grep -v '^repro-' "$here/expected.txt" | cut -d' ' -f1 | uniq)
else
  mapfile -t presets < <("$icl" presets --json | python3 -c 'import json,sys; [print(p["name"]) for p in json.load(sys.stdin)]')
fi
for p in "${presets[@]}"; do
  "$icl" train --preset "$p" --set train.steps=200 --eval-samples 0 --quiet --out "$work/$p" >/dev/null
  for f in model.safetensors metrics.csv snapshots.safetensors; do
    if [ -f "$work/$p/$f" ]; then
      echo "$p $f $(sha256sum < "$work/$p/$f" | cut -c1-64)" >> "$out"
    fi
  done
  rm -rf "${work:?}/$p"
done
if [ $# -eq 0 ]; then
  "$icl" repro zhang2025 --scale smoke --out "$work/repro" >/dev/null 2>&1
  echo "repro-zhang2025-smoke claims $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["claims"], sort_keys=True))' "$work/repro/report.json" | sha256sum | cut -c1-64)" >> "$out"
fi
if [ $write = 1 ]; then
  cp "$out" "$here/expected.txt"; echo "wrote $here/expected.txt ($(wc -l < "$out") hashes)"
  exit 0
fi
if [ $# -gt 0 ]; then
  grep -F -f <(cut -d' ' -f1-2 "$out") "$here/expected.txt" | diff - "$out" && echo "same bytes (${#presets[@]} presets)"
else
  diff "$here/expected.txt" "$out" && echo "same bytes ($(wc -l < "$out") hashes)"
fi
