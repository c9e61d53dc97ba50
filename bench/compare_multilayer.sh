#!/usr/bin/env bash
# Side-by-side throughput of icl and PyTorch on the multilayer paper's hot path: a T-layer looped
# softmax transformer, H=2, d=5, L=120, batch 256, Adam 1e-3, fresh varying-covariance data each
# step (bench/torch_multilayer.py is the same architecture), run alternately ROUNDS times; prints
# the median steps/s of each, their ratio and the achieved GFLOP/s.
#
#   bench/compare_multilayer.sh [ROUNDS] [THREADS] [LAYERS]      (defaults: 3 2 3)
#
# Installs torch from PyPI into bench/.venv on first use (tests never need it). Uses the plain
# release build (target/release/icl) unless ICL_BIN points at a binary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
THREADS=${2:-2}
LAYERS=${3:-3}
VENV=bench/.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q torch numpy
fi
if [ -z "${ICL_BIN:-}" ]; then
    cargo build --release --locked -q -p icl-cli
    ICL_BIN=target/release/icl
fi
torch_rates=()
icl_rates=()
for r in $(seq "$ROUNDS"); do
    t=$("$VENV/bin/python" bench/torch_multilayer.py --layers "$LAYERS" --threads "$THREADS" --steps 20 2>/dev/null |
        "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['steps_per_s'])")
    i=$("$ICL_BIN" bench --json --preset "multilayer-t$LAYERS" --heads 2 --threads "$THREADS" --dtypes f32 --steps 200 --max-seconds 10 --no-split |
        "$VENV/bin/python" -c "import json,sys; print(json.load(sys.stdin)['rows'][0]['steps_per_s'])")
    printf 'round %d: torch %8.2f steps/s   icl %8.2f steps/s\n' "$r" "$t" "$i"
    torch_rates+=("$t")
    icl_rates+=("$i")
done
"$VENV/bin/python" - "${torch_rates[*]}" "${icl_rates[*]}" "$LAYERS" "$THREADS" <<'PY'
import statistics, sys
t = [float(x) for x in sys.argv[1].split()]
i = [float(x) for x in sys.argv[2].split()]
T, th = int(sys.argv[3]), sys.argv[4]
mt, mi = statistics.median(t), statistics.median(i)
# forward per layer and head ~ 4 N L E + 8 N E^2 (N = L + 1, E = d + 1), backward ~ 2x forward
L, E, H, B = 120, 6, 2, 256
N = L + 1
flop = 3 * T * H * (4 * N * L * E + 8 * N * E * E) * B
print(f"multilayer T={T} H=2 d=5 L=120 batch 256 f32 threads={th}: torch {mt:.2f} steps/s, icl {mi:.2f} steps/s, ratio icl/torch = {mi / mt:.1f}x")
print(f"achieved: torch {flop * mt / 1e9:.1f} GFLOP/s, icl {flop * mi / 1e9:.1f} GFLOP/s; a 150k-step run: torch {150e3 / mt / 3600:.1f} h, icl {150e3 / mi / 3600:.2f} h")
PY
