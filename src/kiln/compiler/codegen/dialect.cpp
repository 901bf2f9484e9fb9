#include "kiln/compiler/codegen/dialect.h"

#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln::compiler {
namespace {

constexpr Spelling kCall = Spelling::Call;
constexpr Spelling kInfix = Spelling::Infix;
constexpr Spelling kSpecial = Spelling::Special;

// The special functions neither library has: kernels/special_math.h's, one spelling in both
// dialects (the header compiles as C++ and under NVRTC).
constexpr OpSpelling kSpecialFunctions[] = {
    {"digamma", kCall, "kiln::special::digamma"}, {"erf_inv", kCall, "kiln::special::erfinv"},
    {"erfcx", kCall, "kiln::special::erfcx"},     {"ndtri", kCall, "kiln::special::ndtri"},
    {"bessel_i0", kCall, "kiln::special::i0"},    {"bessel_i0e", kCall, "kiln::special::i0e"},
    {"bessel_i1", kCall, "kiln::special::i1"},    {"bessel_i1e", kCall, "kiln::special::i1e"},
    {"zeta", kCall, "kiln::special::zeta"},
};

// A dialect's rows and the special functions.
std::map<std::string_view, OpSpelling> table(std::initializer_list<OpSpelling> rows) {
  std::map<std::string_view, OpSpelling> m;
  for (const auto& r : rows) m.emplace(r.op, r);
  for (const auto& r : kSpecialFunctions) m.emplace(r.op, r);
  return m;
}

}  // namespace

const OpSpelling& Dialect::op(std::string_view name) const {
  auto it = ops.find(name);
  if (it == ops.end())
    KILN_FAIL(ErrorKind::NotImplemented, "{} codegen: no spelling for operation {}", this->name, name);
  return it->second;
}

std::string Dialect::limit(std::string_view what, const std::string& type) const {
  return fmt::format("{}<{}>::{}()", limits, type, what);
}

// {op, spelling, text, propagate_nan}: `k_` functions are kernel_support.h's. Special: bitwise_not
// is ! for bool and ~ otherwise, reciprocal 1 / x and rsqrt 1 / sqrt(x) in the result's type.
// std::fma rounds once (vfmadd where the target has FMA).
const Dialect& cpp_dialect() {
  static const Dialect d{"C++",
                         "std::numeric_limits",
                         "std::fma",
                         "std::sqrt",
                         "__restrict",
                         table({
                             {"abs", kCall, "std::abs"},
                             {"acos", kCall, "std::acos", true},
                             {"acosh", kCall, "std::acosh", true},
                             {"asin", kCall, "std::asin", true},
                             {"asinh", kCall, "std::asinh", true},
                             {"atan", kCall, "std::atan", true},
                             {"atanh", kCall, "std::atanh", true},
                             {"bitwise_not", kSpecial, ""},
                             {"ceil", kCall, "std::ceil"},
                             {"cos", kCall, "std::cos", true},
                             {"cosh", kCall, "std::cosh", true},
                             {"erf", kCall, "k_erf"},
                             {"exp", kCall, "k_exp"},
                             {"expm1", kCall, "std::expm1", true},
                             {"floor", kCall, "std::floor"},
                             {"log", kCall, "std::log", true},
                             {"log1p", kCall, "std::log1p", true},
                             {"log2", kCall, "std::log2", true},
                             {"log10", kCall, "std::log10", true},
                             {"neg", kSpecial, ""},
                             {"reciprocal", kSpecial, ""},
                             {"round", kCall, "std::nearbyint"},
                             {"rsqrt", kSpecial, ""},
                             {"sign", kCall, "k_sign"},
                             {"sin", kCall, "std::sin", true},
                             {"sinh", kCall, "std::sinh", true},
                             {"sqrt", kCall, "std::sqrt"},
                             {"tan", kCall, "std::tan", true},
                             {"tanh", kCall, "k_tanh"},
                             {"trunc", kCall, "std::trunc"},
                             {"add", kInfix, "+"},
                             {"atan2", kCall, "std::atan2"},
                             {"bitwise_and", kInfix, "&"},
                             {"bitwise_or", kInfix, "|"},
                             {"bitwise_xor", kInfix, "^"},
                             {"div", kInfix, "/"},
                             {"eq", kInfix, "=="},
                             {"fmod", kCall, "std::fmod"},
                             {"ge", kInfix, ">="},
                             {"gt", kInfix, ">"},
                             {"le", kInfix, "<="},
                             {"lt", kInfix, "<"},
                             {"maximum", kCall, "k_max"},
                             {"minimum", kCall, "k_min"},
                             {"mul", kInfix, "*"},
                             {"ne", kInfix, "!="},
                             {"pow", kCall, "k_pow"},
                             {"remainder", kCall, "k_remainder"},
                             {"sub", kInfix, "-"},
                             {"where", kSpecial, ""},
                             {"fma", kCall, "std::fma"},
                             {"convert_element_type", kSpecial, ""},
                             {"lgamma", kCall, "std::lgamma"},
                             {"erfc", kCall, "std::erfc"},
                         })};
  return d;
}

