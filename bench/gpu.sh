#!/usr/bin/env bash
# The device benchmark: training steps/s and GFLOP/s of the Vulkan engine against the SIMD engine on
# the same host, for the families the Vulkan engine runs, with the device's name. One `icl bench`
# per row (the engine alone: no start-up, no checkpoint), f32.
#
#   bench/gpu.sh [--quick] [--lavapipe]     measure (prints a table; --json prints the rows as JSON)
#   bench/gpu.sh --tests                    run the Vulkan test suites on this machine's device, one
#                                           binary at a time (10 minutes at most each): those --pack
#                                           put beside the script, else through cargo
#   bench/gpu.sh --pack DIR                 copy a stripped release icl, the Vulkan test binaries
#                                           (DIR/tests) and this script into DIR, to run on a GPU
#                                           machine as `DIR/gpu.sh --tests` and
#                                           `ICL_BIN=$PWD/DIR/icl DIR/gpu.sh --json` (about 55 MB)
#
#   --quick     fewer timed steps (the whole script in under 5 minutes on a GPU)
#   --lavapipe  sizes for Mesa's CPU driver (batch 32, shorter contexts, a few steps): the path is
#               exercised, the numbers mean nothing (CI runs it so)
#   env: ICL_BIN (default target/release/icl, built with `cargo build --release` when missing),
#        ICL_VULKAN_DEVICE, ICL_VULKAN_VALIDATION (passed to the engine)
#
# Rows: he2025 (one-layer, H=2, d=5, L=40, batch 256; the CPU makes the batches), he2025-law2 (the
# same under data law 2, whose batches the Vulkan engine makes on the device), multilayer-t3 (the multilayer paper's size:
# 3 looped layers, H=2, L=120, batch 256), iv-2stage (L=200, batch 256), and the GPT-2 presets
# garg-linear-tiny/-small (the Vulkan engine runs them op by op, llm.c's way). Then a 64-seed
# he2025 sweep (4 seeds with --lavapipe) under each data law, whole `icl sweep run` processes: on
# Vulkan its runs train as one pack, one call per step for all seeds, whose batches under law 2 the
# device makes (docs/sweeps.md); on the SIMD engine one run per core
# at a time. Steps/s there counts every seed's steps. Where the host's python3 (env TORCH_PY) has
# PyTorch with CUDA, the same rows run in PyTorch on that GPU too (bench/torch_reference.py,
# torch_multilayer.py, torch_gpt2.py with --device cuda: eager, batches drawn on the GPU), a column
# of their own; none of these with --lavapipe.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
QUICK=0
LAVAPIPE=0
JSON=0
TESTS=0
PACK=""
# the Vulkan test suites (tests/tests/vulkan_*.rs) --tests runs and --pack ships
VK_TESTS=(vulkan_conformance vulkan_agreement vulkan_packed vulkan_sampler vulkan_training vulkan_errors)
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) QUICK=1 ;;
    --lavapipe) LAVAPIPE=1 ;;
    --json) JSON=1 ;;
    --tests) TESTS=1 ;;
    --pack)
        PACK=${2:?--pack needs a folder}
        shift
        ;;
    -h | --help)
        sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "gpu.sh: unknown argument $1 (see --help)" >&2
        exit 2
        ;;
    esac
    shift
done

if [ "$TESTS" = 1 ]; then
    # each suite once, one at a time (they open the device themselves; a hung one is cut off)
    fail=0
    log=$(mktemp)
    for t in "${VK_TESTS[@]}"; do
        t0=$(date +%s)
        if [ -x "$here/tests/$t" ]; then
            timeout 600 "$here/tests/$t" --test-threads 2 >"$log" 2>&1 && rc=0 || rc=$?
        else
            timeout 600 cargo test --locked --release -q -p icl-tests --test "$t" -- --test-threads 2 >"$log" 2>&1 && rc=0 || rc=$?
        fi
        res=$(grep -E '^test result' "$log" | tail -1)
        if [ "$rc" = 0 ]; then
            echo "$t: ok in $(($(date +%s) - t0)) s ($res)"
        else
            fail=1
            echo "$t: FAILED (exit $rc$([ "$rc" = 124 ] && echo ': timed out'), $(($(date +%s) - t0)) s) $res"
            grep -E '^test .* FAILED|panicked|Err' "$log" | head -20
        fi
    done
    rm -f "$log"
    exit $fail
