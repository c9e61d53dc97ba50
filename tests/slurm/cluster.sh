#!/usr/bin/env bash
# A throw-away one-node Slurm cluster on this machine, for testing `icl sweep slurm` against a real scheduler.
#
#   tests/slurm/cluster.sh start DIR   install slurm-wlm + munge if missing, write DIR/slurm.conf, start munged,
#                                      slurmctld and slurmd (all on loopback), wait until the node is idle
#   tests/slurm/cluster.sh stop DIR    stop the daemons started by `start`
#
# Clients find the cluster through SLURM_CONF=DIR/slurm.conf (printed by `start`). Nothing under /etc/slurm is touched;
# munge uses its default socket and a key generated on first use. Needs root (apt-get, daemons).
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: cluster.sh start|stop DIR}" && cd "$2" && pwd)

stop() {
  for p in slurmd slurmctld; do
    if [ -f "$dir/$p.pid" ]; then kill "$(cat "$dir/$p.pid")" 2>/dev/null || true; rm -f "$dir/$p.pid"; fi
  done
  if [ -f "$dir/munged.pid" ]; then kill "$(cat "$dir/munged.pid")" 2>/dev/null || true; rm -f "$dir/munged.pid"; fi
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: cluster.sh start|stop DIR" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

# munge: one key for the machine, the default socket.
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chmod 0400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
  # no munged answers: start one, and remember its pid to stop exactly it
  munged --force --pid-file="$dir/munged.pid.tmp"
  for _ in $(seq 1 50); do [ -s "$dir/munged.pid.tmp" ] && break; sleep 0.1; done
  mv "$dir/munged.pid.tmp" "$dir/munged.pid"
fi

node=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat > "$dir/slurm.conf" <<CONF
ClusterName=icltest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MaxArraySize=10001
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
stop_daemons_only() { for p in slurmd slurmctld; do [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true; done; }
stop_daemons_only
slurmctld -c -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N "$node"
for _ in $(seq 1 60); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n1 || true)
  case "$state" in idle*|mixed*|allocated*) echo "SLURM_CONF=$SLURM_CONF"; exit 0 ;; esac
  sleep 1
done
echo "slurm did not come up (node state: ${state:-none}); logs in $dir/log" >&2
exit 1
