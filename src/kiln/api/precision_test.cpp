// Where compiled code rounds bfloat16/float16 (CompileOptions::emulate_precision_casts): by default
// a chain of 16-bit ops in one kernel computes in float32 and rounds once when stored, as
// torch.compile does; with emulation on, every op's result rounds as in eager.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

// Elementwise equality of two tensors of one dtype (NaNs of both equal).
bool identical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec()) return false;
  Tensor x = a.to(DType::Float64), y = b.to(DType::Float64);
  return !any(logical_not(logical_or(eq(x, y), logical_and(isnan(x), isnan(y))))).item<bool>();
}

Tensor bf16_input(int64_t rows, int64_t cols, uint64_t seed) {
  manual_seed(seed);
  return randn({rows, cols}).to(DType::BFloat16);
}

// (x * 3 + 1) * x in x's dtype, three roundings in eager.
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  Tensor y = add(mul(in[0], Scalar(3)), Scalar(1));
  return {mul(y, in[0])};
}

// y = x * 3 + 1 read three times (a value the kernel keeps), then y * y + y.
std::vector<Tensor> reused(const std::vector<Tensor>& in) {
  Tensor y = add(mul(in[0], Scalar(3)), Scalar(1));
  Tensor sq = mul(y, y);
  return {add(sq, y)};
}

// y = x * 3 + 1 selected by a `where` (which reads its 16-bit operands as they are) and multiplied:
// a 16-bit value the kernel keeps and reads twice.
std::vector<Tensor> selected(const std::vector<Tensor>& in) {
  Tensor y = add(mul(in[0], Scalar(3)), Scalar(1));
  Tensor pick = where(gt(in[0], Scalar(0)), y, in[0]);
  return {mul(pick, y)};
}

TEST(PrecisionPolicy, ChainsRoundOnceByDefault) {
  for (auto dtype : {DType::BFloat16, DType::Float16}) {
    Tensor x = bf16_input(64, 257, 5).to(dtype);
    for (auto [fn, name] :
         {std::pair{&chain, "chain"}, std::pair{&reused, "reused"}, std::pair{&selected, "selected"}}) {
      auto compiled = compile(fn);
      Tensor got = compiled({x})[0];
      // The same ops in float32, rounded once.
      Tensor once = fn({x.to(DType::Float32)})[0].to(dtype);
      Tensor eager = fn({x})[0];
      EXPECT_TRUE(identical(got, once)) << name << " " << dtype_name(dtype);
      EXPECT_FALSE(identical(got, eager)) << name << ": eager rounds in between, so some elements differ";
    }
  }
}

TEST(PrecisionPolicy, EmulationRoundsEveryOpAsEager) {
  Tensor x = bf16_input(64, 257, 6);
  for (auto fn : {&chain, &reused, &selected}) {
    CompileOptions options;
    options.emulate_precision_casts = true;
    EXPECT_TRUE(identical(compile(fn, options)({x})[0], fn({x})[0]));
  }
  // The environment variable turns it on too (a new compile: the option is read when compiling).
  ::setenv("KILN_EMULATE_PRECISION_CASTS", "1", 1);
  Tensor got = compile(&chain)({x})[0];
  ::unsetenv("KILN_EMULATE_PRECISION_CASTS");
  EXPECT_TRUE(identical(got, chain({x})[0]));
}

// The default keeps what a skipped rounding decides: a discrete op reads eager's roundings
// (round(to_float16(x)) of -2.5001 is -2, as eager; torch.compile gives -3), and a float32 value
// past the 16-bit range is the infinity its rounding would give (-70000 in float16 is -inf).
TEST(PrecisionPolicy, ChainsKeepWhatARoundingDecides) {
  auto discrete = [](const std::vector<Tensor>& in) {
    Tensor h = in[0].to(DType::Float16);
    return std::vector<Tensor>{round(h), gt(mul(h, Scalar(2)), Scalar(-5.0)), h.to(DType::Int64)};
  };
  Tensor x = from_vector<float>({-2.5001f, 2.4999f, 0.50001f, -70000.0f, 1e-8f, 65519.0f});
  auto got = compile(discrete)({x}), want = discrete({x});
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(identical(got[k], want[k])) << k;
  auto overflow = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mul(in[0].to(DType::Float16).to(DType::Float32), Scalar(0.5))};
  };
  Tensor y = compile(overflow)({x})[0];
  EXPECT_EQ(y.select(0, 3).item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y.select(0, 5).item<float>(), 32759.5f);  // 65519 (65504 eagerly: within float16's tolerance)
}

