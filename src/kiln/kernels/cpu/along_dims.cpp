// CPU flip and the scans. flip copies each element from the coordinate mirrored along its dims;
// cumsum and cumprod accumulate each lane along its dim in PyTorch's CPU accumulation type (double
// for float32 and float64, float for 16-bit floats, int64 for integers, wrapping on overflow);
// logcumsumexp carries log(sum(exp)) of the lane so far, shifted by the larger operand at each step.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/meta/along_dims.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

void flip_impl(const Tensor& self, IntArrayRef dims, const Tensor& out) {
  int64_t nd = self.dim();
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims) flipped[static_cast<size_t>(wrap_dim(d, std::max<int64_t>(nd, 1), "flip"))] = true;
  auto item = static_cast<int64_t>(element_size(self.dtype()));
  const auto* from = static_cast<const char*>(self.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  for (int64_t n = 0; n < self.numel(); ++n) {
    int64_t src = 0, dst = 0;
    for (int64_t d = 0; d < nd; ++d) {
      int64_t c = coord[static_cast<size_t>(d)];
      src += (flipped[static_cast<size_t>(d)] ? self.sizes()[d] - 1 - c : c) * self.strides()[d];
      dst += c * out.strides()[d];
    }
    std::memcpy(to + dst * item, from + src * item, static_cast<size_t>(item));
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < self.sizes()[d]) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
}

template <class T>
using cumsum_acc_t = std::conditional_t<std::is_floating_point_v<opmath_t<T>>,
                                        std::conditional_t<sizeof(T) >= 4, double, float>, uint64_t>;

// Runs `step(acc, x)` along `dim` of every lane of self (in out's dtype) from `init`, writing each
// accumulated value.
template <class Step>
void scan(const Tensor& self, int64_t dim, const Tensor& out, std::string_view op, double init, Step step) {
  if (out.numel() == 0) return;
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  Tensor x = self.to(out.dtype()).contiguous();
  int64_t length = self.dim() == 0 ? 1 : self.sizes()[d], inner = 1;
  for (int64_t k = d + 1; k < self.dim(); ++k) inner *= self.sizes()[k];
  int64_t outer = x.numel() / (length * inner);
  visit_dtype(out.dtype(), [&]<class T>() {
    using A = cumsum_acc_t<T>;
    const T* src = x.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        A acc = std::is_same_v<A, uint64_t> ? A(static_cast<int64_t>(init)) : A(init);
        for (int64_t k = 0; k < length; ++k) {
          int64_t at = (o * length + k) * inner + i;
          if constexpr (std::is_same_v<A, uint64_t>) {
            acc = step(acc, static_cast<uint64_t>(static_cast<int64_t>(src[at])));  // two's complement wrap
            dst[at] = static_cast<T>(static_cast<int64_t>(acc));
          } else {
            acc = step(acc, static_cast<A>(static_cast<opmath_t<T>>(src[at])));
            dst[at] = T(static_cast<opmath_t<T>>(acc));
          }
        }
      }
    }
  });
}

void cumsum_impl(const Tensor& self, int64_t dim, std::optional<DType>, const Tensor& out) {
  scan(self, dim, out, "cumsum", 0.0, [](auto acc, auto x) { return acc + x; });
}

void cumprod_impl(const Tensor& self, int64_t dim, std::optional<DType>, const Tensor& out) {
  scan(self, dim, out, "cumprod", 1.0, [](auto acc, auto x) { return decltype(acc)(acc * x); });
}

// log(e^a + e^b) = max + log1p(e^(min - max)); -inf with -inf stays -inf, inf with inf is inf, and a
// NaN operand makes NaN (from then on, as PyTorch's).
template <class A>
A log_add_exp(A a, A b) {
  if (a != a || b != b) return a != a ? a : b;
  A hi = a > b ? a : b, lo = a > b ? b : a;
  if (lo == -std::numeric_limits<A>::infinity() || hi == std::numeric_limits<A>::infinity()) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}

void logcumsumexp_impl(const Tensor& self, int64_t dim, const Tensor& out) {
  scan(self, dim, out, "logcumsumexp", -std::numeric_limits<double>::infinity(), [](auto acc, auto x) {
    if constexpr (std::is_floating_point_v<decltype(acc)>) return log_add_exp(acc, x);
    else return acc;  // unreachable: the meta function refuses integers
  });
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_structured<&meta::flip, &flip_impl>(r, "aten::flip");
  kernels::def_structured<&meta::cumsum, &cumsum_impl>(r, "aten::cumsum");
  kernels::def_structured<&meta::cumprod, &cumprod_impl>(r, "aten::cumprod");
  kernels::def_structured<&meta::logcumsumexp, &logcumsumexp_impl>(r, "aten::logcumsumexp");
});

}  // namespace
}  // namespace kiln::cpu
