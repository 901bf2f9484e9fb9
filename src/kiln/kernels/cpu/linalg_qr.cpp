// Householder QR in LAPACK's compact form (geqrf: R on and above the diagonal, the reflectors'
// vectors below it, their scales in tau), the product of those reflectors
// (linalg_householder_product, LAPACK's orgqr), and the matrix exponential (linalg_matrix_exp:
// scaling and squaring over a Taylor series), on float32/float64 batches computed in double.
#include <cmath>

#include "kiln/kernels/cpu/linalg_batch.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

using linalg::at;
using linalg::Batch;

// Reflects column j of the rows x cols `a` below the diagonal to zero (LAPACK's dlarfg): returns tau
// and leaves beta on the diagonal, the reflector's vector (its first element 1, implicit) below it.
double reflect_column(double* a, int64_t rows, int64_t cols, int64_t j) {
  double xnorm = 0;
  for (int64_t i = j + 1; i < rows; ++i) xnorm = std::hypot(xnorm, at(a, cols, i, j));
  if (xnorm == 0) return 0;
  double alpha = at(a, cols, j, j);
  double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
  double tau = (beta - alpha) / beta;
  double scale = 1 / (alpha - beta);
  for (int64_t i = j + 1; i < rows; ++i) at(a, cols, i, j) *= scale;
  at(a, cols, j, j) = beta;
  return tau;
}

// Applies H = I - tau v v^T (v from column `j` of `v_src`, rows j.. with v_j = 1) to columns
// [c0, c1) of the rows x cols `m`.
void apply_reflector(const double* v_src, int64_t v_cols, int64_t j, double tau, double* m, int64_t rows, int64_t cols,
                     int64_t c0, int64_t c1) {
  if (tau == 0) return;
  for (int64_t c = c0; c < c1; ++c) {
    double w = at(m, cols, j, c);
    for (int64_t i = j + 1; i < rows; ++i) w += at(v_src, v_cols, i, j) * at(m, cols, i, c);
    w *= tau;
    at(m, cols, j, c) -= w;
    for (int64_t i = j + 1; i < rows; ++i) at(m, cols, i, c) -= w * at(v_src, v_cols, i, j);
  }
}

std::tuple<Tensor, Tensor> geqrf(const Tensor& self) {
  constexpr std::string_view op = "geqrf";
  linalg::check_matrix(self, op, "input", false);
  Shape batch = linalg::batch_of(self);
  int64_t m = self.size(-2), n = self.size(-1), k = std::min(m, n);
  Tensor a = linalg::allocate(batch, m, n, self.dtype(), self.device(), true);
  Shape tau_shape(batch);
  tau_shape.push_back(k);
  Tensor tau = meta::allocate(meta::contiguous_spec(tau_shape, self.dtype()), self.device());
  if (self.device().is_meta()) return {a, tau};
  Batch x = linalg::load(self, batch);
  std::vector<double> taus(static_cast<size_t>(x.count * k));
  for (int64_t b = 0; b < x.count; ++b) {
    double* mat = x.matrix(b);
    for (int64_t j = 0; j < k; ++j) {
      double t = reflect_column(mat, m, n, j);
      taus[static_cast<size_t>(b * k + j)] = t;
      apply_reflector(mat, n, j, t, mat, m, n, j + 1, n);
    }
  }
  linalg::store(x, a);
  linalg::store_vector(taus, tau);
  return {a, tau};
}

