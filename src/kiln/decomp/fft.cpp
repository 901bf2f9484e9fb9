// torch.fft's inverse real transforms (fft_irfft, fft_irfft2, fft_irfftn) and the Hermitian forward
// ones (fft_hfft, fft_hfft2, fft_hfftn) over _fft_c2c and _fft_c2r, as PyTorch composes them: a
// real input becomes complex, each transformed dim is trimmed to its signal size (the last to
// n / 2 + 1 entries), and the norm names a normalization (inverse: "backward" divides by n,
// "forward" not at all, "ortho" by sqrt n; hfft, a forward transform, the other way round). The
// Hermitian transforms run a forward complex transform over all dims but the last, conjugate
// (_conj), and transform the last from its half spectrum. Where a signal size asks for zero
// padding, kiln refuses (no complex pad yet).
#include <numeric>
#include <optional>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// _fft_c2r's normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n.
int64_t normalization(std::optional<std::string_view> norm, bool forward, std::string_view op) {
  std::string_view n = norm.value_or("backward");
  KILN_CHECK(n == "backward" || n == "forward" || n == "ortho",
             "{}: Invalid normalization mode: \"{}\" (expected \"backward\", \"forward\" or \"ortho\")", op, n);
  if (n == "ortho") return 1;
  return (n == "backward") == forward ? 0 : 2;
}

Tensor as_complex(const Tensor& x, std::string_view op) {
  if (is_complex(x.dtype())) return x;
  KILN_CHECK_TYPE(x.dtype() != DType::Bool && x.dtype() != DType::Float16 && x.dtype() != DType::BFloat16,
                  "{}: Unsupported dtype {} (float32, float64, complex or integers, which compute in float32)", op,
                  dtype_name(x.dtype()));
  DType real = is_floating(x.dtype()) ? x.dtype() : DType::Float32;
  return to(to(x, real), *complex_of(real));
}

// `x` with dim `d` trimmed to `size` entries.
Tensor trimmed(const Tensor& x, int64_t d, int64_t size, std::string_view op) {
  KILN_CHECK(size >= 1, "{}: Invalid number of data points ({}) specified", op, size);
  KILN_CHECK_KIND(size <= x.size(d), ErrorKind::NotImplemented,
                  "{}: a signal size of {} entries along dim {} pads the input's {} with zeros, which kiln does not "
                  "do for complex tensors yet",
                  op, size, d, x.size(d));
  return size == x.size(d) ? x : slice(x, d, 0, size, 1);
}

Tensor irfftn_impl(const Tensor& self, std::optional<IntArrayRef> s, std::optional<IntArrayRef> dim,
                   std::optional<std::string_view> norm, std::string_view op, bool forward) {
  Tensor x = as_complex(self, op);
  std::vector<int64_t> dims;
  if (dim) {
    for (int64_t d : *dim) dims.push_back(wrap_dim(d, x.dim(), op));
  } else {
    int64_t count = s ? static_cast<int64_t>(s->size()) : x.dim();
    for (int64_t d = x.dim() - count; d < x.dim(); ++d) dims.push_back(d);
  }
  KILN_CHECK(!dims.empty(), "{}: must transform at least one axis", op);
  KILN_CHECK(!s || s->size() == dims.size(), "{}: When given, dim and shape arguments must have the same length", op);
  int64_t last = dims.back();
  int64_t last_size = s ? (*s)[dims.size() - 1] : 2 * (x.size(last) - 1);
  KILN_CHECK(last_size >= 1, "{}: Invalid number of data points ({}) specified", op, last_size);
  for (size_t k = 0; k + 1 < dims.size(); ++k)
    if (s && (*s)[k] != -1) x = trimmed(x, dims[k], (*s)[k], op);
  x = trimmed(x, last, last_size / 2 + 1, op);
  const int64_t normalized = normalization(norm, forward, op);
  if (forward) {  // hfft: the conjugate of the forward transform over the other dims
    if (dims.size() > 1) {
      x = detail::call<Tensor>(KILN_OP("aten::_fft_c2c"), x, IntArrayRef(dims.data(), dims.size() - 1), normalized,
                               true);
    }
    x = detail::call<Tensor>(KILN_OP("aten::_conj"), x);
    return detail::call<Tensor>(KILN_OP("aten::_fft_c2r"), x, IntArrayRef{last}, normalized, last_size);
  }
  return detail::call<Tensor>(KILN_OP("aten::_fft_c2r"), x, IntArrayRef(dims), normalized, last_size);
}

// The one-dim forms: signal size n (if given) along dim.
Tensor one_dim(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm,
               std::string_view op, bool forward) {
  std::vector<int64_t> s;
  if (n) s.push_back(*n);
  return irfftn_impl(self, n ? std::optional<IntArrayRef>(s) : std::nullopt, IntArrayRef{dim}, norm, op, forward);
}

Tensor fft_irfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  return one_dim(self, n, dim, norm, "fft_irfft", false);
}
Tensor fft_irfft2(const Tensor& self, std::optional<IntArrayRef> s, IntArrayRef dim,
                  std::optional<std::string_view> norm) {
  return irfftn_impl(self, s, dim, norm, "fft_irfft2", false);
}
Tensor fft_irfftn(const Tensor& self, std::optional<IntArrayRef> s, std::optional<IntArrayRef> dim,
                  std::optional<std::string_view> norm) {
  return irfftn_impl(self, s, dim, norm, "fft_irfftn", false);
}
Tensor fft_hfft(const Tensor& self, std::optional<int64_t> n, int64_t dim, std::optional<std::string_view> norm) {
  return one_dim(self, n, dim, norm, "fft_hfft", true);
}

Tensor fft_hfft2(const Tensor& self, std::optional<IntArrayRef> s, IntArrayRef dim,
                 std::optional<std::string_view> norm) {
  return irfftn_impl(self, s, dim, norm, "fft_hfft2", true);
}
Tensor fft_hfftn(const Tensor& self, std::optional<IntArrayRef> s, std::optional<IntArrayRef> dim,
                 std::optional<std::string_view> norm) {
  return irfftn_impl(self, s, dim, norm, "fft_hfftn", true);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::fft_irfft", kiln::detail::boxed<&fft_irfft>());
  r.set_compound_kernel("aten::fft_irfft2", kiln::detail::boxed<&fft_irfft2>());
  r.set_compound_kernel("aten::fft_irfftn", kiln::detail::boxed<&fft_irfftn>());
  r.set_compound_kernel("aten::fft_hfft", kiln::detail::boxed<&fft_hfft>());
  r.set_compound_kernel("aten::fft_hfft2", kiln::detail::boxed<&fft_hfft2>());
  r.set_compound_kernel("aten::fft_hfftn", kiln::detail::boxed<&fft_hfftn>());
});

}  // namespace
}  // namespace kiln::decomp
