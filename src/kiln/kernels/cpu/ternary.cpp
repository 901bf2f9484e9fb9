// CPU kernels of where and clamp: pointwise ops of three operands.
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/pointwise_iter.h"
#include "kiln/kernels/meta/pointwise.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

void where_impl(const Tensor& condition, const Tensor& self, const Tensor& other, const Tensor& out) {
  const Tensor ops[] = {to_dtype(condition, DType::Bool), to_dtype(self, out.dtype()), to_dtype(other, out.dtype())};
  PointwiseIter it(out, ops);
  visit_dtype(out.dtype(), [&]<class T>() {
    using M = opmath_t<T>;
    pointwise_kernel<T, bool, T, T>(it, [](bool c, M a, M b) { return c ? a : b; });
  });
}

// NaN in the input or in a bound gives NaN; a lower bound above the upper bound gives the upper.
template <class M>
M clamp_value(M x, M lo, M hi, bool has_lo, bool has_hi) {
  if constexpr (std::is_floating_point_v<M>) {
    if (x != x) return x;
    if (has_lo && lo != lo) return lo;
    if (has_hi && hi != hi) return hi;
  }
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

void clamp_tensor_impl(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max,
                       const Tensor& out) {
  DType c = out.dtype();
  Tensor x = to_dtype(self, c);
  visit_dtype(c, [&]<class T>() {
    using M = opmath_t<T>;
    if (min && max) {
      const Tensor ops[] = {x, to_dtype(*min, c), to_dtype(*max, c)};
      PointwiseIter it(out, ops);
      pointwise_kernel<T, T, T, T>(it, [](M v, M lo, M hi) { return clamp_value(v, lo, hi, true, true); });
    } else {
      bool lower = min.has_value();
      const Tensor ops[] = {x, to_dtype(lower ? *min : *max, c)};
      PointwiseIter it(out, ops);
      pointwise_kernel<T, T, T>(it, [lower](M v, M bound) { return clamp_value(v, bound, bound, lower, !lower); });
    }
  });
}

void clamp_impl(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                const Tensor& out) {
  DType c = out.dtype();
  Tensor x = to_dtype(self, c);
  PointwiseIter it(out, std::span(&x, 1));
  visit_dtype(c, [&]<class T>() {
    using M = opmath_t<T>;
    M lo = min ? min->to<M>() : M(0);
    M hi = max ? max->to<M>() : M(0);
    bool has_lo = min.has_value(), has_hi = max.has_value();
    pointwise_kernel<T, T>(it, [=](M v) { return clamp_value(v, lo, hi, has_lo, has_hi); });
  });
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::where, &where_impl>(r, "aten::where.self");
  def_structured<&meta::clamp, &clamp_impl>(r, "aten::clamp");
  def_structured<&meta::clamp_tensor, &clamp_tensor_impl>(r, "aten::clamp.Tensor");
});

}  // namespace
}  // namespace kiln::cpu
