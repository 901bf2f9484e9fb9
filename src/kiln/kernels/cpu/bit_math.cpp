// Pointwise ops that read bits or loop per element, as PyTorch's CPU kernels define them: signbit
// (the sign bit, a NaN's included), gcd and lcm of integers (Euclid on magnitudes; lcm |a / g * b|,
// 0 where g is 0), and nextafter (the next representable float from a toward b). Meta and CPU
// kernels with PyTorch's type promotion and broadcasting; compiled code calls them (extern).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// out[i] = f(a[i], b[i]) over the broadcast of `a` and `b`, both read as `in`, written as `result`.
template <class In, class Out, class F>
Tensor binary(const Tensor& a, const Tensor& b, DType in, DType result, std::string_view op, F f) {
  Tensor inputs[] = {a, b};
  meta::TensorSpec spec = meta::pointwise_spec(inputs, result, op);
  Tensor out = meta::allocate(spec, a.device());
  if (a.device().is_meta() || out.numel() == 0) return out;
  Tensor x = to_dtype(expand(a, spec.sizes).contiguous(), in).contiguous();
  Tensor y = to_dtype(expand(b, spec.sizes).contiguous(), in).contiguous();
  Tensor r = empty(spec.sizes, TensorOptions(result));
  const In* px = x.data_ptr<In>();
  const In* py = y.data_ptr<In>();
  Out* pr = r.data_ptr<Out>();
  parallel_for(0, r.numel(), kGrainSize, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) pr[i] = f(px[i], py[i]);
  });
  copy_into(out, r);
  return out;
}

Tensor signbit(const Tensor& self) {
  Tensor inputs[] = {self};
  meta::TensorSpec spec = meta::pointwise_spec(inputs, DType::Bool, "signbit");
  Tensor out = meta::allocate(spec, self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  Tensor x = self.contiguous();
  Tensor r = empty(spec.sizes, TensorOptions(DType::Bool));
  bool* pr = r.data_ptr<bool>();
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* px = x.data_ptr<T>();
    parallel_for(0, r.numel(), kGrainSize, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
          pr[i] = false;
        } else if constexpr (std::is_integral_v<T>) {
          pr[i] = px[i] < 0;
        } else {
          // The top bit of the value's bits (a NaN's sign too).
          using Bits =
              std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
          pr[i] = (std::bit_cast<Bits>(px[i]) >> (8 * sizeof(T) - 1)) != 0;
        }
      }
    });
  });
  copy_into(out, r);
  return out;
}

// The integer dtype two operands promote to; PyTorch's gcd and lcm take no floats or bools.
DType integer_result(const Tensor& a, const Tensor& b, std::string_view op) {
  DType t = result_type(a, b);
  KILN_CHECK_TYPE(!is_floating(t) && t != DType::Bool, "{}: \"{}_cpu\" not implemented for '{}'", op, op,
                  dtype_name(t));
  return t;
}

template <class T>
T gcd_of(T a, T b) {
  using U = std::make_unsigned_t<T>;
  U x = a < 0 ? U(0) - U(a) : U(a), y = b < 0 ? U(0) - U(b) : U(b);
  while (x != 0) {
    U c = x;
    x = y % x;
    y = c;
  }
  return T(y);
}

template <class T>
T lcm_of(T a, T b) {
  T g = gcd_of(a, b);
  if (g == 0) return 0;
  using U = std::make_unsigned_t<T>;
  U product = U(U(a / g) * U(b));  // wraps, as PyTorch's does
  T v = T(product);
  return v < 0 ? T(U(0) - U(v)) : v;
}

template <bool Lcm>
Tensor gcd_lcm(const Tensor& a, const Tensor& b) {
  constexpr std::string_view op = Lcm ? "lcm" : "gcd";
  DType t = integer_result(a, b, op);
  return visit_dtype(t, [&]<class T>() -> Tensor {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return binary<T, T>(a, b, t, t, op, [](T x, T y) { return Lcm ? lcm_of(x, y) : gcd_of(x, y); });
    } else {
      KILN_FAIL(ErrorKind::Internal, "{}: not an integer dtype", op);
    }
  });
}

Tensor nextafter(const Tensor& a, const Tensor& b) {
  DType t = result_type(a, b);
  KILN_CHECK_TYPE(t == DType::Float32 || t == DType::Float64, "nextafter: \"nextafter_cpu\" not implemented for '{}'",
                  dtype_name(t));
  if (t == DType::Float32)
    return binary<float, float>(a, b, t, t, "nextafter", [](float x, float y) { return std::nextafter(x, y); });
  return binary<double, double>(a, b, t, t, "nextafter", [](double x, double y) { return std::nextafter(x, y); });
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&signbit>(r, "aten::signbit");
  def_meta_and_cpu<&gcd_lcm<false>>(r, "aten::gcd");
  def_meta_and_cpu<&gcd_lcm<true>>(r, "aten::lcm");
  def_meta_and_cpu<&nextafter>(r, "aten::nextafter");
});

}  // namespace
}  // namespace kiln::cpu
