// Every unary and binary pointwise op against a float64 reference, on every dtype it supports,
// over the harness' samples; the meta kernel must predict each output's dtype, sizes and strides.
#include <cmath>
#include <limits>

#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/core/type_promotion.h"

namespace kiln::testing {
namespace {

using Ref1 = double (*)(double);

struct UnaryOp {
  const char* name;
  std::function<Tensor(const Tensor&)> run;
  Ref1 ref;
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Ops that compute in floating point: integer and bool inputs give float32.
const std::vector<UnaryOp>& float_ops() {
  static const std::vector<UnaryOp> ops = {
      {"exp", exp, [](double x) { return std::exp(x); }},
      {"expm1", expm1, [](double x) { return std::expm1(x); }},
      {"log", log, [](double x) { return std::log(x); }},
      {"log1p", log1p, [](double x) { return std::log1p(x); }},
      {"log2", log2, [](double x) { return std::log2(x); }},
      {"log10", log10, [](double x) { return std::log10(x); }},
      {"sqrt", sqrt, [](double x) { return std::sqrt(x); }},
      {"rsqrt", rsqrt, [](double x) { return 1.0 / std::sqrt(x); }},
      {"reciprocal", reciprocal, [](double x) { return 1.0 / x; }},
      {"sin", sin, [](double x) { return std::sin(x); }},
      {"cos", cos, [](double x) { return std::cos(x); }},
      {"tan", tan, [](double x) { return std::tan(x); }},
      {"asin", asin, [](double x) { return std::asin(x); }},
      {"acos", acos, [](double x) { return std::acos(x); }},
      {"atan", atan, [](double x) { return std::atan(x); }},
      {"sinh", sinh, [](double x) { return std::sinh(x); }},
      {"cosh", cosh, [](double x) { return std::cosh(x); }},
      {"tanh", tanh, [](double x) { return std::tanh(x); }},
      {"asinh", asinh, [](double x) { return std::asinh(x); }},
      {"acosh", acosh, [](double x) { return std::acosh(x); }},
      {"atanh", atanh, [](double x) { return std::atanh(x); }},
      {"sigmoid", sigmoid, sigmoid_ref},
      {"erf", erf, [](double x) { return std::erf(x); }},
      {"gelu", [](const Tensor& t) { return gelu(t); }, gelu_ref},
      {"gelu_tanh", [](const Tensor& t) { return gelu(t, "tanh"); }, gelu_tanh_ref},
  };
  return ops;
}

// Ops that keep the input dtype.
const std::vector<UnaryOp>& same_dtype_ops() {
  static const std::vector<UnaryOp> ops = {
      {"abs", abs, [](double x) { return std::abs(x); }},
      {"neg", neg, [](double x) { return -x; }},
      {"relu", relu, [](double x) { return x < 0 ? 0.0 : x; }},
      {"sign", sign, [](double x) { return static_cast<double>((0 < x) - (x < 0)); }},
      {"ceil", ceil, [](double x) { return std::ceil(x); }},
      {"floor", floor, [](double x) { return std::floor(x); }},
      {"round", static_cast<Tensor (*)(const Tensor&)>(round), [](double x) { return std::nearbyint(x); }},
      {"trunc", trunc, [](double x) { return std::trunc(x); }},
  };
  return ops;
}

// Reference values of `op` applied to `inputs` broadcast to `shape`, rounded to `out`.
template <class F>
std::vector<double> reference(const std::vector<Tensor>& inputs, IntArrayRef shape, DType out, F f) {
  std::vector<std::vector<double>> values;
  for (const auto& t : inputs) values.push_back(to_doubles(t.expand(shape)));
  size_t n = values.empty() ? 0 : values[0].size();
  std::vector<double> result(n);
  for (size_t i = 0; i < n; ++i) {
    double r = values.size() == 1 ? f(values[0][i], 0.0) : f(values[0][i], values[1][i]);
    result[i] = round_to(r, out);
  }
  return result;
}

void check_unary(const UnaryOp& op, DType dtype, DType expected_out) {
  Maker maker(42);
  for (const Sample& s : unary_samples(dtype, maker)) {
    SCOPED_TRACE(std::string(op.name) + " " + std::string(dtype_name(dtype)) + " " + s.name);
    Tensor out = op.run(s.inputs[0]);
    ASSERT_EQ(out.dtype(), expected_out);
    ASSERT_EQ(out.sizes().vec(), s.inputs[0].sizes().vec());
    auto expected = reference(s.inputs, out.sizes(), expected_out, [&](double a, double) { return op.ref(a); });
    EXPECT_TRUE(close(out, expected, default_tolerance(expected_out)));
    expect_same_metadata(op.run(to_meta(s.inputs)[0]), out, "meta");
  }
}

TEST(Pointwise, UnaryFloatOps) {
  for (const auto& op : float_ops()) {
    for (DType t : kFloatTypes) check_unary(op, t, t);
    if (std::string(op.name).starts_with("gelu")) continue;  // gelu rejects integer inputs, as PyTorch does
    for (DType t : {DType::Int32, DType::UInt8, DType::Bool}) check_unary(op, t, DType::Float32);
  }
}

TEST(Pointwise, UnarySameDtypeOps) {
  for (const auto& op : same_dtype_ops()) {
    for (DType t : kFloatTypes) check_unary(op, t, t);
    for (DType t : kIntTypes) {
      if (t == DType::UInt8 && std::string(op.name) == "neg") continue;  // wraps; checked below
      check_unary(op, t, t);
    }
  }
  EXPECT_EQ(neg(from_vector<uint8_t>({1})).item<int64_t>(), 255);
  check_unary(same_dtype_ops()[3], DType::Bool, DType::Bool);  // sign of bool is the identity
  for (auto f : {abs, neg, relu}) EXPECT_THROW(f(from_vector<bool>({true})), Error);
}

TEST(Pointwise, UnaryBoolAndBitwiseOps) {
  UnaryOp isnan_op{"isnan", isnan, [](double x) { return std::isnan(x) ? 1.0 : 0.0; }};
  UnaryOp isinf_op{"isinf", isinf, [](double x) { return std::isinf(x) ? 1.0 : 0.0; }};
  UnaryOp not_op{"logical_not", logical_not, [](double x) { return x == 0 ? 1.0 : 0.0; }};
  for (DType t : kFloatTypes) {
    for (const auto* op : {&isnan_op, &isinf_op, &not_op}) check_unary(*op, t, DType::Bool);
  }
  check_unary(not_op, DType::Int16, DType::Bool);
  for (DType t : kIntTypes) {
    UnaryOp bnot{"bitwise_not", bitwise_not, [](double x) { return static_cast<double>(~static_cast<int64_t>(x)); }};
    check_unary(bnot, t, t);
  }
  EXPECT_EQ(bitwise_not(from_vector<bool>({true, false})).to_string(), "tensor([False, True])");
  EXPECT_THROW(bitwise_not(zeros({2})), Error);
}

// ---- Binary ops

struct BinaryOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
  std::function<Tensor(const Tensor&, const Scalar&)> run_scalar;  // may be empty
  double (*ref)(double, double);
  enum Out { kPromoted, kFloat, kBool } out;
  bool nonzero_rhs = false;
  bool integers = true;
  bool floats = true;
};

double floor_div(double a, double b) {
  if (b == 0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  if (div == 0) return std::copysign(0.0, a / b);
  double f = std::floor(div);
  return div - f > 0.5 ? f + 1 : f;
}
double python_mod(double a, double b) {
  double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
int64_t as_int(double v) { return static_cast<int64_t>(v); }

const std::vector<BinaryOp>& binary_ops() {
  using S = const Scalar&;
  static const std::vector<BinaryOp> ops = {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](auto& a, S b) { return add(a, b); },
       [](double a, double b) { return a + b; }, BinaryOp::kPromoted},
      {"add_alpha", [](auto& a, auto& b) { return add(a, b, 2); }, [](auto& a, S b) { return add(a, b, 2); },
       [](double a, double b) { return a + 2 * b; }, BinaryOp::kPromoted},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](auto& a, S b) { return sub(a, b); },
       [](double a, double b) { return a - b; }, BinaryOp::kPromoted},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](auto& a, S b) { return mul(a, b); },
       [](double a, double b) { return a * b; }, BinaryOp::kPromoted},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](auto& a, S b) { return div(a, b); },
       [](double a, double b) { return a / b; }, BinaryOp::kFloat},
      {"div_trunc", [](auto& a, auto& b) { return div(a, b, "trunc"); },
       [](auto& a, S b) { return div(a, b, "trunc"); }, [](double a, double b) { return std::trunc(a / b); },
       BinaryOp::kPromoted, true},
      {"div_floor", [](auto& a, auto& b) { return div(a, b, "floor"); },
       [](auto& a, S b) { return div(a, b, "floor"); }, floor_div, BinaryOp::kPromoted, true},
      {"remainder", [](auto& a, auto& b) { return remainder(a, b); }, [](auto& a, S b) { return remainder(a, b); },
       python_mod, BinaryOp::kPromoted, true},
      {"fmod", [](auto& a, auto& b) { return fmod(a, b); }, [](auto& a, S b) { return fmod(a, b); },
       [](double a, double b) { return std::fmod(a, b); }, BinaryOp::kPromoted, true},
      {"maximum", maximum, {}, nan_max, BinaryOp::kPromoted},
      {"minimum", minimum, {}, nan_min, BinaryOp::kPromoted},
      {"atan2", atan2, {}, [](double a, double b) { return std::atan2(a, b); }, BinaryOp::kFloat},
      {"pow",
       [](auto& a, auto& b) { return pow(a, b); },
       {},
       [](double a, double b) { return std::pow(a, b); },
       BinaryOp::kPromoted,
       false,
       false},
      {"bitwise_and", [](auto& a, auto& b) { return bitwise_and(a, b); },
       [](auto& a, S b) { return bitwise_and(a, b); },
       [](double a, double b) { return static_cast<double>(as_int(a) & as_int(b)); }, BinaryOp::kPromoted, false, true,
       false},
      {"bitwise_or", [](auto& a, auto& b) { return bitwise_or(a, b); }, [](auto& a, S b) { return bitwise_or(a, b); },
       [](double a, double b) { return static_cast<double>(as_int(a) | as_int(b)); }, BinaryOp::kPromoted, false, true,
       false},
      {"bitwise_xor", [](auto& a, auto& b) { return bitwise_xor(a, b); },
       [](auto& a, S b) { return bitwise_xor(a, b); },
       [](double a, double b) { return static_cast<double>(as_int(a) ^ as_int(b)); }, BinaryOp::kPromoted, false, true,
       false},
      {"logical_and",
       logical_and,
       {},
       [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; },
       BinaryOp::kBool},
      {"logical_or",
       logical_or,
       {},
       [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
       BinaryOp::kBool},
      {"logical_xor",
       logical_xor,
       {},
       [](double a, double b) { return ((a != 0) != (b != 0)) ? 1.0 : 0.0; },
       BinaryOp::kBool},
      {"eq", [](auto& a, auto& b) { return eq(a, b); }, [](auto& a, S b) { return eq(a, b); },
       [](double a, double b) { return a == b ? 1.0 : 0.0; }, BinaryOp::kBool},
      {"ne", [](auto& a, auto& b) { return ne(a, b); }, [](auto& a, S b) { return ne(a, b); },
       [](double a, double b) { return a != b ? 1.0 : 0.0; }, BinaryOp::kBool},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }, [](auto& a, S b) { return lt(a, b); },
       [](double a, double b) { return a < b ? 1.0 : 0.0; }, BinaryOp::kBool},
      {"le", [](auto& a, auto& b) { return le(a, b); }, [](auto& a, S b) { return le(a, b); },
       [](double a, double b) { return a <= b ? 1.0 : 0.0; }, BinaryOp::kBool},
      {"gt", [](auto& a, auto& b) { return gt(a, b); }, [](auto& a, S b) { return gt(a, b); },
       [](double a, double b) { return a > b ? 1.0 : 0.0; }, BinaryOp::kBool},
      {"ge", [](auto& a, auto& b) { return ge(a, b); }, [](auto& a, S b) { return ge(a, b); },
       [](double a, double b) { return a >= b ? 1.0 : 0.0; }, BinaryOp::kBool},
  };
  return ops;
}

