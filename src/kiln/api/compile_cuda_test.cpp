// kiln::compile on CUDA tensors: the CUDA target's generated kernels (codegen/cuda/cuda.h) against
// eager CPU results of the same function, on the GPU machine (`make test-gpu`; KILN_REQUIRE_GPU=1
// makes a missing GPU a failure). Without a GPU each test is skipped; the generator's code is
// compiled with NVRTC there by compiler/codegen/cuda/cuda_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "device_tensors.h"
#include "kiln/api/compile.h"
#include "kiln/core/device_hooks.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

const Device kCuda{DeviceType::CUDA, 0};

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Compiles `fn` for the GPU, runs it on `inputs` moved there, and compares with eager on the CPU.
void expect_matches_eager(const Fn& fn, const std::vector<Tensor>& inputs, double rtol, double atol) {
  std::vector<Tensor> on_gpu;
  for (const auto& t : inputs) on_gpu.push_back(t.to(kCuda));
  std::vector<Tensor> want = fn(inputs);
  std::vector<Tensor> got = compile(fn)(on_gpu);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].device(), kCuda) << "output " << i;
    expect_close(got[i].cpu(), want[i], rtol, atol, "output " + std::to_string(i));
  }
}

TEST(CompiledCuda, PointwiseChainsMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(3);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor g = gelu(x, "tanh") * exp(x) + tanh(x) / (x * x + 1);
    return std::vector<Tensor>{g, sigmoid(in[1].t()) + 2, cat(std::vector<Tensor>{x, g}, 1),
                               where(gt(x, 0), x, in[1].t())};
  };
  expect_matches_eager(fn, {randn({257, 1000}), randn({1000, 257})}, 1e-5, 1e-6);
  // Rows read at (row // 2) * 6 (a view repeating rows): elements one by one, no misaligned vector.
  Fn repeated = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mul(in[0].slice(1, 0, 4).unsqueeze(1).expand({3, 2, 4}), 2.0)};
  };
  expect_matches_eager(repeated, {randn({3, 6})}, 0, 0);
  expect_matches_eager(fn, {randn({0, 3}), randn({3, 0})}, 0, 0);
  expect_matches_eager(fn, {randn({1, 1}), randn({1, 1})}, 1e-5, 1e-6);
}

TEST(CompiledCuda, SixteenBitFloatsRoundAsEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(4);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor h = in[0].to(DType::BFloat16), f = in[0].to(DType::Float16);
    return std::vector<Tensor>{mul(h, h) + h, sub(f, 1.5) * f, softmax(h, -1)};
  };
  // Compiled code keeps a 16-bit chain in float32 and rounds once (as torch.compile does by
  // default); eager rounds after each op: an ulp or two apart where a product cancels.
  expect_matches_eager(fn, {randn({64, 333})}, 2e-2, 0.15);
}

TEST(CompiledCuda, RowReductionsMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(5);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor rms = x * rsqrt(mean(x * x, {1}, true) + 1e-6);
    return std::vector<Tensor>{
        softmax(x, -1), layer_norm(x, {x.size(1)}, in[1], in[2], 1e-5), rms, amax(x, {1}), sum(x, {1}), mean(x)};
  };
  for (int64_t cols : {1, 31, 1000, 4096, 5000}) {
    SCOPED_TRACE(cols);
    expect_matches_eager(fn, {randn({37, cols}), randn({cols}), randn({cols})}, 1e-4, 1e-5);
  }
}

