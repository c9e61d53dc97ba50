#!/usr/bin/env bash
# Side-by-side throughput of icl, PyTorch and JAX on this machine, he2025 recipe (H=2, d=5, L=40,
# batch 256, Adam 1e-3, fresh data each step), run alternately ROUNDS times; prints the median
# steps/s of each and the ratios.
#
#   bench/compare.sh [ROUNDS] [THREADS] [DTYPE]      (defaults: 3 2 f32)
#   env: HEADS (2), ICL_STEPS (100000), TORCH_STEPS (1000), JAX_STEPS (2000), ICL_BIN,
#        DATA_LAW (1: icl's `task.data_law`, 1 or 2)
#
# icl: the whole process of `icl train` for ICL_STEPS steps (start-up, training, checkpoint,
# final risk skipped), timed from outside, at the vector level the binary picks (ICL_SIMD forces
# one). PyTorch: eager (bench/torch_reference.py). JAX: jit + lax.scan with the data generated
# inside the compiled loop (bench/jax_reference.py). The Python frameworks are installed from
# PyPI into their own venvs on first use (bench/.venv-torch, bench/.venv-jax; tests never need
# them). icl is the plain `cargo build --release` binary unless ICL_BIN points at another.
# The machine's load average is printed with the numbers: on a shared machine they vary. The
# summary names the CPU model and the vector level icl ran at beside the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
THREADS=${2:-2}
DTYPE=${3:-f32}
HEADS=${HEADS:-2}
ICL_STEPS=${ICL_STEPS:-100000}
TORCH_STEPS=${TORCH_STEPS:-1000}
JAX_STEPS=${JAX_STEPS:-2000}
DATA_LAW=${DATA_LAW:-1}
venv() { # venv DIR MODULE PACKAGES...
    local dir=$1 module=$2
    shift 2
    if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import $module" 2>/dev/null; then
        python3 -m venv "$dir"
        "$dir/bin/pip" install -q --upgrade pip
        "$dir/bin/pip" install -q "$@"
    fi
}
venv bench/.venv-torch torch torch numpy
venv bench/.venv-jax jax jax numpy
if [ -z "${ICL_BIN:-}" ]; then
    cargo build --locked --release -q -p icl-cli
    ICL_BIN=target/release/icl
fi
PY=bench/.venv-torch/bin/python
json() { "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
level=$("$ICL_BIN" bench --json --heads "$HEADS" --threads 1 --dtypes "$DTYPE" --steps 50 --max-seconds 0.1 --no-split |
    "$PY" -c "import json,sys; print(json.load(sys.stdin)['rows'][0]['simd_level'])")
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
torch_rates=()
jax_rates=()
icl_rates=()
for r in $(seq "$ROUNDS"); do
    t=$("$PY" bench/torch_reference.py --heads "$HEADS" --threads "$THREADS" --dtype "$DTYPE" --steps "$TORCH_STEPS" 2>/dev/null | json steps_per_s)
    j=$(bench/.venv-jax/bin/python bench/jax_reference.py --heads "$HEADS" --threads "$THREADS" --dtype "$DTYPE" --steps "$JAX_STEPS" 2>/dev/null | json steps_per_s)
    t0=$(date +%s.%N)
    RAYON_NUM_THREADS=$THREADS "$ICL_BIN" train --preset he2025 --set model.heads="$HEADS" --set train.dtype="$DTYPE" \
        --set task.data_law="$DATA_LAW" --steps "$ICL_STEPS" --eval-samples 0 --out "$tmp/run" --force -q >/dev/null
    t1=$(date +%s.%N)
    i=$("$PY" -c "print($ICL_STEPS / ($t1 - $t0))")
    printf 'round %d (load %s): torch %8.1f   jax %8.1f   icl %9.1f steps/s\n' "$r" "$(cut -d' ' -f1 /proc/loadavg)" "$t" "$j" "$i"
    torch_rates+=("$t")
    jax_rates+=("$j")
    icl_rates+=("$i")
done
"$PY" - "${torch_rates[*]}" "${jax_rates[*]}" "${icl_rates[*]}" "$HEADS" "$THREADS" "$DTYPE" "$level" "$cpu" "$DATA_LAW" <<'PY'
import statistics, sys
t, j, i = ([float(x) for x in a.split()] for a in sys.argv[1:4])
mt, mj, mi = statistics.median(t), statistics.median(j), statistics.median(i)
h, th, dt, lv, cpu, law = sys.argv[4:10]
print(f"he2025 H={h} {dt} threads={th}: torch {mt:.1f}, jax {mj:.1f}, icl ({lv}, data law {law}) {mi:.1f} steps/s (medians)")
print(f"ratios on {cpu}, {lv}: icl/torch = {mi / mt:.1f}x, icl/jax = {mi / mj:.1f}x, jax/torch = {mj / mt:.1f}x")
print(f"a 5e5-step run: torch {5e5 / mt / 60:.1f} min, jax {5e5 / mj / 60:.1f} min, icl {5e5 / mi:.1f} s")
PY
