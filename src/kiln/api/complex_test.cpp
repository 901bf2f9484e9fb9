// Complex tensors as storage dtypes: names, sizes, parsing and promotion; factories, copies, views
// and printing; every other op refusing a complex tensor with a kiln::Error (eagerly and under
// kiln::compile); and the FFT ops producing and consuming complex tensors, compiled as extern calls.
#include <gtest/gtest.h>

#include <cstring>

#include <complex>
#include <functional>
#include <limits>
#include <string>

#include "kiln/api/compile.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/core/type_promotion.h"
#include "kiln/graph/parser.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

using C = std::complex<double>;

// A complex128 tensor [rows, cols] with element (i, j) = i + 10 j + (j - i) i.
Tensor sample(int64_t rows, int64_t cols) {
  Tensor t = empty({rows, cols}, DType::ComplexDouble);
  C* p = t.data_ptr<C>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = C(static_cast<double>(i + 10 * j), static_cast<double>(j - i));
  return t;
}

std::vector<C> elements(const Tensor& t) {
  Tensor c = t.to(DType::ComplexDouble).contiguous();
  return {c.data_ptr<C>(), c.data_ptr<C>() + c.numel()};
}

TEST(Complex, DTypeNamesSizesParsingAndPromotion) {
  EXPECT_EQ(element_size(DType::ComplexFloat), 8u);
  EXPECT_EQ(element_size(DType::ComplexDouble), 16u);
  EXPECT_EQ(dtype_name(DType::ComplexFloat), "complex64");
  EXPECT_EQ(dtype_name(DType::ComplexDouble), "complex128");
  EXPECT_EQ(parse_dtype("cfloat"), DType::ComplexFloat);
  EXPECT_EQ(parse_dtype("cdouble"), DType::ComplexDouble);
  EXPECT_EQ(parse_dtype("complex128"), DType::ComplexDouble);
  EXPECT_TRUE(is_complex(DType::ComplexFloat));
  EXPECT_FALSE(is_floating(DType::ComplexFloat));
  EXPECT_FALSE(is_integral(DType::ComplexDouble, true));
  EXPECT_EQ(promote_types(DType::ComplexFloat, DType::Float64), DType::ComplexDouble);
  EXPECT_EQ(promote_types(DType::Int64, DType::ComplexFloat), DType::ComplexFloat);
  EXPECT_EQ(promote_types(DType::Float16, DType::ComplexFloat), DType::ComplexFloat);
  EXPECT_EQ(promote_types(DType::ComplexDouble, DType::ComplexFloat), DType::ComplexDouble);
  EXPECT_FALSE(can_cast(DType::ComplexFloat, DType::Float64));
  EXPECT_TRUE(can_cast(DType::Float64, DType::ComplexFloat));
  // A kernel visitor never instantiates a complex type: it throws instead.
  EXPECT_THROW(visit_dtype(DType::ComplexFloat, []<class T>() { return sizeof(T); }), Error);
}

