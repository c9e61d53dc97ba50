#!/usr/bin/env bash
# Side-by-side training throughput of icl and PyTorch on Garg et al.'s GPT-2 (d = 20, L = 40,
# batch 64, Adam, no curriculum, the loss at every position), run alternately ROUNDS times per
# size; prints the median steps/s of each, the ratio, and icl's GFLOP/s (the FLOP count of
# `icl bench`).
#
#   bench/compare_gpt2.sh [ROUNDS] [THREADS] [SIZES]     (defaults: 3 2 "tiny small")
#   env: TORCH_STEPS (30), ICL_STEPS (200), ICL_BIN
#
# PyTorch: eager, transformers' GPT2Model inside Garg et al.'s TransformerModel
# (bench/torch_gpt2.py), from PyPI into bench/.venv-torch on first use (tests never need it).
# icl: the whole `icl train --preset garg-linear-SIZE` process, timed from outside. The machine's
# load average is printed with the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
THREADS=${2:-2}
SIZES=${3:-"tiny small"}
TORCH_STEPS=${TORCH_STEPS:-30}
ICL_STEPS=${ICL_STEPS:-200}
PY=bench/.venv-torch/bin/python
if [ ! -x "$PY" ] || ! "$PY" -c "import torch, transformers" 2>/dev/null; then
    python3 -m venv bench/.venv-torch
    bench/.venv-torch/bin/pip install -q --upgrade pip
    bench/.venv-torch/bin/pip install -q torch transformers numpy
fi
if [ -z "${ICL_BIN:-}" ]; then
    cargo build --locked --release -q -p icl-cli
    ICL_BIN=target/release/icl
fi
json() { "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for size in $SIZES; do
    preset=garg-linear-$size
    flops=$("$ICL_BIN" bench --json --preset "$preset" --threads "$THREADS" --dtypes f32 --steps 3 --max-seconds 1 --no-split |
        "$PY" -c "import json,sys; r=json.load(sys.stdin)['rows'][0]; print(r['gflops'] * 1e9 / r['steps_per_s'])")
    t_rates=() i_rates=()
    for r in $(seq "$ROUNDS"); do
        t=$("$PY" bench/torch_gpt2.py --size "$size" --threads "$THREADS" --steps "$TORCH_STEPS" 2>/dev/null | json steps_per_s)
        t0=$(date +%s.%N)
        RAYON_NUM_THREADS=$THREADS "$ICL_BIN" train --preset "$preset" --set task.curriculum=false \
            --steps "$ICL_STEPS" --eval-samples 0 --out "$tmp/run" --force -q >/dev/null
        t1=$(date +%s.%N)
        i=$("$PY" -c "print($ICL_STEPS / ($t1 - $t0))")
        printf '%s round %d (load %s): torch %7.2f   icl %7.2f steps/s\n' "$size" "$r" "$(cut -d' ' -f1 /proc/loadavg)" "$t" "$i"
        t_rates+=("$t")
        i_rates+=("$i")
    done
    "$PY" - "${t_rates[*]}" "${i_rates[*]}" "$size" "$THREADS" "$flops" <<'PY'
import statistics, sys
t, i = ([float(x) for x in a.split()] for a in sys.argv[1:3])
size, th, flops = sys.argv[3], sys.argv[4], float(sys.argv[5])
mt, mi = statistics.median(t), statistics.median(i)
print(f"garg-linear-{size} threads={th}: torch {mt:.2f}, icl {mi:.2f} steps/s (medians); icl/torch = {mi / mt:.1f}x; "
      f"icl {mi * flops / 1e9:.1f} GFLOP/s, torch {mt * flops / 1e9:.1f} GFLOP/s ({flops / 1e9:.2f} GFLOP a step)")
PY
done
