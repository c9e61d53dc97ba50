#!/usr/bin/env bash
# Run every fuzz target of icl for SECONDS each (default 600) with cargo-fuzz (libFuzzer, nightly
# toolchain), starting from the committed corpora, and print executions and crashes per target.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
# Installs cargo-fuzz from crates.io if missing. New interesting inputs are added to the corpus;
# `cargo fuzz cmin` minimises it (run.sh --minimise does that after the runs).
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}
shift || true
minimise=0
targets=()
for a in "$@"; do
  case "$a" in --minimise) minimise=1 ;; *) targets+=("$a") ;; esac
done
[ ${#targets[@]} -gt 0 ] || targets=(config checkpoint torch_import c_api)
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
tc=+nightly
rustup toolchain list | grep -q nightly || tc=""
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log=$(mktemp)
  set +e
  cargo $tc fuzz run --fuzz-dir . "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  echo "fuzz $t: ${secs}s, ${execs:-?} executions, $crashes crash artifacts, libFuzzer exit $rc"
  [ "$rc" = 0 ] || tail -30 "$log"
  rm -f "$log"
  if [ "$minimise" = 1 ]; then cargo $tc fuzz cmin --fuzz-dir . "$t" "corpus/$t" >/dev/null 2>&1 || true; fi
done
