// Regressions of the compiled path (issue 9): each case crashed, failed to compile or answered
// differently from eager/PyTorch before its fix. Expected values are PyTorch's or a float64
// computation, never the compiled path itself.
#include <cmath>
#include <cstring>
#include <limits>

#include "guard_page.h"
#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::testing {
namespace {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> run_compiled(const Fn& fn, const std::vector<Tensor>& inputs) {
  auto compiled = compile(fn);
  return compiled(inputs);
}

// Bitwise equality of two tensors' elements (signed zeros and NaN payload classes included).
void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  auto g = to_doubles(got), w = to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i;
      continue;
    }
    EXPECT_EQ(g[i], w[i]) << "element " << i;
    EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << "sign of element " << i;
  }
}

TEST(CompiledRegression, CatReadsEachPartOnlyWhereItLies) {
  Maker m(1);
  Tensor a = against_guard_page(m.make({64, 1024}, DType::Float32));
  Tensor b = against_guard_page(m.make({64, 1024}, DType::Float32));
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cat(std::vector<Tensor>{in[0], in[1]}, 1), cat(std::vector<Tensor>{in[1], in[0]}, 0)};
  };
  auto got = run_compiled(fn, {a, b});
  auto want = fn({a, b});
  expect_identical(got[0], want[0], "cat dim 1");
  expect_identical(got[1], want[1], "cat dim 0");
}

TEST(CompiledRegression, WriteThroughSliceReadsOnlyInBounds) {
  // x[:, 3:7] += y is functionalized into slice_scatter, which lowers to a cat of three parts.
  Maker m(2);
  Tensor x = against_guard_page(m.make({16, 10}, DType::Float32));
  Tensor y = against_guard_page(m.make({16, 4}, DType::Float32));
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor z = in[0].clone();
    z.slice(1, 3, 7).add_(in[1]);
    return std::vector<Tensor>{z};
  };
  auto got = run_compiled(fn, {x, y});
  expect_identical(got[0], fn({x, y})[0], "slice add_");
}

TEST(CompiledRegression, IntegerDivisionByZeroRaisesLikeEager) {
  Tensor a = arange(1, 13, 1, TensorOptions(DType::Int64)).view({3, 4});
  Tensor zeros = full({3, 4}, 0, TensorOptions(DType::Int64));
  std::vector<Fn> fns = {
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{div(in[0], in[1], "trunc")}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{div(in[0], in[1], "floor")}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{remainder(in[0], in[1])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{fmod(in[0], in[1])}; },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_THROW(fns[i]({a, zeros}), Error);
    try {
      run_compiled(fns[i], {a, zeros});
      ADD_FAILURE() << "compiled integer division by zero did not raise";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
    }
  }
  // A zero divisor only in elements a masked part of cat never reads raises nothing.
  for (DType t : {DType::Int32, DType::Int64, DType::Int16}) {
    Tensor one = full({2, 3}, 1, TensorOptions(t));
    Fn fn = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{cat(std::vector<Tensor>{div(in[0], in[0], "trunc"), in[0]}, 1)};
    };
    expect_identical(run_compiled(fn, {one})[0], fn({one})[0], "cat of a division");
  }
}

TEST(CompiledRegression, MostNegativeIntegerDividedByMinusOneWraps) {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  Tensor a = full({4}, lo, TensorOptions(DType::Int64));
  Tensor b = full({4}, -1, TensorOptions(DType::Int64));
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{div(in[0], in[1], "trunc"),
                               div(in[0], in[1], "floor"),
                               remainder(in[0], in[1]),
                               fmod(in[0], in[1]),
                               neg(in[0]),
                               abs(in[0]),
                               mul(in[0], in[1]),
                               add(in[0], in[0])};
  };
  auto got = run_compiled(fn, {a, b});
  auto want = fn({a, b});
  // Two's complement wraparound: -(-2^63) is -2^63; the remainders are 0; 2 * -2^63 is 0.
  const double expected[] = {double(lo), double(lo), 0, 0, double(lo), double(lo), double(lo), 0};
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    expect_identical(got[i], want[i], "compiled vs eager");
    EXPECT_EQ(to_doubles(got[i])[0], expected[i]);
  }
}

TEST(CompiledRegression, IntegerConstantsAboveTwoToThe53AreExact) {
  static constexpr int64_t big = (int64_t{1} << 60) + 1;
  Tensor x = arange(0, 6, 1, TensorOptions(DType::Int64));
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(in[0], Scalar(big)), mul(in[0], Scalar(big)),
                               full({3}, std::numeric_limits<int64_t>::min(), TensorOptions(DType::Int64))};
  };
  auto got = run_compiled(fn, {x});
  const int64_t* sum = static_cast<const int64_t*>(got[0].data_ptr());
  const int64_t* product = static_cast<const int64_t*>(got[1].data_ptr());
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(sum[i], big + i);
    EXPECT_EQ(static_cast<uint64_t>(product[i]), static_cast<uint64_t>(big) * static_cast<uint64_t>(i));
  }
  EXPECT_EQ(static_cast<const int64_t*>(got[2].data_ptr())[2], std::numeric_limits<int64_t>::min());
}

