// The CUDA GEMMs (kernels/cuda/matmul.cpp) against the CPU's, on the GPU machine (`make test-gpu`;
// KILN_REQUIRE_GPU=1 makes a missing GPU a failure): layouts (transposed views, a batch broadcast,
// single rows and columns), dtypes, addmm's bias row and its beta and alpha, an empty inner dim.
#include <gtest/gtest.h>

#include <cstdlib>

#include <fmt/format.h>

#include "device_tensors.h"
#include "kiln/core/device_hooks.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

const Device kCuda{DeviceType::CUDA, 0};

TEST(CudaGemm, MatchesTheCpuOnEveryLayout) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(11);
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 48, 80}, {1, 300, 7}, {129, 1, 65}, {5, 9, 1}}) {
    SCOPED_TRACE(fmt::format("{}x{}x{}", m, k, n));
    Tensor a = randn({m, k}), b = randn({k, n}), at = randn({k, m}).t(), bt = randn({n, k}).t();
    expect_close(mm(a.to(kCuda), b.to(kCuda)), mm(a, b), 1e-5, 1e-5);
    expect_close(mm(at.to(kCuda).t().t(), bt.to(kCuda)), mm(at, bt), 1e-5, 1e-5);
    Tensor ga = at.t().contiguous().to(kCuda).t();  // at's layout on the device: a transposed view
    expect_close(mm(ga, b.to(kCuda)), mm(at, b), 1e-5, 1e-5);
  }
  Tensor x = randn({4, 30, 20}), y = randn({4, 20, 10});
  expect_close(bmm(x.to(kCuda), y.to(kCuda)), bmm(x, y), 1e-5, 1e-5);
  Tensor yt = y.transpose(1, 2).contiguous().to(kCuda).transpose(1, 2);  // y's values, each matrix transposed in memory
  expect_close(bmm(x.to(kCuda), yt), bmm(x, y), 1e-5, 1e-5);
  Tensor strided = x.to(kCuda).slice(2, 0, 20, 2);  // no unit stride in the last two dims: copied dense first
  expect_close(bmm(strided, y.slice(1, 0, 10).to(kCuda)), bmm(x.slice(2, 0, 20, 2), y.slice(1, 0, 10)), 1e-5, 1e-5);
  Tensor y0 = randn({1, 20, 10});
  expect_close(bmm(x.to(kCuda), y0.to(kCuda).expand({4, 20, 10})), bmm(x, y0.expand({4, 20, 10})), 1e-5, 1e-5);
}

TEST(CudaGemm, DtypesAndAddmm) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(12);
  Tensor a = randn({33, 70}), b = randn({70, 45}), row = randn({45}), full_bias = randn({33, 45});
  for (DType d : {DType::Float64, DType::BFloat16, DType::Float16}) {
    double tol = d == DType::Float64 ? 1e-12 : 2e-2;
    expect_close(mm(a.to(d).to(kCuda), b.to(d).to(kCuda)), mm(a.to(d), b.to(d)), tol, tol);
    if (d == DType::Float64) continue;
    // Float32 results of the 16-bit inputs, as the CPU's product of them converted.
    expect_close(mm(a.to(d).to(kCuda), b.to(d).to(kCuda), DType::Float32),
                 mm(a.to(d).to(DType::Float32), b.to(d).to(DType::Float32)), 1e-5, 1e-5);
  }
  expect_close(addmm(row.to(kCuda), a.to(kCuda), b.to(kCuda)), addmm(row, a, b), 1e-5, 1e-5);  // bias epilogue
  expect_close(addmm(full_bias.to(kCuda), a.to(kCuda), b.to(kCuda), 0.5, 2), addmm(full_bias, a, b, 0.5, 2), 1e-5,
               1e-5);
  expect_close(addmm(row.to(kCuda), a.to(kCuda), b.to(kCuda), 0, 3), addmm(row, a, b, 0, 3), 1e-5, 1e-5);
  Tensor empty_a = randn({6, 0}), empty_b = randn({0, 45}), six = randn({6, 45});
  expect_close(mm(empty_a.to(kCuda), empty_b.to(kCuda)), mm(empty_a, empty_b), 0, 0);
  expect_close(addmm(six.to(kCuda), empty_a.to(kCuda), empty_b.to(kCuda), 2, 1), addmm(six, empty_a, empty_b, 2, 1), 0,
               0);
}

// Each GEMM configuration's algorithm is chosen once (the fastest of cuBLASLt's first answers, timed
// at the first run) and kept: the same call gives the same bits; the timing runs, which write D
// again and again, leave a first result right, and never run where D is also an input (beta != 0).
TEST(CudaGemm, TheAlgorithmChosenAtTheFirstRunIsKept) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(12);
  Tensor a = randn({384, 1000}).to(DType::BFloat16), b = randn({1000, 640}).to(DType::BFloat16);
  Tensor first = mm(a.to(kCuda), b.to(kCuda)).cpu();
  expect_close(first, mm(a, b), 1e-2, 1e-2);
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(fmt::format("call {}", call));
    expect_close(mm(a.to(kCuda), b.to(kCuda)).cpu(), first, 0, 0);
  }
  // A configuration first seen with beta != 0 (D holds C): one run, accumulated once.
  Tensor c = randn({384, 640}), fa = a.to(DType::Float32), fb = b.to(DType::Float32);
  expect_close(addmm(c.to(kCuda), fa.to(kCuda), fb.to(kCuda), 0.5, 2), addmm(c, fa, fb, 0.5, 2), 1e-4, 1e-4);
}

TEST(CudaGemm, IntegerTensorsAreATypeError) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Tensor a = ones({3, 3}, TensorOptions(DType::Int64)).to(kCuda);
  try {
    (void)mm(a, a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA GEMMs take float32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