fi

if [ -z "${ICL_BIN:-}" ]; then
    if [ ! -x target/release/icl ] || [ -n "$PACK" ]; then
        cargo build --locked --release -q -p icl-cli
    fi
    ICL_BIN=target/release/icl
fi

if [ -n "$PACK" ]; then
    mkdir -p "$PACK"
    strip -o "$PACK/icl" "$ICL_BIN"
    cp "$0" "$PACK/gpu.sh"
    cp bench/torch_reference.py bench/torch_multilayer.py bench/torch_gpt2.py "$PACK/"
    mkdir -p "$PACK/tests"
    args=()
    for t in "${VK_TESTS[@]}"; do args+=(--test "$t"); done
    cargo test --locked --release --no-run --message-format=json -p icl-tests "${args[@]}" 2>/dev/null |
        python3 -c '
import json, sys
for line in sys.stdin:
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("executable") and d.get("target", {}).get("kind") == ["test"]:
        print(d["target"]["name"], d["executable"])' |
        while read -r name exe; do strip -o "$PACK/tests/$name" "$exe"; done
    for t in "${VK_TESTS[@]}"; do
        [ -x "$PACK/tests/$t" ] || {
            echo "gpu.sh: the test binary $t was not built" >&2
            exit 1
        }
    done
    echo "packed: $PACK/icl ($(($(stat -c %s "$PACK/icl") / 1048576)) MiB, stripped), $PACK/gpu.sh, the PyTorch scripts and ${#VK_TESTS[@]} Vulkan test binaries ($(($(du -sb "$PACK/tests" | cut -f1) / 1048576)) MiB)"
    echo "on the GPU machine: ./gpu.sh --tests, then ICL_BIN=\$PWD/icl ./gpu.sh [--quick] [--json]"
    exit 0
fi

# steps timed per row and the seconds cap (`icl bench` times at least 50 steps unless --steps is less)
if [ "$LAVAPIPE" = 1 ]; then
    STEPS=3
    SECS=0.5
    SIZE=(--set train.batch=32)
elif [ "$QUICK" = 1 ]; then
    STEPS=200
    SECS=5
    SIZE=()
else
    STEPS=2000
    SECS=20
    SIZE=()
fi
THREADS=$(nproc)

