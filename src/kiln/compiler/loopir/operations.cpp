#include "kiln/compiler/loopir/operations.h"

namespace kiln::loopir {
namespace {

// {name, arity, wrapping, integer_identity, discrete}
const ElementwiseOp kRows[] = {
    // Unary.
    {"abs", 1, "k_abs"},
    {"acos", 1},
    {"acosh", 1},
    {"asin", 1},
    {"asinh", 1},
    {"atan", 1},
    {"atanh", 1},
    {"bitwise_not", 1},
    {"ceil", 1, "", true, true},
    {"cos", 1},
    {"cosh", 1},
    {"erf", 1},
    {"exp", 1},
    {"expm1", 1},
    {"floor", 1, "", true, true},
    {"log", 1},
    {"log1p", 1},
    {"log2", 1},
    {"log10", 1},
    {"neg", 1, "k_neg"},
    {"reciprocal", 1},
    {"round", 1, "", true, true},
    {"rsqrt", 1},
    {"sign", 1, "", false, true},
    {"sin", 1},
    {"sinh", 1},
    {"sqrt", 1},
    {"tan", 1},
    {"tanh", 1},
    {"trunc", 1, "", true, true},
    {"lgamma", 1},
    {"digamma", 1},
    {"erfc", 1},
    {"erf_inv", 1},
    {"erfcx", 1},
    {"ndtri", 1},
    {"bessel_i0", 1},
    {"bessel_i0e", 1},
    {"bessel_i1", 1},
    {"bessel_i1e", 1},
    // Binary.
    {"add", 2, "k_add"},
    {"atan2", 2},
    {"zeta", 2},
    {"bitwise_and", 2},
    {"bitwise_or", 2},
    {"bitwise_xor", 2},
    {"div", 2},  // integer division reports a zero divisor
    {"eq", 2, "", false, true},
    {"fmod", 2, "", false, true},
    {"ge", 2, "", false, true},
    {"gt", 2, "", false, true},
    {"le", 2, "", false, true},
    {"lt", 2, "", false, true},
    {"maximum", 2},
    {"minimum", 2},
    {"mul", 2, "k_mul"},
    {"ne", 2, "", false, true},
    {"pow", 2},
    {"remainder", 2, "", false, true},
    {"sub", 2, "k_sub"},
    // Others.
    {"where", 3},
    {"fma", 3},
    {"convert_element_type", 1},
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
