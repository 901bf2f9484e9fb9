// Bit shifts of integer tensors (bitwise_left_shift, bitwise_right_shift and the Python operators
// << and >>), as products and floor quotients by powers of two, so they fuse: a << b is a * 2^b
// (wrapping in the dtype, which is what shifting bits out does), a >> b is floor(a / 2^b) (the
// arithmetic shift of a signed value). PyTorch's rule for amounts outside the dtype's width: a
// negative or too large amount gives 0 (left) or the sign fill, a >> (bits - 1) (right: -1 or 0).
#include <limits>
#include <vector>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

int bits_of(DType t) {
  switch (t) {
    case DType::UInt8:
    case DType::Int8: return 8;
    case DType::Int16: return 16;
    case DType::Int32: return 32;
    default: return 64;
  }
}

Tensor shift(const Tensor& a_in, const Tensor& b_in, bool left, std::string_view op) {
  DType dtype = result_type(a_in, b_in);
  KILN_CHECK_TYPE(!is_floating(dtype) && dtype != DType::Bool,
                  "{}: \"{}_cpu\" not implemented for '{}' (integer tensors only)", op, op, dtype_name(dtype));
  Tensor a = to(a_in, dtype);
  int bits = bits_of(dtype);
  bool is_signed = dtype != DType::UInt8;
  // Right shifts move at most bits - 1 places in a signed type (the sign stays), bits in an unsigned one.
  int width = left ? bits : bits - (is_signed ? 1 : 0);
  Tensor amount = to(to(b_in, dtype), DType::Int64);  // the amount in the common dtype, as PyTorch reads it
  Tensor valid = logical_and(ge(amount, Scalar(0)), lt(amount, Scalar(width)));
  // 2^k for k < width, in the dtype (2^(bits - 1) wraps to the most negative value, as a shift does).
  std::vector<int64_t> powers;
  for (int k = 0; k < width; ++k) powers.push_back(k == 63 ? std::numeric_limits<int64_t>::min() : int64_t{1} << k);
  Tensor table = to(from_vector<int64_t>(powers), dtype);  // a host table, moved to the operands' device
  if (!a.device().is_cpu()) table = _to_copy(table, TensorOptions(dtype).device(a.device()));
  Tensor power = index_select(table, 0, reshape(clamp(amount, Scalar(0), Scalar(width - 1)), {-1}));
  power = reshape(power, amount.sizes());
  TensorOptions o = TensorOptions(dtype).device(a.device());
  if (left) return where(valid, mul(a, power), zeros({}, o));
  Tensor fill = is_signed ? where(lt(a, Scalar(0)), full({}, Scalar(-1), o), zeros({}, o)) : zeros({}, o);
  return where(valid, floor_divide(a, power), fill);
}

Tensor left_tensor(const Tensor& a, const Tensor& b) { return shift(a, b, true, "bitwise_left_shift"); }
Tensor right_tensor(const Tensor& a, const Tensor& b) { return shift(a, b, false, "bitwise_right_shift"); }
// A number operand is a wrapped number in PyTorch's promotion: the tensor's dtype for an integer.
Tensor wrapped(const Scalar& s, const Tensor& other) {
  return scalar_tensor(s, TensorOptions(result_type(other, s)).device(other.device()));
}
Tensor left_tensor_scalar(const Tensor& a, const Scalar& b) { return left_tensor(a, wrapped(b, a)); }
Tensor right_tensor_scalar(const Tensor& a, const Scalar& b) { return right_tensor(a, wrapped(b, a)); }
Tensor left_scalar_tensor(const Scalar& a, const Tensor& b) { return left_tensor(wrapped(a, b), b); }
Tensor right_scalar_tensor(const Scalar& a, const Tensor& b) { return right_tensor(wrapped(a, b), b); }

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::bitwise_left_shift.Tensor", kiln::detail::boxed<&left_tensor>());
  r.set_compound_kernel("aten::bitwise_left_shift.Tensor_Scalar", kiln::detail::boxed<&left_tensor_scalar>());
  r.set_compound_kernel("aten::bitwise_left_shift.Scalar_Tensor", kiln::detail::boxed<&left_scalar_tensor>());
  r.set_compound_kernel("aten::bitwise_right_shift.Tensor", kiln::detail::boxed<&right_tensor>());
  r.set_compound_kernel("aten::bitwise_right_shift.Tensor_Scalar", kiln::detail::boxed<&right_tensor_scalar>());
  r.set_compound_kernel("aten::bitwise_right_shift.Scalar_Tensor", kiln::detail::boxed<&right_scalar_tensor>());
  r.set_compound_kernel("aten::__lshift__.Tensor", kiln::detail::boxed<&left_tensor>());
  r.set_compound_kernel("aten::__lshift__.Scalar", kiln::detail::boxed<&left_tensor_scalar>());
  r.set_compound_kernel("aten::__rshift__.Tensor", kiln::detail::boxed<&right_tensor>());
  r.set_compound_kernel("aten::__rshift__.Scalar", kiln::detail::boxed<&right_tensor_scalar>());
});

}  // namespace
}  // namespace kiln::decomp
