#!/usr/bin/env bash
# icl-core on an emulated Cortex-M4F (STM32F405, QEMU netduinoplus2) against the host.
#
# 1. trains a checkpoint on the host with `icl train --preset quick` (the firmware embeds it);
# 2. builds the firmware and runs it under QEMU (-icount shift=0: one instruction per virtual ns);
# 3. runs `icl embedded` on the host: the same training and predictions by the same core code;
# 4. prints `device: {json}`, `host: {json}` and the verdict: the two lines must be equal as text,
#    and every number is printed in shortest round-trip form, so equal text is equal bits;
# 5. runs the same firmware with heaps of 2-24 KiB (QEMU's -append heap=N), which must print
#    `error: ...` and exit 1, not fault.
#
# Environment: ICL=path/to/icl (default: build it with `cargo build --locked -p icl-cli`),
# QEMU_TIMEOUT (seconds, default 120). Exit status 0 when device == host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
timeout_s="${QEMU_TIMEOUT:-120}"

command -v qemu-system-arm >/dev/null || {
  echo "run.sh: qemu-system-arm not found (apt-get install qemu-system-arm)" >&2
  exit 2
}

# the firmware must compute with the same versions of the core's numerical dependencies
for dep in libm nalgebra rand_xoshiro rand_core; do
  ws=$(grep -A1 "^name = \"$dep\"$" "$root/Cargo.lock" | grep -m1 '^version' || true)
  fw=$(grep -A1 "^name = \"$dep\"$" "$here/Cargo.lock" | grep -m1 '^version' || true)
  if [ "$ws" != "$fw" ]; then
    echo "run.sh: $dep is '$ws' in Cargo.lock but '$fw' in examples/firmware/Cargo.lock" >&2
    exit 1
  fi
done

if [ -z "${ICL:-}" ]; then
  (cd "$root" && cargo build --quiet --locked -p icl-cli)
  ICL="$root/target/debug/icl"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. the checkpoint, trained on the host
if ! "$ICL" train --preset quick --seed 7 --out "$work/run" >"$work/train.txt" 2>&1; then
  cat "$work/train.txt" >&2
  exit 1
fi
ckpt="$work/run/model.safetensors"

# 2. the firmware, under QEMU
(cd "$here" && ICL_CHECKPOINT="$ckpt" cargo build --quiet --locked --release)
elf="$here/target/thumbv7em-none-eabihf/release/icl-firmware"
qemu() {
  timeout "$timeout_s" qemu-system-arm -machine netduinoplus2 -nographic -monitor none \
    -semihosting-config enable=on,target=native -icount shift=0 -kernel "$elf" "$@"
}
set +e
qemu >"$work/device.txt" 2>&1
status=$?
set -e
if [ "$status" != 0 ]; then
  cat "$work/device.txt" >&2
  echo "verdict: FAIL (the firmware exited with status $status)" >&2
  exit 1
fi
device=$(sed -n 's/^result: //p' "$work/device.txt")
stats=$(sed -n 's/^stats: //p' "$work/device.txt")

# 3. the host
host=$("$ICL" embedded --checkpoint "$ckpt")

echo "device: $device"
echo "host: $host"
echo "device stats: $stats"
if command -v size >/dev/null; then
  echo "size (text = flash, bss = static RAM incl. the heap):"
  size "$elf" | sed 's/^/  /'
fi

# 5. heaps too small for the run: an error message and status 1, not a fault. Every heap from
#    2 KiB to 24 KiB in 2 KiB steps must fail cleanly; which allocation fails first depends on the
#    size, so the sweep must also see both kinds: a fallible allocation of the core (its error
#    naming the batch) and an infallible one (the panic handler's out-of-heap error).
fallible=0
infallible=0
for bytes in $(seq 2048 2048 24576); do
  set +e
  qemu -append "heap=$bytes" >"$work/small.txt" 2>&1
  code=$?
  set -e
  first=$(grep -m1 '^error: ' "$work/small.txt" || true)
  echo "$bytes B heap: $(echo "$first" | head -c 160) (status $code)"
  case "$first" in
    "error: shape mismatch: a batch of"*) fallible=$((fallible + 1)) ;;
    "error: out of heap: an allocation of"*) infallible=$((infallible + 1)) ;;
    *) first="" ;;
  esac
  if [ "$code" != 1 ] || [ -z "$first" ]; then
    cat "$work/small.txt" >&2
    echo "verdict: FAIL (a $bytes B heap must print 'error: ...' and exit with status 1)" >&2
    exit 1
  fi
done
if [ "$fallible" = 0 ] || [ "$infallible" = 0 ]; then
  echo "verdict: FAIL (the heap sweep saw $fallible fallible and $infallible infallible failures; both kinds must occur)" >&2
  exit 1
fi

# 4. the verdict
if [ -z "$device" ] || [ -z "$host" ]; then
  echo "verdict: FAIL (missing output)" >&2
  exit 1
fi
if [ "$device" == "$host" ]; then
  n=$(echo "$device" | grep -oE -- '-?[0-9]+\.[0-9]+(e-?[0-9]+)?' | wc -l)
  echo "verdict: PASS (device == host, bit for bit: the same text, $n floating-point numbers)"
else
  python3 - "$device" "$host" <<'EOF' >&2 || true
import json, sys
d, h = (json.loads(x) for x in sys.argv[1:3])
for k in d:
    if d[k] != h.get(k):
        print(f"first difference at {k}: device {d[k]} host {h.get(k)}")
        break
EOF
  echo "verdict: FAIL (device != host)" >&2
  exit 1
fi