TEST(Complex, FactoriesCopiesViewsAndPrinting) {
  EXPECT_EQ(zeros({2}, DType::ComplexFloat).to_string(), "tensor([0.0000+0.0000j, 0.0000+0.0000j])");
  EXPECT_EQ(full({2}, 1.5, DType::ComplexDouble).to_string(),
            "tensor([1.5000+0.0000j, 1.5000+0.0000j], dtype=torch.complex128)");
  Tensor t = sample(2, 3);
  EXPECT_EQ(t.to_string(),
            "tensor([[0.0000+0.0000j, 10.0000+1.0000j, 20.0000+2.0000j],\n"
            "        [1.0000-1.0000j, 11.0000+0.0000j, 21.0000+1.0000j]], dtype=torch.complex128)");
  // Metadata reads work on any dtype.
  EXPECT_EQ(sym_size(t, 1), 3);
  EXPECT_EQ(sym_stride(t.t(), 0), 1);
  EXPECT_EQ(sym_numel(t), 6);
  // Views move metadata only; contiguous() and clone() copy complex elements.
  Tensor tt = t.transpose(0, 1).contiguous();
  EXPECT_EQ(elements(tt), (std::vector<C>{{0, 0}, {1, -1}, {10, 1}, {11, 0}, {20, 2}, {21, 1}}));
  EXPECT_EQ(elements(t.slice(1, 1, 3).clone()), (std::vector<C>{{10, 1}, {20, 2}, {11, 0}, {21, 1}}));
  EXPECT_EQ(elements(t.view({3, 2}).permute({1, 0})),
            (std::vector<C>{{0, 0}, {20, 2}, {11, 0}, {10, 1}, {1, -1}, {21, 1}}));
  // complex128 -> complex64 -> complex128 is exact for these values; real -> complex has 0j;
  // complex -> real keeps the real part, as PyTorch's copy does.
  EXPECT_EQ(elements(t.to(DType::ComplexFloat)), elements(t));
  EXPECT_EQ(elements(from_vector<float>({1.5f, -2.f}, {2}).to(DType::ComplexFloat)),
            (std::vector<C>{{1.5, 0}, {-2, 0}}));
  EXPECT_EQ(elements(t.to(DType::Float64)), (std::vector<C>{{0, 0}, {10, 0}, {20, 0}, {1, 0}, {11, 0}, {21, 0}}));
  Tensor dst = zeros({2, 3}, DType::ComplexFloat);
  dst.copy_(t);
  EXPECT_EQ(elements(dst), elements(t));
}

// complex -> integer converts the real part as a float converts (core/float_to_int.h): NaN, an
// infinity or a value out of range is the x86 "integer indefinite" (PyTorch 2.13's values).
TEST(Complex, ToIntegerConvertsTheRealPartAsAFloatDoes) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // The pattern repeated over 320 elements: a vectorized loop converts them too.
  constexpr int kRepeats = 64;
  Tensor z = empty({5 * kRepeats}, DType::ComplexFloat);
  auto* p = z.data_ptr<std::complex<float>>();
  const C parts[] = {{nan, 1}, {inf, 0}, {3.7, 2}, {-1e20, 0}, {-2.9, 0}};
  for (int k = 0; k < 5 * kRepeats; ++k) p[k] = std::complex<float>(parts[k % 5]);
  auto ints = [&](DType d) {
    Tensor t = z.to(d).to(DType::Int64);
    std::vector<int64_t> all(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
    for (size_t k = 5; k < all.size(); ++k) EXPECT_EQ(all[k], all[k % 5]) << dtype_name(d) << " element " << k;
    return std::vector<int64_t>(all.begin(), all.begin() + 5);
  };
  EXPECT_EQ(ints(DType::Int64), (std::vector<int64_t>{INT64_MIN, INT64_MIN, 3, INT64_MIN, -2}));
  EXPECT_EQ(ints(DType::Int32), (std::vector<int64_t>{INT32_MIN, INT32_MIN, 3, INT32_MIN, -2}));
  EXPECT_EQ(ints(DType::Int16), (std::vector<int64_t>{0, 0, 3, 0, -2}));
  EXPECT_EQ(ints(DType::Int8), (std::vector<int64_t>{0, 0, 3, 0, -2}));
  EXPECT_EQ(ints(DType::UInt8), (std::vector<int64_t>{0, 0, 3, 0, 254}));
}

void expect_refused(const std::function<void()>& f, const std::string& op) {
  try {
    f();
    ADD_FAILURE() << op << ": no error for a complex argument";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(op), std::string::npos) << msg;
    EXPECT_NE(msg.find("complex"), std::string::npos) << msg;
  }
}

