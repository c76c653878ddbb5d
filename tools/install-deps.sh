#!/usr/bin/env bash
# Install the Debian packages hotcold builds and tests with (Debian 12).
# Needs root (or sudo).  Safe to run again: apt skips what is installed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config   # compiler and build
  check libjson-c-dev                # test framework; JSON for the golden files
  libpcre2-dev                        # regexes of the byte-level BPE pre-tokenizers (Unicode classes)
  libvulkan-dev mesa-vulkan-drivers vulkan-tools vulkan-validationlayers
  glslang-tools glslc spirv-tools     # Vulkan plugin and its shaders (lavapipe runs them on the CPU)
  hipcc libamdhip64-dev               # ROCm plugin (builds here, runs on AMD GPUs)
  clang libclang-rt-14-dev            # fuzzing and sanitizer runtimes
  valgrind hyperfine                  # measuring
)

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "install-deps: run as root (or install sudo) to install: ${packages[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi

echo "install-deps: installing ${#packages[@]} Debian packages (about a minute on a fresh machine)..." >&2
$SUDO apt-get update -qq
# --no-install-recommends keeps hipcc from pulling ~300 MB of llvm-dev.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: done" >&2