DType expected_dtype(const BinaryOp& op, DType promoted) {
  switch (op.out) {
    case BinaryOp::kPromoted: return promoted;
    case BinaryOp::kFloat: return to_float_dtype(promoted);
    case BinaryOp::kBool: return DType::Bool;
  }
  return promoted;
}

void check_binary_sample(const BinaryOp& op, const Sample& s, const std::string& trace) {
  SCOPED_TRACE(trace);
  DType out_dtype = expected_dtype(op, result_type(s.inputs[0], s.inputs[1]));
  Tensor out = op.run(s.inputs[0], s.inputs[1]);
  ASSERT_EQ(out.dtype(), out_dtype);
  auto expected = reference(s.inputs, out.sizes(), out_dtype, op.ref);
  EXPECT_TRUE(close(out, expected, default_tolerance(out_dtype)));
  auto meta = to_meta(s.inputs);
  expect_same_metadata(op.run(meta[0], meta[1]), out, "meta");
}

TEST(Pointwise, BinaryOps) {
  for (const auto& op : binary_ops()) {
    std::vector<DType> dtypes;
    if (op.floats) dtypes.insert(dtypes.end(), std::begin(kFloatTypes), std::end(kFloatTypes));
    if (op.integers) dtypes.insert(dtypes.end(), std::begin(kIntTypes), std::end(kIntTypes));
    for (DType t : dtypes) {
      Maker maker(7);
      for (const Sample& s : binary_samples(t, maker, op.nonzero_rhs)) {
        check_binary_sample(op, s, std::string(op.name) + " " + std::string(dtype_name(t)) + " " + s.name);
      }
    }
  }
}