// Sums of rows kept in registers add each thread's floats in a float partial first
// (Target::float_partials): where that overflows (values near float's largest, of opposite signs),
// the thread adds its values again in double, so the sums keep double's range (a float accumulator,
// as eager's and PyTorch's, would give inf or NaN here), in the first pass of a row and in a later
// one that reads the row from registers after a reduction (x gated by its row's max, summed).
TEST(CompiledCuda, RowSumsPastFloatRangeAddInDouble) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
    // A second pass of one row kernel (after amax's block reduction), beside a stored output.
    Tensor gated = mul(in[0], gt(amax(in[0], {1}, true), 0));
    return std::vector<Tensor>{sum(in[0], {1}), mean(in[0], {1}), m, sum(gated, {1}), mul(in[0], 0.5)};
  };
  const float big = 3e38f;
  for (int64_t cols : {64, 2048, 4096}) {
    SCOPED_TRACE(cols);
    // Row 0: +big, +big, -big, -big, ... (each thread's four consecutive values overflow a float
    // partial; the sum is 0); row 1: the same with big / 2 first (the sum is -big / 2); row 2:
    // alternating signs; row 3: ones.
    std::vector<float> values;
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        float pairs = c % 4 < 2 ? big : -big;
        values.push_back(r == 0 ? pairs : r == 1 ? (c == 0 ? big / 2 : pairs) : r == 2 ? (c % 2 ? big : -big) : 1.0f);
      }
    }
    Tensor x = from_vector(values, {4, cols});
    std::vector<Tensor> want = fn({x.to(DType::Float64)});
    std::vector<Tensor> got = compile(fn)({x.to(kCuda)});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(got[i].cpu(), want[i].to(DType::Float32), 1e-6, 0, "output " + std::to_string(i));
  }
}

// A full reduction, and rows too few to fill the GPU, are split among blocks (two-stage): the last
// block of a row combines the partials and zeroes the row's arrival count, so a second call of the
// same compiled function gives the same results.
TEST(CompiledCuda, FullReductionsSplitAmongBlocks) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(9);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0], rows = in[1];
    return std::vector<Tensor>{sum(x),
                               mean(x),
                               amax(x),
                               sum(x.to(DType::Int32)),
                               sum(rows, {1}),
                               amin(rows, {1}),
                               mean(rows.to(DType::BFloat16), {1})};
  };
  std::vector<Tensor> inputs = {mul(randn({1 << 22}), 10.0), randn({3, 300001})};
  std::vector<Tensor> want = fn(inputs);
  auto compiled = compile(fn);
  std::vector<Tensor> on_gpu = {inputs[0].to(kCuda), inputs[1].to(kCuda)};
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = compiled(on_gpu);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      expect_close(got[i].cpu(), want[i], i == 6 ? 1e-2 : 1e-5, i == 6 ? 1e-2 : 1e-2,
                   "call " + std::to_string(call) + " output " + std::to_string(i));
    }
  }
}

// Values of each row from its reductions, computed once per row by the row kernel (Kernel::per_row):
// var's last step, a sum scaled by a value per row from outside, the square of that, a keepdim max
// read again by the row's elements; in a warp per row, a block per row in registers or read again,
// and a total split among blocks (its epilogue in the last block to arrive).
TEST(CompiledCuda, ValuesOfEachRowMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(12);
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
    Tensor scaled = mul(sum(in[0], {1}), in[1]);
    Tensor peak = add(amax(in[0], {1}, true), 1.0);
    return std::vector<Tensor>{v, m, scaled, mul(scaled, scaled), peak, div(in[0], peak)};
  };
  for (int64_t cols : {2, 31, 1500, 20000}) {
    SCOPED_TRACE(cols);
    expect_matches_eager(fn, {randn({37, cols}), randn({37})}, 1e-4, 1e-5);
  }
  Fn total = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(mul(sum(in[0]), 2.0), 1.0)}; };
  expect_matches_eager(total, {randn({1 << 22})}, 1e-5, 1e-2);
}

TEST(CompiledCuda, ColumnReductionsMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(6);
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [var, mean] = var_mean(in[0], {1});
    return std::vector<Tensor>{sum(in[0], {0}), var, mean, amax(in[0], {0})};
  };
  expect_matches_eager(fn, {randn({513, 300})}, 1e-4, 1e-5);
}

