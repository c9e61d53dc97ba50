#!/usr/bin/env bash
# Vulkan for the icl-gpu-vulkan tests on a machine without a GPU: the Vulkan loader, Mesa's software
# driver lavapipe (mesa-vulkan-drivers) and, where Debian has them, the Khronos validation layers
# (the tests fail on any validation error; in CI they require the layer).
# Called by .ci/run; safe to run again. Needs root or sudo, and apt.
set -euo pipefail
if ! command -v apt-get >/dev/null 2>&1; then
  echo "vulkan-setup: no apt-get; install a Vulkan loader and driver (e.g. Mesa lavapipe) by hand" >&2
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
pkgs="libvulkan1 mesa-vulkan-drivers"
if ! dpkg -s $pkgs >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi
if apt-cache show vulkan-validationlayers >/dev/null 2>&1; then
  dpkg -s vulkan-validationlayers >/dev/null 2>&1 ||
    $SUDO apt-get install -y -qq --no-install-recommends vulkan-validationlayers >/dev/null
else
  echo "vulkan-setup: Debian has no vulkan-validationlayers here; tests run without the validation layer" >&2
fi
# Report what the loader sees (lavapipe lists as 'llvmpipe').
for f in /usr/share/vulkan/icd.d/*.json; do
  [ -e "$f" ] && echo "vulkan-setup: ICD $(basename "$f")"
done
ls /usr/share/vulkan/explicit_layer.d/ 2>/dev/null | sed 's/^/vulkan-setup: layer /' || true