TEST(Pointwise, IntegerPowerWraps) {
  Maker maker(3);
  for (DType t : kIntTypes) {
    Sample s{"small-exponents", {maker.make({64}, t), maker.make({64}, t, 0, 3)}};
    check_binary_sample(binary_ops()[12], s, std::string("pow ") + std::string(dtype_name(t)));
  }
  EXPECT_EQ(pow(from_vector<int8_t>({2}), from_vector<int8_t>({7})).item<int64_t>(), -128);
  EXPECT_EQ(pow(from_vector<int64_t>({2, -1, 1}), from_vector<int64_t>({-1, -3, -2})).to_string(),
            "tensor([0, -1, 1])");
  EXPECT_THROW(pow(from_vector<int64_t>({2}), Scalar(-1)), Error);
  EXPECT_FLOAT_EQ(pow(from_vector<int64_t>({2}), Scalar(-1.0)).item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(pow(Scalar(2), from_vector<float>({3})).item<float>(), 8.0f);
}

// pow(x, 0.5) and pow(x, -0.5) are sqrt and 1 / sqrt in PyTorch's kernel for float32, float64 and
// bfloat16 (NaN at -inf, -0 and -inf at -0), plain pow for float16 (inf and 0 at -inf, 0 and inf at
// -0): PyTorch 2.13's results, eagerly and compiled.
TEST(Pointwise, PowByAHalfAsPyTorch) {
  const double inf = std::numeric_limits<double>::infinity();
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{pow(in[0], Scalar(0.5)), pow(in[0], Scalar(-0.5))};
  };
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32}) {
    Tensor x = from_vector<double>({-inf, -0.0, 4.0}).to(t);
    bool half = t == DType::Float16;
    std::vector<double> root = {half ? inf : NAN, half ? 0.0 : -0.0, 2.0},
                        inverse = {half ? 0.0 : NAN, half ? inf : -inf, 0.5};
    for (const auto& out : {fn({x}), compile(fn)({x})}) {
      std::vector<double> a = to_doubles(out[0]), b = to_doubles(out[1]);
      for (size_t k = 0; k < 3; ++k) {
        std::string where = fmt::format("{} element {}", dtype_name(t), k);
        EXPECT_EQ(std::isnan(a[k]), std::isnan(root[k])) << where;
        if (!std::isnan(root[k])) {
          EXPECT_TRUE(a[k] == root[k] && std::signbit(a[k]) == std::signbit(root[k])) << where << ": " << a[k];
        }
        EXPECT_EQ(std::isnan(b[k]), std::isnan(inverse[k])) << where;
        if (!std::isnan(inverse[k])) {
          EXPECT_EQ(b[k], inverse[k]) << where;
        }
      }
    }
  }
}

