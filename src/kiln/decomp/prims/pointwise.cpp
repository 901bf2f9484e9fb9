// Core ATen -> Prims for pointwise ops: promote and broadcast explicitly, apply the prim, convert
// to the result dtype. Ops with no prim of their own (relu, clamp, logical ops, rounding division)
// are written as the prims that compute them.
#include <cmath>
#include <limits>

#include "kiln/decomp/prims/promote.h"
#include "kiln/decomp/prims/table.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/prims_api.h"

namespace kiln::decomp {
namespace {

Operand operand_of(const Value& v) {
  if (v.is_tensor()) return v.to_tensor();
  return v.to_scalar();
}

void put(Stack& s, Tensor result) {
  s.clear();
  s.emplace_back(std::move(result));
}

// op(a[, b]) = prims::<prim>(promoted operands), for the ops whose meaning is exactly one prim.
BoxedKernel direct(std::string prim, Promotion kind, int arity, std::string op,
                   SecondScalar second = SecondScalar::Rounded) {
  return [prim, kind, arity, op, second](Stack& s) {
    Tensor y = arity == 1 ? elementwise(prim, {operand_of(s.at(0))}, kind, op)
                          : elementwise(prim, {operand_of(s.at(0)), operand_of(s.at(1))}, kind, op, second);
    put(s, y);
  };
}

// Rounding ops leave integers as they are (sign too, on bool); on floats they are their prim.
BoxedKernel integral_identity(std::string prim, std::string op) {
  BoxedKernel on_floats = direct(prim, Promotion::Default, 1, op);
  return [prim, on_floats](Stack& s) {
    const Tensor& x = s.at(0).to_tensor();
    bool identity = !is_floating(x.dtype()) && (prim != "sign" || x.dtype() == DType::Bool);
    if (identity) return put(s, prims::clone(x));
    on_floats(s);
  };
}

// pow(tensor, scalar): sqrt and 1 / sqrt for exponents 0.5 and -0.5 but in float16 (whose PyTorch
// kernel calls pow: inf at -inf, not NaN); pow(bool tensor, bool scalar)
// is base || !exponent (PyTorch's kernel has this one bool case): the base itself, or all true.
// Anything else is the pow prim.
BoxedKernel pow_tensor_scalar() {
  BoxedKernel on_numbers = direct("pow", Promotion::Default, 2, "aten::pow.Tensor_Scalar");
  return [on_numbers](Stack& s) {
    const Tensor& base = s.at(0).to_tensor();
    const Scalar exponent = s.at(1).to_scalar();
    // 0.5 and -0.5 are sqrt and 1 / sqrt, as the eager kernel (and PyTorch's): NaN at -inf, not inf.
    bool half = base.dtype() == DType::Float16;
    if (!half && exponent.is_floating_point() && (exponent.to_double() == 0.5 || exponent.to_double() == -0.5)) {
      // One op each, so a 16-bit result rounds once, as the kernel's 1 / sqrt(x) computed in float.
      const char* prim = exponent.to_double() == 0.5 ? "sqrt" : "rsqrt";
      return put(s, elementwise(prim, {Operand(base)}, Promotion::IntToFloat, "aten::pow.Tensor_Scalar"));
    }
    if (base.dtype() != DType::Bool || !exponent.is_bool()) return on_numbers(s);
    if (exponent.to<bool>()) return put(s, prims::clone(base));
    put(s, prims::full(base.sizes(), Scalar(true), DType::Bool, base.device()));
  };
}

Tensor scalar_for(const Scalar& s, const Promoted& p) { return scalar_like(s, p.compute, p.shape, p.device); }

// add / sub: a ± alpha * b.
Tensor add_sub(const Operand& a, const Operand& b, const Scalar& alpha, std::string_view prim, std::string_view op) {
  Operand ops[] = {a, b};
  Promoted p = promote(ops, Promotion::Default, op);
  Tensor rhs = p.operands[1];
  if (!(alpha.is_integral() && alpha.to<int64_t>() == 1)) rhs = prims::mul(rhs, scalar_for(alpha, p));
  Tensor y = prims::binary(prim, p.operands[0], rhs);
  return to_result(y, p);
}

void add_sub_kernel(Stack& s, std::string_view prim, std::string_view op) {
  put(s, add_sub(operand_of(s.at(0)), operand_of(s.at(1)), s.at(2).to_scalar(), prim, op));
}

// Division with a rounding mode. Integers: prims::div truncates; floor corrects toward -inf where
// the remainder's sign differs from the divisor's. Floats: PyTorch's floor division, exact even
// where floor(a / b) would round wrongly.
Tensor div_mode(const Operand& a, const Operand& b, std::optional<std::string_view> mode) {
  if (!mode) return elementwise("div", {a, b}, Promotion::IntToFloat, "aten::div", SecondScalar::Exact);
  KILN_CHECK(*mode == "trunc" || *mode == "floor",
             "div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'", *mode);
  Operand ops[] = {a, b};
  // A one-element divisor enters 16-bit float math exactly, as in true division (PyTorch's kernels).
  Promoted p = promote(ops, Promotion::Default, "aten::div", {}, SecondScalar::Exact);
  const Tensor& x = p.operands[0];
  const Tensor& y = p.operands[1];
  Tensor q = prims::div(x, y);
  if (*mode == "trunc" || p.compute == DType::Bool) {
    if (is_floating(p.compute)) q = prims::trunc(q);
    return to_result(q, p);
  }
  Tensor zero = scalar_for(0, p);
  Tensor one = scalar_for(1, p);
  Tensor mod = prims::fmod(x, y);
  Tensor mod_nonzero = prims::ne(mod, zero);
  Tensor mod_negative = prims::lt(mod, zero);
  Tensor divisor_negative = prims::lt(y, zero);
  Tensor signs_differ = prims::ne(mod_negative, divisor_negative);
  Tensor adjust = prims::bitwise_and(mod_nonzero, signs_differ);
  if (!is_floating(p.compute)) {
    Tensor q_minus_one = prims::sub(q, one);
    return to_result(prims::where(adjust, q_minus_one, q), p);
  }
  Tensor numerator = prims::sub(x, mod);
  Tensor div = prims::div(numerator, y);
  Tensor div_minus_one = prims::sub(div, one);
  div = prims::where(adjust, div_minus_one, div);
  Tensor floored = prims::floor(div);
  Tensor excess = prims::sub(div, floored);
  Tensor round_up = prims::gt(excess, scalar_for(0.5, p));
  Tensor floored_plus_one = prims::add(floored, one);
  floored = prims::where(round_up, floored_plus_one, floored);
  // A zero quotient keeps the sign of the true quotient; a zero divisor gives the true quotient.
  Tensor signed_zero = prims::mul(q, zero);
  Tensor div_is_zero = prims::eq(div, zero);
  Tensor result = prims::where(div_is_zero, signed_zero, floored);
  Tensor divisor_zero = prims::eq(y, zero);
  return to_result(prims::where(divisor_zero, q, result), p);
}

void div_mode_kernel(Stack& s) {
  std::optional<std::string_view> mode;
  if (!s.at(2).is_none()) mode = s.at(2).to_string_value();
  put(s, div_mode(operand_of(s.at(0)), operand_of(s.at(1)), mode));
}

Tensor relu(const Tensor& x) {
  Operand ops[] = {x};
  Promoted p = promote(ops, Promotion::Default, "aten::relu");
  Tensor zero = scalar_for(0, p);
  // x < 0, not x <= 0: -0.0 stays -0.0, as eager's kernel and PyTorch's (rsqrt then gives -inf).
  Tensor negative = prims::lt(p.operands[0], zero);
  return to_result(prims::where(negative, zero, p.operands[0]), p);
}

Tensor is_nonzero(const Tensor& x) {
  Tensor zero = scalar_like(0, x.dtype(), x.sizes(), x.device());
  return prims::ne(x, zero);
}

Tensor logical_not(const Tensor& x) {
  Tensor nonzero = is_nonzero(x);
  return prims::bitwise_xor(nonzero, scalar_like(true, DType::Bool, x.sizes(), x.device()));
}

BoxedKernel logical(std::string prim) {
  return [prim](Stack& s) {
    Tensor a = s.at(0).to_tensor(), b = s.at(1).to_tensor();
    Tensor a_true = is_nonzero(a);
    Tensor b_true = is_nonzero(b);
    Operand ops[] = {a_true, b_true};
    Promoted p = promote(ops, Promotion::Default, "aten::logical_" + prim.substr(8));
    put(s, prims::binary(prim, p.operands[0], p.operands[1]));
  };
}

// isnan/isinf of integers: a fresh tensor of falses, as eager's (not a broadcast constant, whose
// strides would differ from eager's).
Tensor all_false(const Tensor& x) { return prims::full(x.sizes(), false, DType::Bool, x.device()); }

Tensor isnan(const Tensor& x) {
  if (!is_floating(x.dtype())) return all_false(x);
  return prims::ne(x, x);
}

Tensor isinf(const Tensor& x) {
  if (!is_floating(x.dtype())) return all_false(x);
  Tensor magnitude = prims::abs(x);
  Tensor inf = scalar_like(std::numeric_limits<double>::infinity(), x.dtype(), x.sizes(), x.device());
  return prims::eq(magnitude, inf);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  Operand ops[] = {a, b};
  Promoted p = promote(ops, Promotion::Default, "aten::where", condition.sizes());
  Tensor pred = condition.dtype() == DType::Bool ? condition : is_nonzero(condition);
  pred = broadcast_to(pred, p.shape);
  return to_result(prims::where(pred, p.operands[0], p.operands[1]), p);
}

// kiln::fma(a, b, c): a * b + c rounded once, promoted and broadcast as add.
Tensor fma(const Tensor& a, const Tensor& b, const Tensor& c) {
  Operand ops[] = {a, b, c};
  Promoted p = promote(ops, Promotion::Default, "kiln::fma");
  return to_result(prims::fma(p.operands[0], p.operands[1], p.operands[2]), p);
}

// clamp as PyTorch defines it: NaN inputs stay NaN, a NaN bound gives NaN.
Tensor clamp_with(const Promoted& p, const Tensor* lo, const Tensor* hi) {
  Tensor x = p.operands[0];
  auto bound = [&](const Tensor& limit, const char* keep_when) {
    Tensor keep = prims::binary(keep_when, x, limit);
    // x as it is now: a NaN the lower bound gave must survive the upper one.
    if (is_floating(p.compute)) keep = prims::bitwise_or(keep, prims::ne(x, x));
    x = prims::where(keep, x, limit);
  };
  if (lo) bound(*lo, "ge");
  if (hi) bound(*hi, "le");
  return to_result(x, p);
}

template <class Bound>
Tensor clamp_impl(const Tensor& self, const std::optional<Bound>& min, const std::optional<Bound>& max,
                  std::string_view op) {
  KILN_CHECK(min || max, "clamp: at least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops;
  ops.reserve(3);
  ops.emplace_back(self);
  if (min) ops.emplace_back(*min);
  if (max) ops.emplace_back(*max);
  Promoted p = promote(ops, Promotion::Default, op);
  const Tensor* lo = min ? &p.operands[1] : nullptr;
  const Tensor* hi = max ? &p.operands[min ? 2 : 1] : nullptr;
  return clamp_with(p, lo, hi);
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_impl(self, min, max, "aten::clamp");
}

Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return clamp_impl(self, min, max, "aten::clamp.Tensor");
}

Tensor to_copy(const Tensor& self, std::optional<DType> dtype, std::optional<Layout> /*layout*/,
               std::optional<Device> device, std::optional<bool> /*pin_memory*/, bool /*non_blocking*/,
               std::optional<MemoryFormat> memory_format) {
  KILN_CHECK(!device || *device == self.device() || self.device().is_meta(),
             "_to_copy: moving between devices ({} to {}) has no prims decomposition", self.device(), *device);
  Tensor x = self;
  if (dtype && *dtype != self.dtype()) x = prims::convert_element_type(self, *dtype);
  if (memory_format) return prims::clone(x, memory_format);
  return x.is_same(self) ? prims::clone(x) : x;
}

Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  return prims::clone(self, memory_format);
}

Tensor copy(const Tensor& self, const Tensor& src, bool /*non_blocking*/) {
  Tensor converted = convert(src, self.dtype());
  return prims::clone(broadcast_to(converted, self.sizes()));
}

Tensor fill(const Tensor& self, const Scalar& value) { return prims::fill(self, value); }

}  // namespace

