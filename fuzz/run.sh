#!/usr/bin/env bash
# Run every fuzz target of icl for SECONDS each (default 600), one after another, with cargo-fuzz
# (libFuzzer + AddressSanitizer, optimised with debug assertions so integer overflows panic, nightly
# toolchain), starting from the committed corpora, and print
# executions and crashes per target.
#   fuzz/run.sh [SECONDS] [--minimise] [TARGET...]
# Installs cargo-fuzz from crates.io if missing. New interesting inputs are added to
# fuzz/corpus/TARGET; --minimise runs `cargo fuzz cmin` on each corpus afterwards. Crashes, hangs
# (> 30 s for one input) and allocations over 2 GiB are written to fuzz/artifacts/TARGET.
# Runs under `nice -n 15`; set FUZZ_NICE to change that.
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
nice=(nice -n "${FUZZ_NICE:-15}")
"${nice[@]}" cargo $tc fuzz build -O -a --fuzz-dir .
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="artifacts/$t.log"
  set +e
  "${nice[@]}" cargo $tc fuzz run -O -a --fuzz-dir . "$t" "corpus/$t" -- -max_total_time="$secs" \
    -timeout=30 -max_len=4096 -len_control=0 -rss_limit_mb=2048 -malloc_limit_mb=2048 -artifact_prefix="artifacts/$t/" \
    -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  crashes=$(find "artifacts/$t" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
  slow=$(find "artifacts/$t" -type f -name 'slow-unit-*' | wc -l)
  echo "fuzz $t: ${secs}s, ${execs:-?} executions, coverage ${cov:-?}, corpus $(ls "corpus/$t" | wc -l), $crashes crashes (crash/oom/timeout/leak artifacts), $slow slow units (> 10 s), libFuzzer exit $rc"
  [ "$rc" = 0 ] || grep -A30 -m1 'ERROR\|panicked\|==ERROR' "$log" | head -40
  if [ "$minimise" = 1 ]; then
    "${nice[@]}" cargo $tc fuzz cmin -O -a --fuzz-dir . "$t" "corpus/$t" >/dev/null 2>&1 || true
    echo "fuzz $t: corpus minimised to $(ls "corpus/$t" | wc -l) inputs"
  fi
done
