#!/usr/bin/env bash
# Side-by-side throughput of icl and PyTorch on this machine, he2025 recipe (H=2, d=5, L=40,
# batch 256, Adam 1e-3, fresh data each step), run alternately ROUNDS times; prints the median
# steps/s of each and their ratio.
#
#   bench/compare.sh [ROUNDS] [THREADS] [DTYPE]      (defaults: 3 2 f32)
#
# Installs torch from PyPI into bench/.venv on first use (tests never need it). Builds icl with
# RUSTFLAGS="-C target-cpu=native" (the SIMD engine's `wide` vectors pick AVX2/AVX-512 at compile
# time) into target/bench-native, unless ICL_BIN points at a binary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
THREADS=${2:-2}
DTYPE=${3:-f32}
HEADS=${HEADS:-2}
VENV=bench/.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q torch numpy
fi
if [ -z "${ICL_BIN:-}" ]; then
    RUSTFLAGS="${RUSTFLAGS:--C target-cpu=native}" CARGO_TARGET_DIR=target/bench-native \
        cargo build --release -q -p icl-cli
    ICL_BIN=target/bench-native/release/icl
fi
torch_rates=()
icl_rates=()
for r in $(seq "$ROUNDS"); do
    t=$("$VENV/bin/python" bench/torch_reference.py --heads "$HEADS" --threads "$THREADS" --dtype "$DTYPE" --steps 1000 2>/dev/null |
        "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['steps_per_s'])")
    i=$("$ICL_BIN" bench --json --heads "$HEADS" --threads "$THREADS" --dtypes "$DTYPE" --steps 20000 --max-seconds 3 --no-split |
        "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['rows'][0]['steps_per_s'])")
    printf 'round %d: torch %8.1f steps/s   icl %9.1f steps/s\n' "$r" "$t" "$i"
    torch_rates+=("$t")
    icl_rates+=("$i")
done
"$VENV/bin/python" - "${torch_rates[*]}" "${icl_rates[*]}" "$HEADS" "$THREADS" "$DTYPE" <<'PY'
import statistics, sys
t = [float(x) for x in sys.argv[1].split()]
i = [float(x) for x in sys.argv[2].split()]
mt, mi = statistics.median(t), statistics.median(i)
print(f"he2025 H={sys.argv[3]} {sys.argv[5]} threads={sys.argv[4]}: torch {mt:.1f} steps/s, icl {mi:.1f} steps/s, ratio icl/torch = {mi / mt:.1f}x")
print(f"a 5e5-step run: torch {5e5 / mt / 60:.1f} min, icl {5e5 / mi:.1f} s")
PY