TEST(CompiledRegression, LongFloatSumsAreAsAccurateAsEager) {
  Tensor x = add(randn({2, 8000000}), Scalar(3));
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0], IntArrayRef{1})}; };
  Tensor got = run_compiled(fn, {x})[0];
  Tensor eager = fn({x})[0];
  Tensor exact = sum(x.to(DType::Float64), IntArrayRef{1});
  auto g = to_doubles(got), e = to_doubles(eager), r = to_doubles(exact);
  for (size_t i = 0; i < r.size(); ++i) {
    double got_err = std::abs(g[i] - r[i]) / std::abs(r[i]);
    double eager_err = std::abs(e[i] - r[i]) / std::abs(r[i]);
    // float32 holds the exact sum to half an ulp (6e-8 relative); eager's cascade sums stay near it.
    EXPECT_LE(got_err, std::max(2 * eager_err, 6e-8)) << "row " << i << " eager error " << eager_err;
  }
}

// sum(x, 0) of many rows beside var_mean(x, 1): a column sum of the row kernel, whose threads add
// their rows into float partials and fold them into double ones every 64 rows (fusion: the
// codegen's ColumnSumsAddTheRowInTheFirstPass). Summed in float over all of a thread's rows (about
// 65536 on 2 threads), a column of values near 3 drifts by about 1e-6. 37 rows more than a power
// of two: a thread's last fold is of fewer than 64 rows.
TEST(CompiledRegression, LongColumnSumsAreAsAccurateAsEager) {
  Tensor x = add(randn({131072 + 37, 16}), Scalar(3));
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [var, mean] = var_mean(in[0], IntArrayRef{1});
    return std::vector<Tensor>{sum(in[0], IntArrayRef{0}), var, mean};
  };
  auto got = run_compiled(fn, {x});
  Tensor eager = fn({x})[0];
  Tensor exact = sum(x.to(DType::Float64), IntArrayRef{0});
  auto g = to_doubles(got[0]), e = to_doubles(eager), r = to_doubles(exact);
  for (size_t i = 0; i < r.size(); ++i) {
    double got_err = std::abs(g[i] - r[i]) / std::abs(r[i]);
    double eager_err = std::abs(e[i] - r[i]) / std::abs(r[i]);
    EXPECT_LE(got_err, std::max(2 * eager_err, 1.2e-7)) << "col " << i << " eager error " << eager_err;
  }
  auto v = to_doubles(got[1]), m = to_doubles(got[2]);
  auto ev = to_doubles(std::get<0>(var_mean(x.to(DType::Float64), IntArrayRef{1})));
  for (size_t i = 0; i < ev.size(); i += 997) EXPECT_NEAR(v[i], ev[i], 1e-5 * ev[i]) << "var of row " << i;
  EXPECT_EQ(m.size(), ev.size());
}

TEST(CompiledRegression, NegativeZeroConstantsKeepTheirSign) {
  Maker m(3);
  Tensor x = m.make({5, 7}, DType::Float32);
  Tensor e = m.make({5, 7}, DType::Int16, -3, 3);
  Tensor neg_zero = full({5, 7}, -0.0, TensorOptions(DType::Float32));
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mul(in[0], Scalar(-0.0)), add(in[0].mul(Scalar(0.0)), Scalar(-0.0)), pow(in[2], in[1]),
                               full({2}, -0.0, TensorOptions(DType::Float64))};
  };
  auto got = run_compiled(fn, {x, e, neg_zero});
  auto want = fn({x, e, neg_zero});
  for (size_t i = 0; i < got.size(); ++i) expect_identical(got[i], want[i], "output " + std::to_string(i));
  // pow(-0.0, e): -inf for odd negative e, +inf for even negative, -0.0 for odd positive (C's pow).
  auto p = to_doubles(got[2]);
  auto ev = to_doubles(e);
  for (size_t i = 0; i < p.size(); ++i) {
    double want_v = std::pow(-0.0, ev[i]);
    EXPECT_EQ(p[i], want_v);
    EXPECT_EQ(std::signbit(p[i]), std::signbit(want_v)) << "exponent " << ev[i];
  }
}

