#!/usr/bin/env bash
# Packs the compiled suite's kiln side for a host with PyTorch, a C++ compiler and no package
# manager for kiln's own dependencies (the GPU machine's 16-core host): kiln_compiled_bench,
# kiln_eager_bench and kiln_blas_probe (for bench/probes/gemm_probe.py), libkiln.so and the shared libraries they need that a stock Ubuntu lacks (fmt, oneDNN, OpenCL's
# loader), into one .tar.xz (the device tool carries at most 64 MiB).
#
#   bench/device_bundle.sh OUT.tar.xz [BUILD]
# On the host, from a copy of the source tree (generated kernels include its src/ headers):
#   mkdir -p /tmp/dc && tar xJf OUT.tar.xz -C /tmp/dc
#   LD_LIBRARY_PATH=/tmp/dc/lib KILN_INCLUDE_DIR=$PWD/src \
#     python3 bench/run_compiled.py --python python3 --build /tmp/dc/build ...
# (/tmp: a later call of the device tool re-syncs the tree and removes ignored folders it was not
# asked to carry.)
set -euo pipefail
out=$1
build=${2:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/bench"
cp "$build/bench/kiln_compiled_bench" "$build/bench/kiln_eager_bench" "$build/bench/kiln_blas_probe" "$work/build/bench/"
source "$(dirname "$0")/../scripts/bundle_lib.sh"
pack_bundle "$out" "$work" "$build"