// A row's max of zeros of both signs is one zero for the whole row (a butterfly's lanes could end
// with different ones: k_uniform), so 1 / amax(x) is one infinity along each row.
TEST(CompiledCuda, AMaxOfSignedZerosIsTheSameForTheWholeRow) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(11);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{div(ones_like(in[0]), amax(in[0], {1}, true))};
  };
  for (auto sizes : {std::vector<int64_t>{64, 4096}, {512, 64}}) {  // a block a row, a warp a row
    Tensor signs = gt(rand(sizes), 0.5);
    Tensor zeros = where(signs, full(sizes, 0.0), full(sizes, -0.0));
    Tensor got = compile(fn)({zeros.to(kCuda)})[0].cpu();
    for (int64_t r = 0; r < sizes[0]; ++r) {
      const float first = got.select(0, r).select(0, 0).item<float>();
      ASSERT_TRUE(std::isinf(first)) << "row " << r;
      for (int64_t c = 1; c < sizes[1]; c += 37)
        ASSERT_EQ(got.select(0, r).select(0, c).item<float>(), first) << "row " << r << ", col " << c;
    }
  }
}

// sum(x, 0) and mean(x, 0) beside a row reduction are column sums of its row kernel (partials per
// block, a finishing launch): few rows, rows past 64 a block, odd and long rows, 16-bit floats, a
// transposed view, and a second call through the same workspace.
TEST(CompiledCuda, ColumnSumsOfRowKernelsMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(7);
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [var, mean] = var_mean(in[0], {1});
    return std::vector<Tensor>{sum(in[0], {0}), var, mean, kiln::mean(in[0], {0})};
  };
  for (auto sizes : {std::vector<int64_t>{3, 5000}, {40000, 64}, {2048, 301}, {1024, 16384}}) {
    SCOPED_TRACE(::testing::Message() << "sizes " << sizes[0] << "x" << sizes[1]);
    expect_matches_eager(fn, {randn(sizes)}, 1e-4, 1e-4);
  }
  expect_matches_eager(fn, {randn({4096, 512}).to(DType::BFloat16)}, 1e-2, 1e-2);
  Fn transposed = [&](const std::vector<Tensor>& in) { return fn({in[0].t()}); };
  expect_matches_eager(transposed, {randn({700, 900})}, 1e-4, 1e-4);
  // A stored sum read back by a later pass of the kernel beside a column sum (never staged).
  Fn residual = [](const std::vector<Tensor>& in) {
    Tensor h = add(in[0], in[1]);
    return std::vector<Tensor>{h, layer_norm(h, {h.size(-1)}, std::nullopt, std::nullopt, 1e-5), sum(in[0], {0})};
  };
  expect_matches_eager(residual, {randn({2048, 1024}), randn({2048, 1024})}, 1e-4, 1e-4);
  expect_matches_eager(residual, {randn({1024, 2048}).to(DType::BFloat16), randn({1024, 2048}).to(DType::BFloat16)},
                       1e-2, 1e-2);
  Fn stored_then_read = [](const std::vector<Tensor>& in) {
    Tensor h = mul(in[0], Scalar(2.0));
    return std::vector<Tensor>{h, layer_norm(h, {h.size(-1)}, std::nullopt, std::nullopt, 1e-5), sum(in[0], {0})};
  };
  expect_matches_eager(stored_then_read, {randn({2048, 2048}).to(DType::BFloat16)}, 1e-2, 1e-2);
  // Two inputs staged, a bfloat16 one in 8-byte copies beside a float one in 16-byte copies.
  Fn mixed = [](const std::vector<Tensor>& in) {
    auto [var, mean] = var_mean(add(in[0].to(DType::Float32), in[1]), {1});
    return std::vector<Tensor>{sum(in[1], {0}), var, mean};
  };
  expect_matches_eager(mixed, {randn({4096, 256}).to(DType::BFloat16), randn({4096, 256})}, 1e-4, 1e-4);
  // An input 4 bytes past a 16-byte boundary: the kernel's unaligned path, which stages no loads.
  const int64_t n = 600 * 512;
  Tensor flat = randn({n + 1});
  std::vector<Tensor> want_offset = fn({view(slice(flat, 0, 1, n + 1), {600, 512})});
  std::vector<Tensor> got_offset = compile(fn)({view(slice(flat.to(kCuda), 0, 1, n + 1), {600, 512})});
  for (size_t i = 0; i < got_offset.size(); ++i)
    expect_close(got_offset[i].cpu(), want_offset[i], 1e-4, 1e-4, "offset input, output " + std::to_string(i));
  Tensor x = randn({5000, 1000});
  std::vector<Tensor> want = fn({x});
  auto compiled = compile(fn);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = compiled({x.to(kCuda)});
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(got[i].cpu(), want[i], 1e-4, 1e-4, "call " + std::to_string(call) + " output " + std::to_string(i));
  }
}