// The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T with v_i in column i of `input`.
Tensor householder_product(const Tensor& input, const Tensor& tau) {
  constexpr std::string_view op = "torch.linalg.householder_product";
  linalg::check_matrix(input, op, "input", false);
  int64_t m = input.size(-2), n = input.size(-1);
  KILN_CHECK(m >= n, "{}: input.shape[-2] must be greater than or equal to input.shape[-1] (got {})", op,
             input.describe());
  KILN_CHECK(tau.dim() == input.dim() - 1, "{}: input.dim() - tau.dim() must be equal to 1 but got {} and {}", op,
             input.describe(), tau.describe());
  int64_t k = tau.dim() > 0 ? tau.size(-1) : 0;
  KILN_CHECK(n >= k, "{}: input.shape[-1] must be greater than or equal to tau.shape[-1] (got {} and {})", op,
             input.describe(), tau.describe());
  Shape batch = linalg::batch_of(input);
  Shape tau_batch(tau.sizes());
  tau_batch.pop_back();
  KILN_CHECK(IntArrayRef(tau_batch).equals(batch),
             "{}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
             "{} and {}",
             op, tau.describe(), input.describe());
  KILN_CHECK_TYPE(tau.dtype() == input.dtype(), "{}: tau dtype {} does not match input dtype {}", op,
                  dtype_name(tau.dtype()), dtype_name(input.dtype()));
  Tensor q = linalg::allocate(batch, m, n, input.dtype(), input.device(), true);
  if (input.device().is_meta() || q.numel() == 0) return q;
  Batch v = linalg::load(input, batch);
  Tensor t = to(tau, DType::Float64).contiguous();
  const double* tp = t.data_ptr<double>();
  Batch out = linalg::zeros(v.count, m, n);
  for (int64_t b = 0; b < v.count; ++b) {
    double* qm = out.matrix(b);
    for (int64_t i = 0; i < n; ++i) at(qm, n, i, i) = 1;
    for (int64_t i = k - 1; i >= 0; --i) apply_reflector(v.matrix(b), n, i, tp[b * k + i], qm, m, n, 0, n);
  }
  linalg::store(out, q);
  return q;
}

void matmul_into(const double* a, const double* b, double* c, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < n; ++l) s += at(a, n, i, l) * at(b, n, l, j);
      at(c, n, i, j) = s;
    }
}

// exp(A) = exp(A / 2^s)^(2^s), with s making the 1-norm of A / 2^s at most 1/2, where the Taylor
// series converges to double precision within 30 terms.
void matrix_exp_one(const double* a, double* e, int64_t n) {
  double norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    double col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::abs(at(a, n, i, j));
    norm = std::max(norm, col);
    if (std::isnan(col)) norm = col;
  }
  size_t nn = static_cast<size_t>(n * n);
  if (!std::isfinite(norm)) {
    std::fill(e, e + nn, std::nan(""));
    return;
  }
  int squarings = norm > 0.5 ? static_cast<int>(std::ceil(std::log2(norm / 0.5))) : 0;
  double scale = std::ldexp(1.0, -squarings);
  std::vector<double> x(nn), term(nn), next(nn);
  for (size_t i = 0; i < nn; ++i) x[i] = a[i] * scale;
  std::fill(e, e + nn, 0.0);
  for (int64_t i = 0; i < n; ++i) at(e, n, i, i) = 1;
  std::copy(e, e + nn, term.begin());
  for (int k = 1; k <= 30; ++k) {
    matmul_into(term.data(), x.data(), next.data(), n);
    double largest = 0;
    for (size_t i = 0; i < nn; ++i) {
      term[i] = next[i] / k;
      e[i] += term[i];
      largest = std::max(largest, std::abs(term[i]));
    }
    if (largest == 0) break;
  }
  for (int s = 0; s < squarings; ++s) {
    matmul_into(e, e, next.data(), n);
    std::copy(next.begin(), next.end(), e);
  }
}

Tensor matrix_exp(const Tensor& self) {
  constexpr std::string_view op = "linalg.matrix_exp";
  linalg::check_matrix(self, op, "A", true);
  Shape batch = linalg::batch_of(self);
  int64_t n = self.size(-1);
  Tensor out = linalg::allocate(batch, n, n, self.dtype(), self.device(), false);
  if (self.device().is_meta() || out.numel() == 0) return out;
  Batch x = linalg::load(self, batch);
  Batch e = linalg::zeros(x.count, n, n);
  for (int64_t b = 0; b < x.count; ++b) matrix_exp_one(x.matrix(b), e.matrix(b), n);
  linalg::store(e, out);
  return out;
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&geqrf>(r, "aten::geqrf");
  def_meta_and_cpu<&householder_product>(r, "aten::linalg_householder_product");
  def_meta_and_cpu<&matrix_exp>(r, "aten::linalg_matrix_exp");
});

}  // namespace
}  // namespace kiln::cpu