TEST(Pointwise, MixedDtypesPromote) {
  Maker maker(11);
  const std::pair<DType, DType> pairs[] = {{DType::Int32, DType::Float32},   {DType::UInt8, DType::Int8},
                                           {DType::Bool, DType::Int64},      {DType::BFloat16, DType::Float16},
                                           {DType::Float16, DType::Float64}, {DType::Int16, DType::BFloat16}};
  for (auto [a, b] : pairs) {
    for (int i : {0, 3, 18, 19, 20}) {  // add, mul, eq, ne, lt
      const BinaryOp& op = binary_ops()[static_cast<size_t>(i)];
      check_binary_sample(op, Sample{"mixed", {maker.make({3, 4}, a), maker.make({4}, b)}},
                          std::string(op.name) + " " + std::string(dtype_name(a)) + "+" + std::string(dtype_name(b)));
      check_binary_sample(op, Sample{"mixed-0d", {maker.make({3}, a), maker.make({}, b)}},
                          std::string(op.name) + " 0-d " + std::string(dtype_name(b)));
    }
  }
}

TEST(Pointwise, ScalarFormsMatchWrappedNumbers) {
  Maker maker(5);
  for (const auto& op : binary_ops()) {
    if (!op.run_scalar) continue;
    for (DType t : {DType::Float32, DType::Float16, DType::Int32, DType::Int64}) {
      if ((is_floating(t) && !op.floats) || (!is_floating(t) && !op.integers)) continue;
      Tensor x = maker.make({20}, t);
      for (Scalar s : {Scalar(3), Scalar(-2.5), Scalar(true)}) {
        if (op.nonzero_rhs && s.is_bool()) continue;
        if (!op.floats && s.is_floating_point()) continue;
        SCOPED_TRACE(std::string(op.name) + " " + std::string(dtype_name(t)) + " scalar " + s.to_string());
        if (std::string(op.name) == "sub" && s.is_bool()) {
          EXPECT_THROW(op.run_scalar(x, s), Error);
          continue;
        }
        if (std::string(op.name) == "add_alpha" && !is_floating(result_type(x, s))) {
          continue;  // integral alpha with integral result: covered by BinaryOps
        }
        Tensor out = op.run_scalar(x, s);
        DType out_dtype = expected_dtype(op, result_type(x, s));
        ASSERT_EQ(out.dtype(), out_dtype);
        double sv = s.to_double();
        std::vector<double> xs = to_doubles(x), expected;
        for (double v : xs) expected.push_back(round_to(op.ref(v, sv), out_dtype));
        EXPECT_TRUE(close(out, expected, default_tolerance(out_dtype)));
      }
    }
  }
}

TEST(Pointwise, IntegerDivisionByZeroIsAnError) {
  Tensor a = from_vector<int64_t>({1, 2}), z = from_vector<int64_t>({1, 0});
  EXPECT_THROW(div(a, z, "floor"), Error);
  EXPECT_THROW(remainder(a, z), Error);
  EXPECT_THROW(fmod(a, Scalar(0)), Error);
  EXPECT_TRUE(std::isinf(div(a, z).data_ptr<float>()[1]));  // true division gives inf, as in PyTorch
}

TEST(Pointwise, ArgumentErrors) {
  Tensor i = from_vector<int64_t>({1, 2});
  EXPECT_THROW(add(i, i, 2.5), Error);  // float alpha with an integral result
  EXPECT_THROW(sub(from_vector<bool>({true}), from_vector<bool>({true})), Error);
  EXPECT_THROW(bitwise_and(zeros({2}), zeros({2})), Error);
  EXPECT_THROW(div(zeros({2}), zeros({2}), "round"), Error);
  EXPECT_THROW(gelu(zeros({2}), "fast"), Error);
  EXPECT_THROW(add(zeros({2, 3}), zeros({3, 2})), Error);
}

}  // namespace
}  // namespace kiln::testing
