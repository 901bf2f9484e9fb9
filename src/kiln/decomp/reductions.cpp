// Compound reductions and scans PyTorch programs call and torch.export's default IR keeps (or
// run_decompositions() leaves: linalg_vector_norm): logsumexp, vector norms, argsort, diff, and
// adaptive_avg_pool2d, which is a mean over the spatial dims for a 1x1 output as in PyTorch.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// log(sum(exp(x))) along `dim`, shifted by the row's maximum (0 where that is infinite, so a row
// of -inf gives -inf and one holding +inf gives +inf). Integers compute in the default float dtype.
Tensor logsumexp_impl(const Tensor& self, IntArrayRef dim, bool keepdim) {
  Tensor x = is_floating(self.dtype()) ? self : to(self, DType::Float32);
  if (x.numel() == 0) return log(sum(exp(x), dim, keepdim));
  Tensor m = amax(x, dim, true);
  Tensor infinite = eq(abs(m), std::numeric_limits<double>::infinity());
  Tensor zero = zeros_like(m);
  m = where(infinite, zero, m);
  Tensor s = log(sum(exp(sub(x, m)), dim, keepdim));
  return add(s, keepdim ? m : dim.empty() ? squeeze(m) : squeeze(m, dim));
}

// The vector p-norm over `dim` (all dims when absent or empty): sum(|x|^p)^(1/p); p = inf and -inf
// are the largest and smallest |x|, p = 0 the count of nonzeros. Half types compute in float32.
Tensor linalg_vector_norm_impl(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim, bool keepdim,
                               std::optional<DType> dtype) {
  KILN_CHECK_TYPE(is_floating(self.dtype()),
                  "linalg.vector_norm: expected a floating point tensor as input, got {} (input {})",
                  dtype_name(self.dtype()), self.describe());
  if (dtype) {
    KILN_CHECK_TYPE(is_floating(*dtype) && promote_types(self.dtype(), *dtype) == *dtype,
                    "linalg.vector_norm: the dtype of the input ({}) should be convertible without narrowing to the "
                    "specified dtype ({})",
                    dtype_name(self.dtype()), dtype_name(*dtype));
  }
  DType out = dtype.value_or(self.dtype());
  double p = ord.to<double>();
  // No dims, or an empty list: all of them.
  std::vector<int64_t> over = dim ? dim->vec() : std::vector<int64_t>();
  bool all_dims = over.empty();
  if (all_dims) {
    for (int64_t d = 0; d < self.dim(); ++d) over.push_back(d);
  }
  if (std::isinf(p) && self.numel() == 0) {
    bool has_identity = !all_dims && std::all_of(over.begin(), over.end(), [&](int64_t d) {
      return self.size(wrap_dim(d, self.dim(), "linalg.vector_norm")) != 0;
    });
    KILN_CHECK(has_identity,
               "linalg.vector_norm cannot compute the {} norm on an empty tensor because the operation does not have "
               "an identity (input {})",
               p > 0 ? "inf" : "-inf", self.describe());
  }
  DType compute = out == DType::Float16 || out == DType::BFloat16 ? DType::Float32 : out;
  Tensor x = abs(to(self, compute));
  Tensor r;
  if (p == std::numeric_limits<double>::infinity()) r = amax(x, over, keepdim);
  else if (p == -std::numeric_limits<double>::infinity()) r = amin(x, over, keepdim);
  else if (p == 0) r = sum(to(ne(x, 0), compute), over, keepdim);
  else if (p == 1) r = sum(x, over, keepdim);
  else if (p == 2) r = sqrt(sum(mul(x, x), over, keepdim));
  else r = pow(sum(pow(x, p), over, keepdim), 1.0 / p);
  return to(r, out);
}

Tensor argsort_impl(const Tensor& self, int64_t dim, bool descending) {
  return std::get<1>(detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::sort"), self, dim, descending));
}

// The n-th forward difference along `dim` of [prepend, self, append]; logical_xor for bool.
Tensor diff_impl(const Tensor& self, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                 const std::optional<Tensor>& append) {
  KILN_CHECK(self.dim() >= 1, "diff: expects input to be at least one-dimensional, got {}", self.describe());
  KILN_CHECK(n >= 0, "diff: order must be non-negative but got {}", n);
  int64_t d = wrap_dim(dim, self.dim(), "diff");
  std::vector<Tensor> parts;
  for (const auto* t : {&prepend, &append}) {
    if (*t) {
      KILN_CHECK((*t)->dim() == self.dim(),
                 "diff: expects prepend or append to be the same dimension as input, got {} for input {}",
                 (*t)->describe(), self.describe());
    }
  }
  if (prepend) parts.push_back(*prepend);
  parts.push_back(self);
  if (append) parts.push_back(*append);
  Tensor x = parts.size() == 1 ? self : cat(parts, d);
  if (n == 0) return clone(x);
  n = std::min(n, x.size(d));
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = x.size(d) - 1;
    Tensor hi = slice(x, d, 1, 1 + len, 1), lo = slice(x, d, 0, len, 1);
    x = x.dtype() == DType::Bool ? logical_xor(hi, lo) : sub(hi, lo);
  }
  return x;
}

Tensor adaptive_avg_pool2d_impl(const Tensor& self, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2, got {}", output_size.vec());
  KILN_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
             "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {{{}, {}}}",
             output_size[0], output_size[1]);
  if (output_size[0] == 1 && output_size[1] == 1 && self.dim() >= 2) {
    return mean(self, std::vector<int64_t>{-1, -2}, true);
  }
  return _adaptive_avg_pool2d(self, output_size);
}

// The sum of a matrix's diagonal, in sum's dtype (int64 for integers and bool).
Tensor trace_impl(const Tensor& self) {
  KILN_CHECK(self.dim() == 2, "trace: expected a matrix, got {}", self.describe());
  return sum(diagonal(self));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::logsumexp", kiln::detail::boxed<&logsumexp_impl>());
  r.set_compound_kernel("aten::trace", kiln::detail::boxed<&trace_impl>());
  r.set_compound_kernel("aten::linalg_vector_norm", kiln::detail::boxed<&linalg_vector_norm_impl>());
  r.set_compound_kernel("aten::argsort", kiln::detail::boxed<&argsort_impl>());
  r.set_compound_kernel("aten::diff", kiln::detail::boxed<&diff_impl>());
  r.set_compound_kernel("aten::adaptive_avg_pool2d", kiln::detail::boxed<&adaptive_avg_pool2d_impl>());
});

}  // namespace
}  // namespace kiln::decomp
