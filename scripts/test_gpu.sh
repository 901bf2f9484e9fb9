#!/usr/bin/env bash
# The GPU tests (`make test-gpu`): the CUDA layer on a real device (KILN_REQUIRE_GPU=1 makes a missing
# GPU a failure), the device hooks, `kiln --version` naming the driver and devices, compiled graphs
# on CUDA tensors (generated CUDA kernels against eager CPU results), the op harness's compiled
# ops on the GPU (KILN_HARNESS_DEVICE=cuda), the differential corpus and the fast slice of random
# programs compiled for the GPU (against kiln eager, float64 and, where python3 has PyTorch,
# PyTorch), KILN_CUDA_PROFILE's report, and compute-sanitizer's memcheck and racecheck over the
# compiled graphs' kernels and the flash attention kernel (when the toolkit's compute-sanitizer is
# there).
#
#   scripts/test_gpu.sh [ROOT]   ROOT: a build's parent (default .: ./build), or an unpacked
#                                scripts/gpu_bundle.sh (ROOT/build and ROOT/lib)
set -euo pipefail
root=${1:-.}
# A bundle's binaries were built elsewhere: generated code includes the headers of this source tree.
if [[ -d "$root/lib" ]]; then
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export KILN_INCLUDE_DIR=${KILN_INCLUDE_DIR:-$(pwd)/src}
fi
export KILN_REQUIRE_GPU=1
"$root/build/kiln" --version
"$root/build/tests/kiln_cuda_test"
"$root/build/tests/kiln_kernels_test" --gtest_filter='CudaDevice.*:CudaGemm.*:CudaAttention.*:FakeDevice.*:NoDevice.*'
"$root/build/tests/kiln_compiler_test" --gtest_filter='CudaCodegen.*:Dialect.*'
"$root/build/tests/kiln_api_test" --gtest_filter='CompiledCuda.*'
KILN_HARNESS_DEVICE=cuda "$root/build/tests/kiln_op_harness_test" --gtest_filter='CompiledHarness.*'
KILN_DIFFTEST_DEVICE=cuda "$root/build/tests/kiln_differential_test" --gtest_filter='Differential.*'
# KILN_CUDA_PROFILE=1 (cuda/profile.h): a compiled model on the GPU reports each kernel's device time at exit.
fixtures=tests/models/fixtures
profile=$(KILN_CUDA_PROFILE=1 "$root/build/kiln" run $fixtures/mlp.pt2 --input x=$fixtures/mlp/input_0.npy --compile \
  --device cuda --repeat 3 2>&1)
for want in "KILN_CUDA_PROFILE: " "cublasLt gemm m=" "mean us"; do
  grep -qF "$want" <<<"$profile" || { echo "test_gpu.sh: KILN_CUDA_PROFILE printed no '$want':"; echo "$profile"; exit 1; }
done
echo "$profile" | tail -8
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -x "$sanitizer" ]]; then
  for tool in memcheck racecheck; do
    "$sanitizer" --tool "$tool" --error-exitcode 1 --target-processes all \
      "$root/build/tests/kiln_api_test" --gtest_filter='CompiledCuda.*'
    "$sanitizer" --tool "$tool" --error-exitcode 1 --target-processes all \
      "$root/build/tests/kiln_kernels_test" --gtest_filter='CudaAttention.*'
  done
else
  echo "test_gpu.sh: no compute-sanitizer (CUDA toolkit); the sanitizer runs were skipped" >&2
fi
