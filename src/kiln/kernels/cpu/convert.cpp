#include "kiln/kernels/cpu/convert.h"

#include <atomic>
#include <complex>
#include <cstring>
#include <type_traits>

#include "kiln/core/float_to_int.h"
#include "kiln/kernels/cpu/pointwise_iter.h"

namespace kiln::cpu {
namespace {

template <class T>
inline constexpr bool kIsComplex = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

// Copies where either side is complex, with PyTorch's conversions: complex to complex rounds each
// part; real to complex sets the imaginary part to 0; complex to real keeps the real part (PyTorch
// warns that the imaginary part is dropped); complex to bool is "not 0 + 0j".
void copy_complex(const Tensor& dst, const Tensor& src) {
  PointwiseIter it(dst, std::span(&src, 1));
  visit_dtype_with_complex(dst.dtype(), [&]<class Out>() {
    visit_dtype_with_complex(src.dtype(), [&]<class In>() {
      pointwise_kernel<Out, In>(it, [](opmath_t<In> x) {
        if constexpr (kIsComplex<Out> && kIsComplex<In>) {
          return Out(x);
        } else if constexpr (kIsComplex<Out>) {
          return Out(static_cast<typename Out::value_type>(x), 0);
        } else if constexpr (kIsComplex<In>) {
          if constexpr (std::is_same_v<Out, bool>) {
            return x != In(0);
          } else if constexpr (std::is_integral_v<Out>) {
            return float_to_int<Out>(x.real());  // defined for NaN, infinities and out-of-range parts
          } else {
            return static_cast<opmath_t<Out>>(x.real());
          }
        } else {  // both real: copy_into handles these; instantiated only because the visitors are generic
          return static_cast<opmath_t<Out>>(x);
        }
      });
    });
  });
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  // Same dtype and both contiguous and the same size: one memcpy.
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && dst.sizes().equals(src.sizes())) {
    if (dst.data_ptr() != src.data_ptr()) {
      char* d = static_cast<char*>(dst.data_ptr());
      const char* s = static_cast<const char*>(src.data_ptr());
      parallel_for(0, static_cast<int64_t>(dst.nbytes()), kGrainSize * 16,
                   [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, static_cast<size_t>(e - b)); });
    }
    return;
  }
  if (is_complex(dst.dtype()) || is_complex(src.dtype())) return copy_complex(dst, src);
  PointwiseIter it(dst, std::span(&src, 1));
  visit_dtype(dst.dtype(), [&]<class Out>() {
    visit_dtype(src.dtype(), [&]<class In>() {
      pointwise_kernel<Out, In>(it, [](opmath_t<In> x) {
        if constexpr (std::is_same_v<Out, bool>) {
          return x != opmath_t<In>(0);
        } else if constexpr (std::is_integral_v<Out> && std::is_floating_point_v<opmath_t<In>>) {
          return float_to_int<Out>(x);  // defined for NaN, infinities and out-of-range values
        } else {
          return static_cast<opmath_t<Out>>(x);
        }
      });
    });
  });
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty_tensor(t.sizes(), dtype, t.device());
  copy_into(out, t);
  return out;
}

bool any_zero(const Tensor& t) {
  std::atomic<bool> found{false};
  PointwiseIter it(t, {});
  visit_dtype(t.dtype(), [&]<class T>() {
    it.for_each([&](char* const* data, const int64_t* strides, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        if (*reinterpret_cast<const T*>(data[0] + i * strides[0]) == T(0)) found = true;
      }
    });
  });
  return found;
}

}  // namespace kiln::cpu
