#!/usr/bin/env bash
# Packs what `make test-gpu` runs for a GPU host with no package manager for kiln's dependencies (the
# device tool's machine): the test binaries that use a GPU, the `kiln` command, libkiln.so and the
# shared libraries a stock Ubuntu lacks (fmt, oneDNN, OpenCL's loader), into one .tar.xz (the device
# tool carries at most 64 MiB).
#
#   scripts/gpu_bundle.sh OUT.tar.xz [BUILD]
# On the GPU host, from a copy of the source tree:
#   mkdir -p /tmp/kg && tar xJf OUT.tar.xz -C /tmp/kg && scripts/test_gpu.sh /tmp/kg
set -euo pipefail
out=$1
build=${2:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/build/tests" "$work/lib"
cp "$build/tests/kiln_cuda_test" "$build/tests/kiln_kernels_test" "$build/tests/kiln_compiler_test" \
  "$build/tests/kiln_api_test" "$build/tests/kiln_differential_test" "$build/tests/kiln_op_harness_test" \
  "$work/build/tests/"
cp "$build/kiln" "$work/build/"
mkdir -p "$work/build/bench"
cp "$build/bench/kiln_gpu_bench" "$work/build/bench/"  # make bench-gpu's kiln side
cp "$build/bench/kiln_attention_gpu_probe" "$work/build/bench/"  # the attention kernel's shapes
source "$(dirname "$0")/bundle_lib.sh"
pack_bundle "$out" "$work" "$build"