TEST(CompiledCuda, IntegerArithmeticIsExactAndADivisionByZeroRaises) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0], b = in[1];
    return std::vector<Tensor>{div(a, b, "floor"), remainder(a, b), a * b - b, abs(a)};
  };
  Tensor a = arange(-40, 40, 1, TensorOptions(DType::Int64)).reshape({8, 10});
  Tensor b = add(remainder(arange(0, 80, 1, TensorOptions(DType::Int64)).reshape({8, 10}), 7), 1);
  expect_matches_eager(fn, {a, b}, 0, 0);
  // One zero divisor, at element 17.
  Tensor zero = mul(b, ne(arange(0, 80, 1, TensorOptions(DType::Int64)).reshape({8, 10}), 17).to(DType::Int64));
  try {
    (void)compile(fn)({a.to(kCuda), zero.to(kCuda)});
    FAIL() << "expected ZeroDivisionError";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
  }
}

TEST(CompiledCuda, InputsOnTwoDevicesAreAnError) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[1])}; };
  try {
    (void)compile(fn)({ones({4}).to(kCuda), ones({4})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::printf("mixed devices: %s\n", e.what());
  }
}

// GEMMs are cuBLASLt calls between generated kernels (the epilogues: bias added by cuBLASLt, gelu
// in a generated kernel); float32 without TF32, so within float32's tolerance of eager.
TEST(CompiledCuda, LinearLayersMatchEager) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(7);
  Fn mlp = [](const std::vector<Tensor>& in) {
    Tensor h = gelu(linear(in[0], in[1], in[2]));
    return std::vector<Tensor>{linear(h, in[3], in[4]), matmul(in[0], in[0].t())};
  };
  std::vector<Tensor> inputs = {randn({96, 64}), mul(randn({256, 64}), 0.1), randn({256}), mul(randn({64, 256}), 0.1),
                                randn({64})};
  expect_matches_eager(mlp, inputs, 1e-4, 1e-5);
  std::vector<Tensor> half;
  for (const auto& t : inputs) half.push_back(t.to(DType::BFloat16));
  expect_matches_eager(mlp, half, 2e-2, 2e-2);
  // The bias in cuBLASLt's epilogue, the bfloat16 product rounded once after it: folded rows of a
  // 3-D input, and an empty inner dim (the bias alone).
  Fn layer = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{linear(in[0], in[1], in[2])}; };
  expect_matches_eager(layer, {randn({2, 48, 64}).to(DType::BFloat16), half[1], half[2]}, 2e-2, 2e-2);
  expect_matches_eager(
      layer, {randn({5, 0}).to(DType::BFloat16), randn({7, 0}).to(DType::BFloat16), half[2].slice(0, 0, 7)}, 0, 0);
  Fn batched = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{bmm(in[0], in[1].transpose(1, 2)), addmm(in[2], in[0][0], in[1][1].t(), 0.5, 2)};
  };
  expect_matches_eager(batched, {randn({3, 17, 40}), randn({3, 33, 40}), randn({17, 33})}, 1e-4, 1e-5);
  expect_matches_eager(batched, {randn({3, 17, 0}), randn({3, 33, 0}), randn({17, 33})}, 0, 0);
}

TEST(CompiledCuda, AnExternOpWithoutACudaKernelIsNamed) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1])}; };
  try {
    (void)compile(fn)({ones({1, 2, 8, 8}).to(kCuda), ones({3, 2, 3, 3}).to(kCuda)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no CUDA kernel yet"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