// A row of -0.0s normalizes to -0 * rstd; PyTorch's kernel then adds its bias, +0 when there is
// none, so the result is +0 unless a -0 bias is given (torch 2.13, every float dtype):
// signbit(layer_norm(x)) for no affine, weight only, bias only, +0 bias, -0 bias is
// [False, False, False, False, True]; the differential tier found kiln's -0 through reciprocal.
TEST(CompiledRegression, LayerNormOfNegativeZerosIsSignedAsPyTorch) {
  for (DType t : {DType::Float64, DType::Float32, DType::Float16}) {
    TensorOptions o(t);
    Tensor x = full({2, 9}, -0.0, o), w = full({9}, 1.0, o), b = full({9}, 0.0, o), nb = full({9}, -0.0, o);
    Fn fn = [](const std::vector<Tensor>& in) {
      const std::vector<int64_t> n{9};
      return std::vector<Tensor>{layer_norm(in[0], n, std::nullopt, std::nullopt),
                                 layer_norm(in[0], n, in[1], std::nullopt), layer_norm(in[0], n, std::nullopt, in[2]),
                                 layer_norm(in[0], n, in[1], in[2]), layer_norm(in[0], n, in[1], in[3])};
    };
    const std::vector<bool> negative{false, false, false, false, true};
    for (const auto& outputs : {run_compiled(fn, {x, w, b, nb}), fn({x, w, b, nb})}) {
      for (size_t k = 0; k < outputs.size(); ++k) {
        for (double v : to_doubles(outputs[k])) {
          EXPECT_EQ(v, 0.0);
          EXPECT_EQ(std::signbit(v), negative[k]) << dtype_name(t) << " output " << k;
        }
      }
    }
  }
}

// Index values are data: an out-of-range one (either sign) is a kiln::Error when the call runs,
// eagerly and compiled alike, never a read or write out of bounds (the inputs end at guard pages in
// the differential tier; here ASan watches in `make test-asan`).
TEST(CompiledRegression, OutOfRangeIndicesRaiseEagerAndCompiled) {
  auto call = [](const char* op, Stack s) {
    call_op_boxed(Registry::global().get(op), s);
    return s.at(0).to_tensor();
  };
  using Indices = std::vector<std::optional<Tensor>>;
  std::vector<std::pair<std::string, Fn>> cases{
      {"gather", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gather(exp(in[0]), 1, in[1])}; }},
      {"index_select",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{index_select(exp(in[0]), 0, in[2])}; }},
      {"embedding", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{embedding(exp(in[0]), in[2])}; }},
      {"scatter_add",
       [](const std::vector<Tensor>& in) { return std::vector<Tensor>{scatter_add(in[0], 1, in[1], exp(in[0]))}; }},
      {"index",
       [&](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{call("aten::index.Tensor", {Value(exp(in[0])), Value(Indices{in[2]})})};
       }},
      {"index_put",
       [&](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{
             call("aten::index_put", {Value(exp(in[0])), Value(Indices{in[2]}), Value(full({4}, 2.0))})};
       }},
  };
  Tensor x = full({3, 4}, 0.5);
  for (int64_t bad : std::vector<int64_t>{3, 4, -4, -5, int64_t{1} << 40}) {
    Tensor column = from_vector<int64_t>({0, 1, 2, 3, bad, bad, bad, bad, 3, 2, 1, 0}, {3, 4});
    Tensor rows = from_vector<int64_t>({0, bad, 2});
    for (const auto& [op, fn] : cases) {
      SCOPED_TRACE(op + " with index " + std::to_string(bad));
      // gather and scatter_add index dim 1 (size 4) and take no negative index; index_select and
      // embedding dim 0 (size 3), no negative index either; index and index_put wrap one.
      bool along_columns = op == "gather" || op == "scatter_add";
      if (along_columns && bad == 3) continue;  // in range
      EXPECT_THROW(fn({x, column, rows}), Error);
      EXPECT_THROW(run_compiled(fn, {x, column, rows}), Error);
    }
  }
}

TEST(CompiledRegression, ClampWithANaNBoundIsNaN) {
  Maker m(4);
  Tensor x = m.make({4, 6}, DType::Float32);
  Tensor xi = m.make({4, 6}, DType::Int16, -5, 5);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Fn fn = [nan](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{clamp(in[0], Scalar(nan), std::nullopt), clamp(in[1], Scalar(nan), Scalar(0.5)),
                               clamp(in[0], Scalar(-1), Scalar(nan))};
  };
  for (const auto& outputs : {run_compiled(fn, {x, xi}), fn({x, xi})}) {
    for (const auto& t : outputs) {
      EXPECT_TRUE(is_floating(t.dtype()));
      for (double v : to_doubles(t)) EXPECT_TRUE(std::isnan(v));
    }
  }
}

