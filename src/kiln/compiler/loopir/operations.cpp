#include "kiln/compiler/loopir/operations.h"

namespace kiln::loopir {
namespace {

constexpr Spelling kCall = Spelling::Call;
constexpr Spelling kInfix = Spelling::Infix;
constexpr Spelling kSpecial = Spelling::Special;

// {name, arity, spelling, cpp, propagate_nan, wrapping, integer_identity, discrete}
const ElementwiseOp kRows[] = {
    // Unary.
    {"abs", 1, kCall, "std::abs", false, "k_abs"},
    {"acos", 1, kCall, "std::acos", true},
    {"acosh", 1, kCall, "std::acosh", true},
    {"asin", 1, kCall, "std::asin", true},
    {"asinh", 1, kCall, "std::asinh", true},
    {"atan", 1, kCall, "std::atan", true},
    {"atanh", 1, kCall, "std::atanh", true},
    {"bitwise_not", 1, kSpecial, ""},  // ! for bool, ~ otherwise
    {"ceil", 1, kCall, "std::ceil", false, "", true, true},
    {"cos", 1, kCall, "std::cos", true},
    {"cosh", 1, kCall, "std::cosh", true},
    {"erf", 1, kCall, "k_erf"},
    {"exp", 1, kCall, "k_exp"},
    {"expm1", 1, kCall, "std::expm1", true},
    {"floor", 1, kCall, "std::floor", false, "", true, true},
    {"log", 1, kCall, "std::log", true},
    {"log1p", 1, kCall, "std::log1p", true},
    {"log2", 1, kCall, "std::log2", true},
    {"log10", 1, kCall, "std::log10", true},
    {"neg", 1, kSpecial, "", false, "k_neg"},
    {"reciprocal", 1, kSpecial, ""},  // 1 / x in the result's type
    {"round", 1, kCall, "std::nearbyint", false, "", true, true},
    {"rsqrt", 1, kSpecial, ""},  // 1 / sqrt(x)
    {"sign", 1, kCall, "k_sign", false, "", false, true},
    {"sin", 1, kCall, "std::sin", true},
    {"sinh", 1, kCall, "std::sinh", true},
    {"sqrt", 1, kCall, "std::sqrt"},
    {"tan", 1, kCall, "std::tan", true},
    {"tanh", 1, kCall, "k_tanh"},
    {"trunc", 1, kCall, "std::trunc", false, "", true, true},
    // Binary.
    {"add", 2, kInfix, "+", false, "k_add"},
    {"atan2", 2, kCall, "std::atan2"},
    {"bitwise_and", 2, kInfix, "&"},
    {"bitwise_or", 2, kInfix, "|"},
    {"bitwise_xor", 2, kInfix, "^"},
    {"div", 2, kInfix, "/"},  // integer division reports a zero divisor
    {"eq", 2, kInfix, "==", false, "", false, true},
    {"fmod", 2, kCall, "std::fmod", false, "", false, true},
    {"ge", 2, kInfix, ">=", false, "", false, true},
    {"gt", 2, kInfix, ">", false, "", false, true},
    {"le", 2, kInfix, "<=", false, "", false, true},
    {"lt", 2, kInfix, "<", false, "", false, true},
    {"maximum", 2, kCall, "k_max"},
    {"minimum", 2, kCall, "k_min"},
    {"mul", 2, kInfix, "*", false, "k_mul"},
    {"ne", 2, kInfix, "!=", false, "", false, true},
    {"pow", 2, kCall, "k_pow"},
    {"remainder", 2, kCall, "k_remainder", false, "", false, true},
    {"sub", 2, kInfix, "-", false, "k_sub"},
    // Others.
    {"where", 3, kSpecial, ""},
    {"fma", 3, kCall, "std::fma"},  // one rounding (vfmadd where the target has FMA)
    {"convert_element_type", 1, kSpecial, ""},
};

// Each row becomes its prim's attribute value.
const OpAttrRegistrar kAttach([](Registry& r) {
  for (const ElementwiseOp& row : kRows) elementwise_attr().set(r.get(prim_name(row)), row);
});

}  // namespace

std::span<const ElementwiseOp> elementwise_rows() { return kRows; }

std::string prim_name(const ElementwiseOp& row) { return "prims::" + std::string(row.name); }

OpAttr<ElementwiseOp>& elementwise_attr() {
  static OpAttr<ElementwiseOp> attr("loopir.elementwise");
  return attr;
}

const ElementwiseOp* elementwise_op(std::string_view name) {
  return elementwise_attr().get(Registry::global().find("prims::" + std::string(name)));
}

}  // namespace kiln::loopir
