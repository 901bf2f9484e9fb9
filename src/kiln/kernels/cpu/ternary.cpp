// CPU kernels of where, clamp and kiln::fma: pointwise ops of three operands.
#include <cmath>

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

// self * other + addend with one rounding, in the compute type (float for 16-bit floats), then
// rounded to the result's dtype: layer_norm's affine step as its kernel computes it (compiled code
// gets it from layer_norm's decomposition).
void fma_impl(const Tensor& self, const Tensor& other, const Tensor& addend, const Tensor& out) {
  DType c = out.dtype();
  const Tensor ops[] = {to_dtype(self, c), to_dtype(other, c), to_dtype(addend, c)};
  PointwiseIter it(out, ops);
  visit_floating(c, "kiln::fma", [&]<class T>() {
    using M = opmath_t<T>;
    pointwise_kernel<T, T, T, T>(it, [](M a, M b, M d) { return std::fma(a, b, d); });
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
  // A multiply-add rounded once, which no ATen op is: what layer_norm's decomposition needs for
  // its affine step to equal the kernel's (a product past the float range brought back by the
  // bias stays finite). Not a Core ATen op: the prims level has prims::fma for it.
  r.declare({"fma(Tensor self, Tensor other, Tensor addend) -> Tensor", "pointwise"}, Provenance::Native, "kiln");
  def_structured<&meta::fma, &fma_impl>(r, "kiln::fma");
});

}  // namespace
}  // namespace kiln::cpu