// kiln's mean is sum / n; PyTorch 2.13's Welford mean is NaN here (docs/conformance.md).
TEST(CompiledRegression, VarMeanWithInfinities) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = cat(std::vector<Tensor>{full({1}, 1.0), full({1}, inf), full({1}, -2.0)}, 0);
  Tensor h = full({1025}, inf, TensorOptions(DType::Float16));
  Fn fn = [](const std::vector<Tensor>& in) {
    auto [v, mean] = var_mean(in[0], std::nullopt);
    auto [vh, mean_h] = var_mean(in[1], std::nullopt);
    return std::vector<Tensor>{v, mean, vh, mean_h};
  };
  for (const auto& out : {run_compiled(fn, {x, h}), fn({x, h})}) {
    EXPECT_TRUE(std::isnan(to_doubles(out[0])[0]));
    EXPECT_EQ(to_doubles(out[1])[0], inf);
    EXPECT_TRUE(std::isnan(to_doubles(out[2])[0]));
    EXPECT_EQ(to_doubles(out[3])[0], inf);
  }
}

TEST(CompiledRegression, ZeroSizeTensorsCompile) {
  Tensor empty_rows = full({0, 3}, 1.0);
  Tensor empty_cols = full({3, 0}, 1.0);
  Tensor scalar = full({}, 2.5);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{neg(in[0]),
                               sum(in[1], IntArrayRef{1}),
                               softmax(in[1], 1),
                               log_softmax(in[1], 1),
                               var(in[2], std::nullopt, Scalar(1)),
                               mean(in[1], IntArrayRef{1}),
                               exp(in[1])};
  };
  auto got = run_compiled(fn, {empty_rows, empty_cols, scalar});
  auto want = fn({empty_rows, empty_cols, scalar});
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got[0].sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(to_doubles(got[1]), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(got[2].sizes().vec(), (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(got[3].sizes().vec(), (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(std::isnan(to_doubles(got[4])[0]));                  // one element, correction 1: 0 / 0
  for (double v : to_doubles(got[5])) EXPECT_TRUE(std::isnan(v));  // the mean of nothing
  for (size_t i = 0; i < got.size(); ++i) expect_identical(got[i], want[i], "output " + std::to_string(i));
}

TEST(CompiledRegression, CatOfTheSameValueTwice) {
  Maker m(5);
  Tensor x = m.make({3, 5}, DType::Float32);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor n = exp(in[0]);
    return std::vector<Tensor>{cat(std::vector<Tensor>{n, n}, 0), cat(std::vector<Tensor>{in[0], in[0]}, 1),
                               cat(std::vector<Tensor>{n, in[0], n}, 1)};
  };
  auto got = run_compiled(fn, {x});
  auto want = fn({x});
  for (size_t i = 0; i < got.size(); ++i) expect_identical(got[i], want[i], "output " + std::to_string(i));
}

// Found by the differential tier: all parts empty and skipped, the result still has the promoted dtype.
TEST(CompiledRegression, CatOfEmptyPartsPromotes) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{cat(std::vector<Tensor>{in[0], in[1]}, 0)}; };
  std::vector<Tensor> in = {full({0}, true, TensorOptions(DType::Bool)), full({0}, 1.0)};
  auto got = run_compiled(fn, in);
  EXPECT_EQ(got[0].dtype(), DType::Float32);
  EXPECT_EQ(fn(in)[0].dtype(), DType::Float32);
  EXPECT_EQ(got[0].numel(), 0);
}

// PyTorch has no bool kernel for these (found by the differential tier against PyTorch 2.13).
TEST(CompiledRegression, RoundingAndRemainderOfBoolRaise) {
  Tensor b = full({3}, true, TensorOptions(DType::Bool));
  std::vector<Fn> fns = {
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{floor(in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ceil(in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{round(in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{trunc(in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{remainder(in[0], in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{fmod(in[0], in[0])}; },
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{div(in[0], in[0], "floor")}; },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_THROW(fns[i]({b}), Error);
    EXPECT_THROW(run_compiled(fns[i], {b}), Error);
  }
  // A bool tensor and an integer scalar compute in int64: allowed, as in PyTorch.
  EXPECT_EQ(remainder(b, Scalar(2)).dtype(), DType::Int64);
}

TEST(CompiledRegression, OutputsKeepEagerStrides) {
  Maker m(6);
  Tensor x = m.make({2, 3, 4, 5}, DType::Float32).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  Tensor t = m.transposed(6, 7, DType::Float32);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{exp(in[0]), add(in[1], Scalar(1)), sum(mul(in[0], in[0]), IntArrayRef{1})};
  };
  auto got = run_compiled(fn, {x, t});
  auto want = fn({x, t});
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].strides().shape(), want[i].strides().shape()) << "output " << i;
    EXPECT_TRUE(close(got[i], to_doubles(want[i]), default_tolerance(DType::Float32))) << "output " << i;
  }
}

}  // namespace
}  // namespace kiln::testing