void add_pointwise_prims(DecompositionMap& t, const Registry& r) {
  auto def = [&](const char* op, BoxedKernel k) { t[r.get(op)] = std::move(k); };
  for (const char* name :
       {"exp", "expm1", "log",  "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "sin",   "cos",
        "tan", "asin",  "acos", "atan",  "sinh", "cosh",  "tanh", "asinh", "acosh",      "atanh", "erf"}) {
    std::string op = std::string("aten::") + name;
    def(op.c_str(), direct(name, Promotion::IntToFloat, 1, op));
  }
  // The special functions: ATen's name, then the prim's (PyTorch's spellings differ).
  const std::pair<const char*, const char*> special[] = {
      {"aten::lgamma", "lgamma"},         {"aten::digamma", "digamma"},        {"aten::erfc", "erfc"},
      {"aten::erfinv", "erf_inv"},        {"aten::special_erfcx", "erfcx"},    {"aten::special_ndtri", "ndtri"},
      {"aten::i0", "bessel_i0"},          {"aten::special_i0e", "bessel_i0e"}, {"aten::special_i1", "bessel_i1"},
      {"aten::special_i1e", "bessel_i1e"}};
  for (const auto& [op, prim] : special) def(op, direct(prim, Promotion::IntToFloat, 1, op));
  for (const char* name : {"ceil", "floor", "round", "trunc", "sign"}) {
    std::string op = std::string("aten::") + name;
    def(op.c_str(), integral_identity(name, op));
  }
  for (const char* name : {"abs", "neg", "bitwise_not"}) {
    std::string op = std::string("aten::") + name;
    def(op.c_str(), direct(name, Promotion::Default, 1, op));
  }
  struct Binary {
    const char* op;
    const char* prim;
    Promotion kind;
    SecondScalar second = SecondScalar::Rounded;
  };
  const Binary binaries[] = {
      {"aten::mul.Tensor", "mul", Promotion::Default, SecondScalar::Exact},
      {"aten::mul.Scalar", "mul", Promotion::Default, SecondScalar::Exact},
      {"aten::maximum", "maximum", Promotion::Default},
      {"aten::minimum", "minimum", Promotion::Default},
      {"aten::fmod.Tensor", "fmod", Promotion::Default},
      {"aten::fmod.Scalar", "fmod", Promotion::Default},
      {"aten::remainder.Tensor", "remainder", Promotion::Default},
      {"aten::remainder.Scalar", "remainder", Promotion::Default},
      {"aten::bitwise_and.Tensor", "bitwise_and", Promotion::Default},
      {"aten::bitwise_and.Scalar", "bitwise_and", Promotion::Default},
      {"aten::bitwise_or.Tensor", "bitwise_or", Promotion::Default},
      {"aten::bitwise_or.Scalar", "bitwise_or", Promotion::Default},
      {"aten::bitwise_xor.Tensor", "bitwise_xor", Promotion::Default},
      {"aten::bitwise_xor.Scalar", "bitwise_xor", Promotion::Default},
      {"aten::pow.Tensor_Tensor", "pow", Promotion::Default},
      {"aten::pow.Scalar", "pow", Promotion::Default},
      {"aten::div.Tensor", "div", Promotion::IntToFloat, SecondScalar::Exact},
      {"aten::div.Scalar", "div", Promotion::IntToFloat, SecondScalar::Exact},
      {"aten::atan2", "atan2", Promotion::IntToFloat},
      {"aten::special_zeta", "zeta", Promotion::IntToFloat},
  };
  for (const Binary& b : binaries) def(b.op, direct(b.prim, b.kind, 2, b.op, b.second));
  def("aten::pow.Tensor_Scalar", pow_tensor_scalar());
  for (const char* cmp : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    for (const char* overload : {".Tensor", ".Scalar"}) {
      std::string op = std::string("aten::") + cmp + overload;
      def(op.c_str(), direct(cmp, Promotion::AlwaysBool, 2, op));
    }
  }
  def("aten::add.Tensor", [](Stack& s) { add_sub_kernel(s, "add", "aten::add"); });
  def("aten::add.Scalar", [](Stack& s) { add_sub_kernel(s, "add", "aten::add"); });
  def("aten::sub.Tensor", [](Stack& s) { add_sub_kernel(s, "sub", "aten::sub"); });
  def("aten::sub.Scalar", [](Stack& s) { add_sub_kernel(s, "sub", "aten::sub"); });
  def("aten::div.Tensor_mode", div_mode_kernel);
  def("aten::div.Scalar_mode", div_mode_kernel);
  def("aten::logical_and", logical("bitwise_and"));
  def("aten::logical_or", logical("bitwise_or"));
  def("aten::logical_xor", logical("bitwise_xor"));
  def("aten::relu", kiln::detail::boxed<&relu>());
  def("aten::logical_not", kiln::detail::boxed<&logical_not>());
  def("aten::isnan", kiln::detail::boxed<&isnan>());
  def("aten::isinf", kiln::detail::boxed<&isinf>());
  def("aten::where.self", kiln::detail::boxed<&where>());
  def("kiln::fma", kiln::detail::boxed<&fma>());
  def("aten::clamp", kiln::detail::boxed<&clamp>());
  def("aten::clamp.Tensor", kiln::detail::boxed<&clamp_tensor>());
  def("aten::_to_copy", kiln::detail::boxed<&to_copy>());
  def("aten::clone", kiln::detail::boxed<&clone>());
  def("aten::copy", kiln::detail::boxed<&copy>());
  def("aten::fill.Scalar", kiln::detail::boxed<&fill>());
}

}  // namespace kiln::decomp
