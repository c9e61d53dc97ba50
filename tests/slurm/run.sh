#!/usr/bin/env bash
# `icl sweep slurm` against a real Slurm: start a throw-away one-node cluster (cluster.sh: slurm-wlm + munge on
# loopback), plan a small sweep twice, submit one copy as an sbatch --array job, run the other locally with
# `icl sweep run --jobs 2`, and check that the collected results (results.csv, results.json) and every run
# folder's model and metrics are the same bytes. Then `icl repro --slurm --submit` (a zhang2025 smoke claim: its run
# as an array, the report job after it) against a local `icl repro` of the same claim: the same claims and the same
# run bytes. Needs root (apt-get, daemons).
#
#   tests/slurm/run.sh            (ICL=path/to/icl to test another binary; default: target/debug/icl, built)
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
if [ -z "${ICL:-}" ]; then
  cargo build --locked -q -p icl-cli
  ICL=$PWD/target/debug/icl
fi
ICL=$(cd "$(dirname "$ICL")" && pwd)/$(basename "$ICL")
work=$(mktemp -d /tmp/icl-slurm-test.XXXXXX)
trap 'bash tests/slurm/cluster.sh stop "$work/cluster"' EXIT

echo "== cluster"
conf=$(bash tests/slurm/cluster.sh start "$work/cluster" | grep '^SLURM_CONF=')
export "${conf?}"
sinfo

echo "== icl repro --slurm --submit (runs while the sweep test goes on)"
"$ICL" repro zhang2025 --only fig1-final --slurm --submit --partition debug --time 20 --cpus-per-task 1 \
  --out "$work/repro-slurm" --json > "$work/repro-jobs.json"
cat "$work/repro-jobs.json"
rjobs=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["array_job"], j["report_job"])' "$work/repro-jobs.json")

echo "== plan"
cat > "$work/sweep.toml" <<'TOML'
preset = "quick"
seeds = [1, 2]
[set]
"train.steps" = 400
"train.batch" = 32
"train.log_every" = 50
[grid]
"model.heads" = [1, 2, 3]
TOML
"$ICL" sweep plan "$work/sweep.toml" --out "$work/slurm"
"$ICL" sweep plan "$work/sweep.toml" --out "$work/local"
n=$(wc -l < "$work/slurm/manifest.jsonl")

echo "== submit ($n array tasks)"
"$ICL" sweep slurm "$work/slurm" --partition debug --time 10 --cpus-per-task 1 --max-parallel 2 >/dev/null
cat "$work/slurm/slurm.sh"
job=$("$ICL" sweep slurm "$work/slurm" --partition debug --time 10 --cpus-per-task 1 --max-parallel 2 --submit)
echo "job $job"

echo "== local run (--jobs 2) while Slurm runs"
"$ICL" sweep run "$work/local" --jobs 2 --eval-samples 20000

echo "== wait for job $job"
for _ in $(seq 1 600); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 1
done
if [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; then
  squeue; echo "slurm test: job $job did not finish in 600 s" >&2; exit 1
fi
"$ICL" sweep status "$work/slurm"
for f in "$work"/slurm/slurm/*.out; do echo "-- $(basename "$f")"; cat "$f"; done

echo "== collect and compare"
"$ICL" sweep collect "$work/slurm" >/dev/null
"$ICL" sweep collect "$work/local" >/dev/null
cmp "$work/slurm/results.csv" "$work/local/results.csv"
cmp "$work/slurm/results.json" "$work/local/results.json"
runs=0
while read -r name; do
  for f in model.safetensors metrics.csv config.toml; do cmp "$work/slurm/$name/$f" "$work/local/$name/$f"; done
  runs=$((runs + 1))
done < <(sed 's/.*"name":"\([^"]*\)".*/\1/' "$work/slurm/manifest.jsonl")
[ "$runs" = "$n" ]
rows=$(($(wc -l < "$work/slurm/results.csv") - 1))
echo "sweep: ok: $n runs on Slurm = local, bit for bit ($rows result rows, $(sha256sum < "$work/slurm/results.csv" | cut -c1-16)); $(( $(date +%s) - start )) s"

echo "== local icl repro of the same claim"
"$ICL" repro zhang2025 --only fig1-final --out "$work/repro-local" --quiet >/dev/null
echo "== wait for jobs $rjobs"
for _ in $(seq 1 900); do
  busy=""
  for j in $rjobs; do [ -n "$(squeue -h -j "$j" 2>/dev/null)" ] && busy=1; done
  [ -z "$busy" ] && break
  sleep 1
done
for j in $rjobs; do
  if [ -n "$(squeue -h -j "$j" 2>/dev/null)" ]; then
    squeue; echo "slurm test: repro job $j did not finish" >&2; exit 1
  fi
done
for f in "$work"/repro-slurm/runs/slurm/*.out "$work"/repro-slurm/slurm/*.out; do echo "-- $(basename "$f")"; cat "$f"; done
[ -f "$work/repro-slurm/report.json" ] || { echo "slurm test: the report job wrote no report.json" >&2; exit 1; }
python3 - "$work/repro-slurm/report.json" "$work/repro-local/report.json" <<'PY'
import json, sys
s, l = (json.load(open(p)) for p in sys.argv[1:3])
assert s["claims"] == l["claims"], (s["claims"], l["claims"])
assert [r["name"] for r in s["runs"]] == [r["name"] for r in l["runs"]]
print("repro: the report job's claims equal the local ones:", [(c["id"], c["measured"], c["pass"]) for c in s["claims"]])
PY
for f in model.safetensors metrics.csv config.toml; do cmp "$work/repro-slurm/runs/fig1/$f" "$work/repro-local/runs/fig1/$f"; done
echo "slurm test: ok: sweep ($n runs) and repro --slurm on Slurm = local, bit for bit; $(( $(date +%s) - start )) s"
rm -rf "$work/slurm" "$work/local" "$work/repro-slurm" "$work/repro-local"
