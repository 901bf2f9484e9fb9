#!/usr/bin/env bash
# Installs the Debian packages kiln needs, only those missing. Idempotent and quiet when all is present.
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh bench    also the benchmark peer (Debian's PyTorch)
set -euo pipefail

# ocl-icd-opencl-dev: libdnnl-dev's CMake config finds OpenCL headers, a package it only recommends.
packages=(g++ clang cmake ninja-build ccache make libfmt-dev libdnnl-dev ocl-icd-opencl-dev
          libgtest-dev libgmock-dev libbenchmark-dev libomp-dev)
if [[ "${1:-}" == "bench" ]]; then
  packages+=(python3 python3-torch python3-numpy libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