// The CUDA math library's overloads (float and double) and kernel_support.cuh's `k_` functions.
// Its functions keep NaN operands: none needs propagate_nan.
const Dialect& cuda_dialect() {
  static const Dialect d{"CUDA",
                         "kiln::k_limits",
                         "fma",
                         "sqrt",
                         "__restrict__",
                         table({
                             {"abs", kCall, "fabs"},       {"acos", kCall, "acos"},
                             {"acosh", kCall, "acosh"},    {"asin", kCall, "asin"},
                             {"asinh", kCall, "asinh"},    {"atan", kCall, "atan"},
                             {"atanh", kCall, "atanh"},    {"bitwise_not", kSpecial, ""},
                             {"ceil", kCall, "ceil"},      {"cos", kCall, "cos"},
                             {"cosh", kCall, "cosh"},      {"erf", kCall, "k_erf"},
                             {"exp", kCall, "k_exp"},      {"expm1", kCall, "expm1"},
                             {"floor", kCall, "floor"},    {"log", kCall, "log"},
                             {"log1p", kCall, "log1p"},    {"log2", kCall, "log2"},
                             {"log10", kCall, "log10"},    {"neg", kSpecial, ""},
                             {"reciprocal", kSpecial, ""}, {"round", kCall, "nearbyint"},
                             {"rsqrt", kSpecial, ""},      {"sign", kCall, "k_sign"},
                             {"sin", kCall, "sin"},        {"sinh", kCall, "sinh"},
                             {"sqrt", kCall, "sqrt"},      {"tan", kCall, "tan"},
                             {"tanh", kCall, "k_tanh"},    {"trunc", kCall, "trunc"},
                             {"add", kInfix, "+"},         {"atan2", kCall, "atan2"},
                             {"bitwise_and", kInfix, "&"}, {"bitwise_or", kInfix, "|"},
                             {"bitwise_xor", kInfix, "^"}, {"div", kInfix, "/"},
                             {"eq", kInfix, "=="},         {"fmod", kCall, "fmod"},
                             {"ge", kInfix, ">="},         {"gt", kInfix, ">"},
                             {"le", kInfix, "<="},         {"lt", kInfix, "<"},
                             {"maximum", kCall, "k_max"},  {"minimum", kCall, "k_min"},
                             {"mul", kInfix, "*"},         {"ne", kInfix, "!="},
                             {"pow", kCall, "k_pow"},      {"remainder", kCall, "k_remainder"},
                             {"sub", kInfix, "-"},         {"where", kSpecial, ""},
                             {"fma", kCall, "fma"},        {"convert_element_type", kSpecial, ""},
                             {"lgamma", kCall, "lgamma"},  {"erfc", kCall, "erfc"},
                         })};
  return d;
}

}  // namespace kiln::compiler