TEST(Complex, OrdinaryOpsRaiseAKilnErrorEagerly) {
  Tensor c = sample(2, 2).to(DType::ComplexFloat), r = ones({2, 2});
  expect_refused([&] { add(c, c); }, "aten::add.Tensor");
  expect_refused([&] { add(r, c); }, "aten::add.Tensor");
  expect_refused([&] { mul(c, 2.0); }, "aten::mul");
  expect_refused([&] { sum(c); }, "aten::sum");
  expect_refused([&] { exp(c); }, "aten::exp");
  expect_refused([&] { matmul(c, c); }, "aten::");
  expect_refused([&] { abs(c); }, "aten::abs");
  expect_refused([&] { sum(r, DType::ComplexFloat); }, "aten::sum");  // a complex dtype argument
  expect_refused([&] { arange(5, DType::ComplexDouble); }, "aten::arange");
}

TEST(Complex, OrdinaryOpsRaiseAKilnErrorCompiled) {
  Tensor c = sample(2, 2);
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  for (const Fn& fn : std::vector<Fn>{
           [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[0])}; },
           [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0])}; },
           [](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; },
           [](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[0])}; },
           // A complex intermediate from an FFT, then arithmetic on it.
           [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(_fft_r2c(in[1], {1}, 0, true), 2.0)}; },
       }) {
    EXPECT_THROW(compile(fn)({c, ones({2, 4})}), Error);
  }
  // A copy compiles: a call with a complex operand runs its eager kernel (an extern call), so no
  // loop of generated code sees the complex values.
  auto copy = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].clone()}; };
  Tensor got = compile(copy)({c})[0];
  ASSERT_EQ(got.dtype(), c.dtype());
  EXPECT_EQ(std::memcmp(got.data_ptr(), c.contiguous().data_ptr(), c.nbytes()), 0);
}

// A prims-level graph that did not come from tracing (text) can hold complex values the
// dispatcher never saw: the compiler raises a kiln::Error rather than generate a loop over them.
// (A Core ATen op left in such a graph is an extern call, which the dispatcher checks when it runs.)
TEST(Complex, CompilerRefusesComplexLoopsInGraphsFromText) {
  for (const char* text : {
           "graph(%x: c64[4]):\n  %y: c64[4] = prims::add(%x, %x)\n  return (%y)\n",
           "graph(%x: c128[2, 3]):\n  %y: c128[2, 3] = prims::clone(%x)\n  return (%y)\n",
           "graph(%x: c64[4]):\n  %y: f32[4] = prims::convert_element_type(%x, float32)\n  return (%y)\n",
       }) {
    graph::Graph g = graph::parse(text);
    try {
      compiler::run_pipeline(g, /*build=*/false);
      ADD_FAILURE() << "no error compiling " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("complex"), std::string::npos) << e.what();
    }
  }
  // The FFTs only: extern calls, no generated loop over a complex buffer.
  graph::Graph g = graph::parse(
      "graph(%x: f32[4, 6]):\n  %s: c64[4, 4] = aten::_fft_r2c(%x, [1], 0, True)\n"
      "  %y: f32[4, 6] = aten::_fft_c2r(%s, [1], 2, 6)\n  return (%y)\n");
  EXPECT_NO_THROW(compiler::run_pipeline(g, /*build=*/false));
}

TEST(Complex, FftRunsCompiledAsExternCalls) {
  manual_seed(7);
  Tensor x = randn({3, 12, 5});
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor spec = _fft_r2c(in[0], {0, 1}, 1, true);
    return std::vector<Tensor>{spec, _fft_c2r(spec, {0, 1}, 1, 12)};
  };
  std::vector<Tensor> want = fn({x});
  std::vector<Tensor> got = compile(fn)({x});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].dtype(), DType::ComplexFloat);
  EXPECT_EQ(got[0].sizes().vec(), want[0].sizes().vec());
  EXPECT_EQ(got[0].strides().vec(), want[0].strides().vec());
  std::vector<C> a = elements(got[0]), b = elements(want[0]);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(std::abs(a[i] - b[i]), 1e-5) << i;
  EXPECT_EQ(got[1].dtype(), DType::Float32);
  // The round trip with 1/sqrt(n) both ways is the input.
  EXPECT_LE(sub(got[1], x).abs().amax().item<double>(), 1e-5);
}

}  // namespace
}  // namespace kiln
