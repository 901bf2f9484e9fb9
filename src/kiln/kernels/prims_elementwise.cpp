// Kernels of the elementwise prims (Meta and CPU). Each checks the prim contract — tensor operands
// of one dtype, one shape and one device, of the dtype class the math needs — and then runs the
// ATen kernel of the same meaning, which on such operands neither promotes nor broadcasts.
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::kernels {
namespace {

enum class Operands { Any, Float, Integral, Numeric };

struct ElementwisePrim {
  const char* prim;
  const char* aten;
  Operands operands = Operands::Any;
};

const ElementwisePrim kElementwise[] = {
    {"abs", "aten::abs", Operands::Numeric},
    {"acos", "aten::acos", Operands::Float},
    {"acosh", "aten::acosh", Operands::Float},
    {"asin", "aten::asin", Operands::Float},
    {"asinh", "aten::asinh", Operands::Float},
    {"atan", "aten::atan", Operands::Float},
    {"atanh", "aten::atanh", Operands::Float},
    {"cos", "aten::cos", Operands::Float},
    {"cosh", "aten::cosh", Operands::Float},
    {"bitwise_not", "aten::bitwise_not", Operands::Integral},
    {"ceil", "aten::ceil", Operands::Numeric},
    {"erf", "aten::erf", Operands::Float},
    {"exp", "aten::exp", Operands::Float},
    {"expm1", "aten::expm1", Operands::Float},
    {"floor", "aten::floor", Operands::Numeric},
    {"log", "aten::log", Operands::Float},
    {"log1p", "aten::log1p", Operands::Float},
    {"log2", "aten::log2", Operands::Float},
    {"log10", "aten::log10", Operands::Float},
    {"reciprocal", "aten::reciprocal", Operands::Float},
    {"neg", "aten::neg", Operands::Numeric},
    {"round", "aten::round", Operands::Numeric},
    {"rsqrt", "aten::rsqrt", Operands::Float},
    {"sign", "aten::sign", Operands::Numeric},
    {"sin", "aten::sin", Operands::Float},
    {"sinh", "aten::sinh", Operands::Float},
    {"sqrt", "aten::sqrt", Operands::Float},
    {"tan", "aten::tan", Operands::Float},
    {"tanh", "aten::tanh", Operands::Float},
    {"trunc", "aten::trunc", Operands::Numeric},
    {"lgamma", "aten::lgamma", Operands::Float},
    {"digamma", "aten::digamma", Operands::Float},
    {"erfc", "aten::erfc", Operands::Float},
    {"erf_inv", "aten::erfinv", Operands::Float},
    {"erfcx", "aten::special_erfcx", Operands::Float},
    {"ndtri", "aten::special_ndtri", Operands::Float},
    {"bessel_i0", "aten::i0", Operands::Float},
    {"bessel_i0e", "aten::special_i0e", Operands::Float},
    {"bessel_i1", "aten::special_i1", Operands::Float},
    {"bessel_i1e", "aten::special_i1e", Operands::Float},
    {"clone", "aten::clone"},
    {"fill", "aten::fill.Scalar"},
    {"add", "aten::add.Tensor"},
    {"atan2", "aten::atan2", Operands::Float},
    {"bitwise_and", "aten::bitwise_and.Tensor", Operands::Integral},
    {"bitwise_or", "aten::bitwise_or.Tensor", Operands::Integral},
    {"bitwise_xor", "aten::bitwise_xor.Tensor", Operands::Integral},
    {"div", "aten::div.Tensor"},
    {"eq", "aten::eq.Tensor"},
    {"fmod", "aten::fmod.Tensor"},
    {"ge", "aten::ge.Tensor"},
    {"gt", "aten::gt.Tensor"},
    {"le", "aten::le.Tensor"},
    {"lt", "aten::lt.Tensor"},
    {"maximum", "aten::maximum"},
    {"minimum", "aten::minimum"},
    {"mul", "aten::mul.Tensor"},
    {"ne", "aten::ne.Tensor"},
    {"pow", "aten::pow.Tensor_Tensor"},
    {"remainder", "aten::remainder.Tensor"},
    {"sub", "aten::sub.Tensor", Operands::Numeric},
    {"where", "aten::where.self"},
    {"zeta", "aten::special_zeta", Operands::Float},
    {"fma", "kiln::fma", Operands::Float},
    {"convert_element_type", "aten::_to_copy"},
};

// Runs the kernel `aten` has at `key` on `stack` (all arguments present).
void run_aten_kernel(const Registry& r, std::string_view aten, DispatchKey key, Stack& stack) {
  OpHandle op = r.get(aten);
  const BoxedKernel* kernel = op->kernel(key);
  KILN_CHECK(kernel != nullptr, "{} has no {} kernel", op->name(), dispatch_key_name(key));
  (*kernel)(stack);
}

bool fits(Operands kind, DType d) {
  switch (kind) {
    case Operands::Any: return true;
    case Operands::Float: return is_floating(d);
    case Operands::Integral: return !is_floating(d);
    case Operands::Numeric: return d != DType::Bool;
  }
  return false;
}

// Throws unless the tensor operands agree in dtype, shape and device (where's predicate is bool
// and only needs the shape) and the dtype suits the math.
void check_operands(const ElementwisePrim& p, const Stack& stack) {
  std::vector<Tensor> operands;
  for (const Value& v : stack) {
    if (v.is_tensor()) operands.push_back(v.to_tensor());
  }
  std::string_view name = p.prim;
  size_t first = 0;
  if (name == "where") {
    KILN_CHECK_TYPE(operands[0].dtype() == DType::Bool, "prims::where: pred must be bool, got {}",
                    dtype_name(operands[0].dtype()));
    first = 1;
  }
  const Tensor& lead = operands[first];
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& t = operands[i];
    KILN_CHECK(t.sizes().equals(lead.sizes()),
               "prims::{}: operands must have the same shape (prims do not broadcast; use broadcast_in_dim), got {} "
               "and {}",
               name, lead.sizes(), t.sizes());
    KILN_CHECK(t.device() == lead.device(), "prims::{}: operands must be on one device, got {} and {}", name,
               lead.device(), t.device());
    if (i < first) continue;
    KILN_CHECK_TYPE(t.dtype() == lead.dtype(),
                    "prims::{}: operands must have the same dtype (prims do not promote; use convert_element_type), "
                    "got {} and {}",
                    name, dtype_name(lead.dtype()), dtype_name(t.dtype()));
  }
  KILN_CHECK_TYPE(fits(p.operands, lead.dtype()), "prims::{}: not defined for {} operands", name,
                  dtype_name(lead.dtype()));
}

// The ATen arguments that follow the prim's own (add's alpha, _to_copy's options).
void complete_aten_arguments(std::string_view prim, Stack& stack) {
  if (prim == "add" || prim == "sub") {
    stack.emplace_back(int64_t{1});
  } else if (prim == "convert_element_type") {
    // _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format)
    stack.insert(stack.end(), {Value(), Value(), Value(), Value(false), Value()});
  }
}

void run_prim(const Registry& r, const ElementwisePrim& p, DispatchKey key, Stack& stack) {
  check_operands(p, stack);
  std::string_view prim = p.prim;
  complete_aten_arguments(prim, stack);
  // Integer division truncates at the prim level (true division is a float prim on floats).
  if (prim == "div" && !is_floating(stack.at(0).to_tensor().dtype())) {
    stack.emplace_back("trunc");
    return run_aten_kernel(r, "aten::div.Tensor_mode", key, stack);
  }
  run_aten_kernel(r, p.aten, key, stack);
}

const KernelRegistrar kRegister([](Registry& r) {
  for (const ElementwisePrim& p : kElementwise) {
    std::string name = "prims::";
    name.append(p.prim);
    for (DispatchKey key : {DispatchKey::Meta, DispatchKey::CPU}) {
      r.set_kernel(name, key, [&r, &p, key](Stack& stack) { run_prim(r, p, key, stack); });
    }
  }
});

}  // namespace

}  // namespace kiln::kernels
