#include "kiln/decomp/prims/promote.h"

#include <numeric>

#include "kiln/core/broadcast.h"
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/meta/scalar_range.h"
#include "kiln/ops/prims_api.h"

namespace kiln::decomp {

Tensor convert(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : prims::convert_element_type(x, dtype); }

Tensor broadcast_to(const Tensor& x, IntArrayRef shape) {
  if (x.sizes().equals(shape)) return x;
  std::vector<int64_t> dims(static_cast<size_t>(x.dim()));
  std::iota(dims.begin(), dims.end(), static_cast<int64_t>(shape.size()) - x.dim());
  return prims::broadcast_in_dim(x, shape, dims);
}

Tensor scalar_like(const Scalar& s, DType dtype, IntArrayRef shape, Device device) {
  // A wrapped number converts as a 0-d tensor of its own dtype does: an integer out of the compute
  // dtype's range wraps (int32 + 2^53 + 1), where full() would rightly refuse the value.
  Tensor zero_dim = meta::scalar_fits(s, dtype) ? prims::full({}, s, dtype, device)
                                                : convert(prims::full({}, s, s.natural_dtype(), device), dtype);
  return shape.empty() ? zero_dim : prims::broadcast_in_dim(zero_dim, shape, {});
}

Promoted promote(std::span<const Operand> operands, Promotion kind, std::string_view op, IntArrayRef extra_shape,
                 SecondScalar second) {
  ResultType rt;
  Promoted p;
  p.shape = extra_shape.shape();
  bool first = true;
  for (const Operand& o : operands) {
    if (const Tensor* t = std::get_if<Tensor>(&o)) {
      rt.add(*t);
      p.shape = broadcast_shapes(p.shape, t->sizes(), op);
      if (first) p.device = t->device();
      first = false;
    } else {
      rt.add(std::get<Scalar>(o));
    }
  }
  KILN_CHECK(!first, "{}: a pointwise op needs at least one tensor operand", op);
  DType common = rt.result();
  if (kind == Promotion::IntToFloat) common = to_float_dtype(common);
  p.result = kind == Promotion::AlwaysBool ? DType::Bool : common;
  p.compute = is_reduced_float(common) ? DType::Float32 : common;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    const Tensor* t = std::get_if<Tensor>(&o);
    // A 16-bit float common dtype: operands of other dtypes round to it before the float compute,
    // as eager's and PyTorch's casts do (bfloat16 + 257 adds 256), but see SecondScalar.
    bool exact = second == SecondScalar::Exact && i == 1 && (!t || t->numel() == 1);
    bool round = is_reduced_float(common) && !exact;
    if (t) {
      Tensor converted = convert(round ? convert(*t, common) : *t, p.compute);
      p.operands.push_back(broadcast_to(converted, p.shape));
    } else {
      const Scalar& s = std::get<Scalar>(o);
      p.operands.push_back(round ? convert(scalar_like(s, common, p.shape, p.device), p.compute)
                                 : scalar_like(s, p.compute, p.shape, p.device));
    }
  }
  return p;
}

Tensor to_result(const Tensor& x, const Promoted& p) { return convert(x, p.result); }

Tensor elementwise(std::string_view prim, std::initializer_list<Operand> operands, Promotion kind, std::string_view op,
                   SecondScalar second) {
  Promoted p = promote(std::span<const Operand>(operands.begin(), operands.size()), kind, op, {}, second);
  Tensor y;
  switch (p.operands.size()) {
    case 1: y = prims::unary(prim, p.operands[0]); break;
    case 2: y = prims::binary(prim, p.operands[0], p.operands[1]); break;
    default: KILN_FAIL(ErrorKind::Internal, "{}: elementwise prim {} with {} operands", op, prim, p.operands.size());
  }
  return kind == Promotion::AlwaysBool ? y : to_result(y, p);
}

}  // namespace kiln::decomp
