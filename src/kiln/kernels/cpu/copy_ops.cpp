// CPU kernels of copies, fills, cat and the factories that fill their output (device_copy.cpp: the
// copies across devices and the factories that only allocate).
#include <cmath>
#include <complex>
#include <type_traits>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/pointwise_iter.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/meta/scalar_range.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// A complex element from a real Scalar: the value with imaginary part 0.
template <class T>
T scalar_as(const Scalar& value) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return T(static_cast<typename T::value_type>(value.to<double>()), 0);
  } else {
    return value.to<T>();
  }
}

void fill_with(const Tensor& out, const Scalar& value) {
  PointwiseIter it(out, {});
  visit_dtype_with_complex(out.dtype(), [&]<class T>() {
    T v = scalar_as<T>(value);
    it.for_each([&](char* const* data, const int64_t* strides, int64_t n) {
      if (strides[0] == static_cast<int64_t>(sizeof(T))) {
        T* p = reinterpret_cast<T*>(data[0]);
        for (int64_t i = 0; i < n; ++i) p[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * strides[0]) = v;
      }
    });
  });
}

void full_impl(IntArrayRef, const Scalar& value, std::optional<DType>, std::optional<Layout>, std::optional<Device>,
               std::optional<bool>, const Tensor& out) {
  fill_with(out, value);
}
void full_like_impl(const Tensor&, const Scalar& value, std::optional<DType>, std::optional<Layout>,
                    std::optional<Device>, std::optional<bool>, std::optional<MemoryFormat>, const Tensor& out) {
  fill_with(out, value);
}
void scalar_tensor_impl(const Scalar& s, std::optional<DType>, std::optional<Layout>, std::optional<Device>,
                        std::optional<bool>, const Tensor& out) {
  fill_with(out, s);
}
void fill_impl(const Tensor&, const Scalar& value, const Tensor& out) { fill_with(out, value); }

// start + i * step in arange's compute dtype (int64, float or double), then cast to the output's.
void arange_impl(const Scalar& start, const Scalar&, const Scalar& step, std::optional<DType>, std::optional<Layout>,
                 std::optional<Device>, std::optional<bool>, const Tensor& out) {
  visit_dtype(out.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using A = std::conditional_t<std::is_integral_v<T>, int64_t,
                                   std::conditional_t<std::is_same_v<opmath_t<T>, T>, double, float>>;
      A s = start.to<A>(), st = step.to<A>();
      T* p = out.data_ptr<T>();
      parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        if constexpr (std::is_integral_v<T>) {
          // Wrapping arithmetic: values past the dtype's range wrap as PyTorch's do.
          for (int64_t i = b; i < e; ++i) {
            p[i] = static_cast<T>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(st));
          }
        } else {
          // i * step + start rounded once, as compiled code computes it (decomp/prims/shape.cpp).
          for (int64_t i = b; i < e; ++i) p[i] = T(std::fma(st, static_cast<A>(i), s));
        }
      });
    }
  });
}

void clone_impl(const Tensor& self, std::optional<MemoryFormat>, const Tensor& out) { copy_into(out, self); }
void copy_impl(const Tensor&, const Tensor& src, bool, const Tensor& out) { copy_into(out, src); }

void cat_impl(std::span<const Tensor> tensors, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  int64_t d = wrap_dim(dim, out.dim(), "cat");
  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    int64_t n = t.sizes()[d];
    Shape sizes = out.sizes().shape();
    sizes[d] = n;
    Tensor dst = out.view_with(sizes, out.strides(), out.storage_offset() + offset * out.strides()[d]);
    copy_into(dst, t);
    offset += n;
  }
}

// self with one view of it replaced by src (out is a fresh tensor shaped like self).
void slice_scatter_impl(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                        std::optional<int64_t> end, int64_t step, const Tensor& out) {
  copy_into(out, self);
  copy_into(kiln::slice(out, dim, start, end, step), src);
}
void select_scatter_impl(const Tensor& self, const Tensor& src, int64_t dim, int64_t index, const Tensor& out) {
  copy_into(out, self);
  copy_into(kiln::select(out, dim, index), src);
}

// ---- Kernels that are not structured (their output is an input, or not a tensor).

Tensor fill_inplace(const Tensor& self, const Scalar& value) {
  meta::check_scalar_fits(value, self.dtype(), "fill_", "value");
  if (!self.device().is_meta()) fill_with(self, value);
  return self;
}

Tensor zero_inplace(const Tensor& self) { return fill_inplace(self, 0); }

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::full, &full_impl>(r, "aten::full");
  def_structured<&meta::full_like, &full_like_impl>(r, "aten::full_like");
  def_structured<&meta::scalar_tensor, &scalar_tensor_impl>(r, "aten::scalar_tensor");
  def_structured<&meta::arange, &arange_impl>(r, "aten::arange.start_step");
  def_structured<&meta::clone, &clone_impl>(r, "aten::clone");
  def_structured<&meta::copy, &copy_impl>(r, "aten::copy");
  def_structured<&meta::fill, &fill_impl>(r, "aten::fill.Scalar");
  def_structured<&meta::cat, &cat_impl>(r, "aten::cat");
  def_structured<&meta::slice_scatter, &slice_scatter_impl>(r, "aten::slice_scatter");
  def_structured<&meta::select_scatter, &select_scatter_impl>(r, "aten::select_scatter");
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::Meta}) {
    r.set_kernel("aten::fill_.Scalar", k, kiln::detail::boxed<&fill_inplace>());
    r.set_kernel("aten::zero_", k, kiln::detail::boxed<&zero_inplace>());
  }
});

}  // namespace
}  // namespace kiln::cpu