// torch_baseline.py's rmsnorm in bfloat16: without the roundings between ops the compiled result
// is nearer the float64 computation than eager's, and within bfloat16's tolerance of eager.
TEST(PrecisionPolicy, RmsNormIsNearerFloat64ThanEager) {
  auto rms = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor ms = mean(mul(x, x), {-1}, /*keepdim=*/true);
    return std::vector<Tensor>{mul(mul(x, rsqrt(add(ms, Scalar(1e-6)))), in[1])};
  };
  Tensor x = bf16_input(32, 1024, 7), w = bf16_input(1, 1024, 8).view({1024});
  Tensor got = compile(rms)({x, w})[0];
  Tensor eager = rms({x, w})[0];
  Tensor exact = rms({x.to(DType::Float64), w.to(DType::Float64)})[0];
  auto err = [&](const Tensor& t) { return sub(t.to(DType::Float64), exact).abs().sum().item<double>(); };
  EXPECT_LT(err(got), 0.75 * err(eager)) << err(got) << " " << err(eager);
  Tensor diff = sub(got.to(DType::Float64), eager.to(DType::Float64)).abs();
  Tensor bound = add(mul(eager.to(DType::Float64).abs(), Scalar(1.6e-2)), Scalar(1e-5));
  EXPECT_FALSE(any(gt(diff, bound)).item<bool>());
}

// A mean divides its sum by the count, as eager's and PyTorch's do: a product with 1/n differs in
// the last bit, and a comparison of two means of equal values then decides differently (a fuzz
// finding: lt of a float64 mean of [x, x, x] and x). Rows of three equal values sum exactly the
// same in any order, so compiled and eager agree bit for bit. (Not float32: compiled code sums
// float32 in double, where 3x is exact, eager in float, as PyTorch.)
TEST(PrecisionPolicy, MeanDividesItsSumAsEager) {
  auto means = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mean(in[0], {1}, false)}; };
  manual_seed(11);
  Tensor x = expand(randn({4096, 1}, DType::Float64), {4096, 3}).contiguous();
  Tensor got = compile(means)({x})[0];
  EXPECT_TRUE(identical(got, means({x})[0]));
}

// layer_norm's affine step x_hat * w + b rounds once in compiled code as in eager (kiln::fma): a
// product past the float range that the bias brings back stays finite (it was inf, and NaN after a
// second layer_norm), and every element equals eager's bit for bit.
TEST(PrecisionPolicy, LayerNormAffineRoundsOnceAsEager) {
  auto norm = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{layer_norm(in[0], {in[0].sizes()[1]}, in[1], in[1], 1e-3)};
  };
  const float big = std::numeric_limits<float>::max();
  Tensor x = from_vector<float>({1.0685f, -0.3214f, -2.6422f, -2.6883f, 2.5198f}, {1, 5});
  Tensor w = from_vector<float>({-1.5f, 2.5f, big, 2.5f, -big});
  Tensor got = compile(norm)({x, w})[0], eager = norm({x, w})[0];
  EXPECT_TRUE(std::isfinite(got.select(1, 2).item<float>())) << got.select(1, 2).item<float>();
  EXPECT_TRUE(identical(got, eager));
  manual_seed(12);
  Tensor xs = randn({64, 33}), ws = randn({33});
  EXPECT_TRUE(identical(compile(norm)({xs, ws})[0], norm({xs, ws})[0]));
}

// A row kept between passes in the row of an output that its last pass writes (codegen): two
// outputs of the last pass read exp's row, the earlier one before the later one's store replaces it
// at each column; float32 and float64, rows that cross the vector width, the values of eager.
TEST(PrecisionPolicy, RowsKeptInOutputsGiveEagersValues) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor e = exp(sub(in[0], amax(in[0], {1}, true)));
    Tensor s = sum(e, {1}, true);
    return std::vector<Tensor>{div(e, s), mul(e, Scalar(2.0))};
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    manual_seed(13);
    Tensor x = randn({96, 1037}, d);
    auto got = compile(fn)({x});
    auto want = fn({x});
    // exp is elementwise, the same function in both: bit for bit. The sums' orders differ.
    EXPECT_TRUE(identical(got[1], want[1])) << dtype_name(d);
    Tensor rel = div(sub(got[0], want[0]).abs(), want[0].abs()).amax();
    EXPECT_LT(rel.item<double>(), d == DType::Float32 ? 1e-5 : 1e-13) << dtype_name(d);
  }
}

}  // namespace
}  // namespace kiln
