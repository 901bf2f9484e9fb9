#!/usr/bin/env bash
# Installs what kiln needs, only what is missing. Idempotent and quiet when all is present.
#   scripts/setup.sh          build + test dependencies (Debian packages)
#   scripts/setup.sh python   also .venv with pinned PyTorch (CPU) + NumPy (scripts/setup_python.sh),
#                             the reference some tests compare against (make test)
#   scripts/setup.sh format   also clang-format (Debian 12's, version 14: make format, make format-check)
set -euo pipefail
cd "$(dirname "$0")/.."

# ocl-icd-opencl-dev: libdnnl-dev's CMake config finds OpenCL headers, a package it only recommends.
# python3 (standard library only): the layer check CTest runs (scripts/check_layers.py), and the build
# compiles the flash kernel's common variants with it where it finds NVRTC (scripts/precompile_flash.py).
# zlib1g-dev: import/zip.cpp inflates DEFLATE entries of zip archives and checks CRC-32s.
# pkg-config: tests/install builds a program against the installed kiln with kiln.pc.
packages=(g++ clang cmake ninja-build ccache make libfmt-dev libdnnl-dev ocl-icd-opencl-dev
          libgtest-dev libgmock-dev libbenchmark-dev libomp-dev python3 zlib1g-dev
          pkg-config)
python=0
for mode in "$@"; do
  case "$mode" in
    python) python=1
            packages+=(python3-venv python3-dev ca-certificates) ;;
    format) packages+=(clang-format) ;;
    *)      echo "setup: unknown mode '$mode' (expected: python, format)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ $python -eq 1 ]]; then
  scripts/setup_python.sh
fi