# row NAME PRESET HEADS [--set ...]: one line of JSON per engine
row() {
    local name=$1 preset=$2 heads=$3
    shift 3
    local out
    for engine in vulkan simd; do
        local threads=$THREADS
        [ "$engine" = vulkan ] && threads=1
        if out=$("$ICL_BIN" bench --engine "$engine" --preset "$preset" --heads "$heads" --dtypes f32 \
            --threads "$threads" --steps "$STEPS" --max-seconds "$SECS" --no-split --json \
            ${SIZE[@]+"${SIZE[@]}"} "$@" 2>"$tmp/err"); then
            printf '%s\t%s\t%s\n' "$name" "$engine" "$(echo "$out" | tr -d '\n')" >>"$tmp/rows"
        else
            printf '%s\t%s\t{"error": %s}\n' "$name" "$engine" \
                "$(python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))' <"$tmp/err")" >>"$tmp/rows"
        fi
    done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/rows"
if [ "$LAVAPIPE" = 1 ]; then
    row he2025 he2025 2
    row he2025-law2 he2025 2 --set task.data_law=2
    row multilayer-t3 multilayer-t3 2 --lens 20
    row iv-2stage iv-2stage 2 --lens 20
    row garg-linear-tiny garg-linear-tiny 2 --lens 10
else
    row he2025 he2025 2
    row he2025-law2 he2025 2 --set task.data_law=2
    row multilayer-t3 multilayer-t3 2
    row iv-2stage iv-2stage 2
    row garg-linear-tiny garg-linear-tiny 2
    row garg-linear-small garg-linear-small 4
fi

# PyTorch on the GPU: torch_row NAME SCRIPT [ARGS...], one line of JSON (none without CUDA)
TORCH_PY=${TORCH_PY:-python3}
: >"$tmp/torch"
torch_row() {
    local name=$1 script=$2
    shift 2
    local out
    if out=$("$TORCH_PY" "$here/$script" --device cuda --threads "$THREADS" "$@" 2>"$tmp/err"); then
        printf '%s\ttorch_cuda\t%s\n' "$name" "$out" >>"$tmp/torch"
    else
        printf '%s\ttorch_cuda\t{"error": %s}\n' "$name" \
            "$(python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))' <"$tmp/err")" >>"$tmp/torch"
    fi
}
if [ "$LAVAPIPE" = 0 ] && "$TORCH_PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    TSTEPS=$((STEPS / 2))
    torch_row he2025 torch_reference.py --heads 2 --d 5 --len 40 --batch 256 --steps "$TSTEPS"
    torch_row multilayer-t3 torch_multilayer.py --layers 3 --heads 2 --L 120 --batch 256 --steps "$TSTEPS"
    torch_row garg-linear-tiny torch_gpt2.py --size tiny --steps $((TSTEPS / 4))
    torch_row garg-linear-small torch_gpt2.py --size small --steps $((TSTEPS / 4))
fi

# the seed sweep: SEEDS runs of he2025, SWEEP_STEPS steps each, per engine (wall seconds of the process)
if [ "$LAVAPIPE" = 1 ]; then
    SEEDS=4
    SWEEP_STEPS=5
else
    SEEDS=64
    SWEEP_STEPS=$((STEPS / 4))
fi
# under data law 1 (the CPU samples every seed's batches) and law 2 (on Vulkan the pack's call
# makes them on the device, each seed from its own key)
: >"$tmp/sweep"
for law in 1 2; do
    python3 -c "print('preset = \"he2025\"'); print('seeds = ' + str(list(range(1, $SEEDS + 1)))); print('[set]'); print('\"train.steps\" = $SWEEP_STEPS'); print('\"train.log_every\" = 1000'); print('\"task.data_law\" = $law')" >"$tmp/sweep.toml"
    [ "$LAVAPIPE" = 1 ] && echo '"train.batch" = 32' >>"$tmp/sweep.toml"
    for engine in vulkan simd; do
        jobs=$THREADS
        [ "$engine" = vulkan ] && jobs=1
        "$ICL_BIN" sweep plan "$tmp/sweep.toml" --out "$tmp/sw-$law-$engine" >/dev/null 2>&1
        t0=$(date +%s.%N)
        if "$ICL_BIN" sweep run "$tmp/sw-$law-$engine" --engine "$engine" --jobs "$jobs" --eval-samples 0 \
            --checkpoint-minutes 0 --quiet 2>"$tmp/err"; then
            t1=$(date +%s.%N)
            printf '%s\t%s\t%s\n' "$law" "$engine" "$(python3 -c "print($SEEDS * $SWEEP_STEPS / ($t1 - $t0))")" >>"$tmp/sweep"
        else
            printf '%s\t%s\terror: %s\n' "$law" "$engine" "$(tail -1 "$tmp/err")" >>"$tmp/sweep"
        fi
    done
done

python3 - "$tmp/rows" "$JSON" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" "$tmp/sweep" "$SEEDS" "$SWEEP_STEPS" "$tmp/torch" <<'PY'
import json, sys
rows, as_json, cpu = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
table, device = {}, None
torch_rows = {}
for line in open(sys.argv[7]):
    name, _, doc = line.rstrip("\n").split("\t", 2)
    d = json.loads(doc)
    torch_rows[name] = ({"error": d["error"].splitlines()[-1] if d["error"] else "failed"} if "error" in d
                        else {"steps_per_s": d["steps_per_s"], "torch": d.get("torch")})
for line in open(rows):
    name, engine, doc = line.rstrip("\n").split("\t", 2)
    d = json.loads(doc)
    if "error" in d:
        table.setdefault(name, {})[engine] = {"error": d["error"].splitlines()[-1] if d["error"] else "failed"}
        continue
    r = d["rows"][0]
    if engine == "vulkan":
        device = device or (d.get("vulkan_predict") or d.get("vulkan_device") or {}).get("device")
    table.setdefault(name, {})[engine] = {
        "steps_per_s": r["steps_per_s"], "gflops": r["gflops"], "len": r["len"], "batch": r["batch"],
        "threads": r["threads"], "level": r.get("simd_level"),
    }
for name, t in torch_rows.items():
    table.setdefault(name, {})["torch_cuda"] = t
sweeps = {law: {"seeds": int(sys.argv[5]), "steps_per_run": int(sys.argv[6])} for law in ("1", "2")}
for line in open(sys.argv[4]):
    law, engine, v = line.rstrip("\n").split("\t", 2)
    sweeps[law][engine] = v if v.startswith("error") else {"steps_per_s": float(v)}
if as_json:
    print(json.dumps({"device": device, "host_cpu": cpu, "rows": table, "he2025_seed_sweep": sweeps["1"],
                      "he2025_law2_seed_sweep": sweeps["2"]}, indent=2))
if not as_json:
    print(f"device: {device or 'none (the Vulkan engine did not start)'}; host: {cpu}")
    print(f"{'model':18} {'L':>4} {'batch':>5} {'vulkan steps/s':>15} {'GFLOP/s':>8} {'simd steps/s':>13} {'GFLOP/s':>8} {'vulkan/simd':>11}")
    for name, e in table.items():
        v, s = e.get("vulkan", {}), e.get("simd", {})
        if "error" in v:
            print(f"{name:18} vulkan: {v['error']}")
            if "steps_per_s" in s:
                print(f"{'':18} simd: {s['steps_per_s']:.1f} steps/s, {s['gflops']:.1f} GFLOP/s ({s['threads']} threads, {s['level']})")
            continue
        if "error" in s:
            print(f"{name:18} simd: {s['error']}")
            continue
        t = e.get("torch_cuda")
        torch_col = ("" if t is None else f"   torch cuda: {t['error']}" if "error" in t
                     else f"   torch cuda {t['steps_per_s']:.1f} steps/s (vulkan/torch {v['steps_per_s'] / t['steps_per_s']:.2f}x)")
        print(f"{name:18} {v['len']:>4} {v['batch']:>5} {v['steps_per_s']:>15.1f} {v['gflops']:>8.2f} "
              f"{s['steps_per_s']:>13.1f} {s['gflops']:>8.2f} {v['steps_per_s'] / s['steps_per_s']:>10.2f}x{torch_col}")
    for law, sweep in sweeps.items():
        sv, ss = sweep.get("vulkan"), sweep.get("simd")
        text = lambda e: e if isinstance(e, str) else f"{e['steps_per_s']:.1f} steps/s"
        ratio = (f", vulkan/simd {sv['steps_per_s'] / ss['steps_per_s']:.2f}x"
                 if isinstance(sv, dict) and isinstance(ss, dict) else "")
        print(f"he2025 sweep, law {law}, {sweep['seeds']} seeds x {sweep['steps_per_run']} steps (whole process, "
              f"every seed's steps): vulkan (one pack) {text(sv)}, simd (one run per core) {text(ss)}{ratio}")
# every engine runs every row (GPT-2 too, since the Vulkan engine has it): any failed row fails
# the script (CI)
bad = [f"{n} ({e})" for n, es in table.items() for e, r in es.items() if "error" in r and e != "torch_cuda"]
bad += [f"law-{law} sweep ({e})" for law, sw in sweeps.items() for e in ("vulkan", "simd")
        if isinstance(sw.get(e), str)]
if bad:
    print(f"gpu.sh: failed rows: {', '.join(bad)}", file=sys.stderr)
    sys.exit(1)
PY
