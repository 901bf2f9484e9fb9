// Symmetric eigendecomposition (_linalg_eigh: cyclic Jacobi rotations, eigenvalues ascending) and
// the singular value decomposition (_linalg_svd: one-sided Jacobi, singular values descending), on
// float32/float64 batches computed in double. Eigen- and singular vectors are unique only up to
// sign (and rotation within repeated values), as LAPACK's; the values are unique.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <optional>

#include "kiln/kernels/cpu/linalg_batch.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

using linalg::at;
using linalg::Batch;

constexpr int kMaxSweeps = 64;

// The order that sorts `values` (descending or ascending; NaN last).
std::vector<int64_t> order_of(const std::vector<double>& values, bool descending) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    double x = values[static_cast<size_t>(a)], y = values[static_cast<size_t>(b)];
    if (std::isnan(y)) return !std::isnan(x);
    if (std::isnan(x)) return false;
    return descending ? x > y : x < y;
  });
  return order;
}

// Eigenvalues (ascending) and eigenvectors (columns of `vectors`) of the symmetric n x n `s`
// (overwritten).
void jacobi_eigh(double* s, int64_t n, double* values, double* vectors) {
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] = 1;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double off = 0, all = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double e = at(s, n, i, j) * at(s, n, i, j);
        all += e;
        if (i != j) off += e;
      }
    if (!(off > DBL_EPSILON * DBL_EPSILON * 1e-4 * all)) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        double apq = at(s, n, p, q);
        if (apq == 0) continue;
        double theta = (at(s, n, q, q) - at(s, n, p, p)) / (2 * apq);
        double t = std::isinf(theta * theta)
                       ? 0.5 / theta
                       : std::copysign(1.0, theta) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), sn = t * c;
        for (int64_t k = 0; k < n; ++k) {
          double kp = at(s, n, k, p), kq = at(s, n, k, q);
          at(s, n, k, p) = c * kp - sn * kq;
          at(s, n, k, q) = sn * kp + c * kq;
        }
        for (int64_t k = 0; k < n; ++k) {
          double pk = at(s, n, p, k), qk = at(s, n, q, k);
          at(s, n, p, k) = c * pk - sn * qk;
          at(s, n, q, k) = sn * pk + c * qk;
        }
        for (int64_t k = 0; k < n; ++k) {
          double kp = v[static_cast<size_t>(k * n + p)], kq = v[static_cast<size_t>(k * n + q)];
          v[static_cast<size_t>(k * n + p)] = c * kp - sn * kq;
          v[static_cast<size_t>(k * n + q)] = sn * kp + c * kq;
        }
      }
  }
  std::vector<double> diag(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) diag[static_cast<size_t>(i)] = at(s, n, i, i);
  std::vector<int64_t> order = order_of(diag, false);
  for (int64_t j = 0; j < n; ++j) {
    int64_t from = order[static_cast<size_t>(j)];
    values[j] = diag[static_cast<size_t>(from)];
    for (int64_t i = 0; i < n; ++i) at(vectors, n, i, j) = v[static_cast<size_t>(i * n + from)];
  }
}

std::tuple<Tensor, Tensor> eigh(const Tensor& a, std::string_view uplo, bool compute_v) {
  constexpr std::string_view op = "linalg.eigh";
  linalg::check_matrix(a, op, "A", true);
  KILN_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u",
             "{}: Expected UPLO argument to be 'L' or 'U', but got {}", op, uplo);
  bool upper = uplo == "U" || uplo == "u";
  Shape batch = linalg::batch_of(a);
  int64_t n = a.size(-1);
  Shape value_shape(batch);
  value_shape.push_back(n);
  Tensor values = meta::allocate(meta::contiguous_spec(value_shape, a.dtype()), a.device());
  Tensor vectors = compute_v ? linalg::allocate(batch, n, n, a.dtype(), a.device(), true)
                             : meta::allocate(meta::contiguous_spec({0}, a.dtype()), a.device());
  if (a.device().is_meta()) return {values, vectors};
  Batch x = linalg::load(a, batch);
  Batch vecs = linalg::zeros(x.count, n, n);
  std::vector<double> vals(static_cast<size_t>(x.count * n));
  std::vector<double> s(static_cast<size_t>(n * n));
  for (int64_t b = 0; b < x.count; ++b) {
    const double* m = x.matrix(b);
    for (int64_t i = 0; i < n; ++i)  // the symmetric matrix of the triangle UPLO names
      for (int64_t j = 0; j < n; ++j) {
        bool in_lower = i >= j;
        double e = in_lower != upper || i == j ? at(m, n, i, j) : at(m, n, j, i);
        s[static_cast<size_t>(i * n + j)] = e;
      }
    jacobi_eigh(s.data(), n, vals.data() + b * n, vecs.matrix(b));
  }
  linalg::store_vector(vals, values);
  if (compute_v) linalg::store(vecs, vectors);
  return {values, vectors};
}

double dot_columns(const double* u, int64_t rows, int64_t cols, int64_t p, int64_t q) {
  double s = 0;
  for (int64_t i = 0; i < rows; ++i) s += at(u, cols, i, p) * at(u, cols, i, q);
  return s;
}

// Fills `count` more orthonormal columns of the rows x total matrix `u` (row-major), after its first
// `have` columns (orthonormal already), from the standard basis by Gram-Schmidt (twice).
void complete_basis(double* u, int64_t rows, int64_t total, const std::vector<bool>& filled) {
  std::vector<double> cand(static_cast<size_t>(rows));
  int64_t next_basis = 0;
  for (int64_t j = 0; j < total; ++j) {
    if (filled[static_cast<size_t>(j)]) continue;
    for (; next_basis < rows; ++next_basis) {
      std::fill(cand.begin(), cand.end(), 0.0);
      cand[static_cast<size_t>(next_basis)] = 1;
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t c = 0; c < total; ++c) {
          if (c == j || (!filled[static_cast<size_t>(c)] && c > j)) continue;
          double d = 0;
          for (int64_t i = 0; i < rows; ++i) d += at(u, total, i, c) * cand[static_cast<size_t>(i)];
          for (int64_t i = 0; i < rows; ++i) cand[static_cast<size_t>(i)] -= d * at(u, total, i, c);
        }
      double norm = 0;
      for (double e : cand) norm += e * e;
      norm = std::sqrt(norm);
      if (norm > 0.5) {
        for (int64_t i = 0; i < rows; ++i) at(u, total, i, j) = cand[static_cast<size_t>(i)] / norm;
        ++next_basis;
        break;
      }
    }
  }
}

// The SVD of one rows x cols matrix with rows >= cols: u (rows x ucols, ucols = cols or rows),
// s (cols), v (cols x cols, the right vectors as columns).
void jacobi_svd(const double* a, int64_t rows, int64_t cols, int64_t ucols, double* u, double* s, double* v) {
  std::vector<double> w(a, a + rows * cols);
  std::vector<double> rv(static_cast<size_t>(cols * cols), 0.0);
  for (int64_t i = 0; i < cols; ++i) rv[static_cast<size_t>(i * cols + i)] = 1;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < cols; ++p)
      for (int64_t q = p + 1; q < cols; ++q) {
        double alpha = dot_columns(w.data(), rows, cols, p, p), beta = dot_columns(w.data(), rows, cols, q, q);
        double gamma = dot_columns(w.data(), rows, cols, p, q);
        if (gamma == 0 || !(std::abs(gamma) > DBL_EPSILON * std::sqrt(alpha * beta))) continue;
        rotated = true;
        double zeta = (beta - alpha) / (2 * gamma);
        double t = std::isinf(zeta * zeta) ? 0.5 / zeta
                                           : std::copysign(1.0, zeta) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        double c = 1 / std::sqrt(1 + t * t), sn = c * t;
        for (int64_t i = 0; i < rows; ++i) {
          double up = at(w.data(), cols, i, p), uq = at(w.data(), cols, i, q);
          at(w.data(), cols, i, p) = c * up - sn * uq;
          at(w.data(), cols, i, q) = sn * up + c * uq;
        }
        for (int64_t i = 0; i < cols; ++i) {
          double vp = rv[static_cast<size_t>(i * cols + p)], vq = rv[static_cast<size_t>(i * cols + q)];
          rv[static_cast<size_t>(i * cols + p)] = c * vp - sn * vq;
          rv[static_cast<size_t>(i * cols + q)] = sn * vp + c * vq;
        }
      }
    if (!rotated) break;
  }
  std::vector<double> norms(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) norms[static_cast<size_t>(j)] = std::sqrt(dot_columns(w.data(), rows, cols, j, j));
  std::vector<int64_t> order = order_of(norms, true);
  std::fill(u, u + rows * ucols, 0.0);
  std::vector<bool> filled(static_cast<size_t>(ucols), false);
  for (int64_t j = 0; j < cols; ++j) {
    int64_t from = order[static_cast<size_t>(j)];
    double sigma = norms[static_cast<size_t>(from)];
    s[j] = sigma;
    for (int64_t i = 0; i < cols; ++i) at(v, cols, i, j) = rv[static_cast<size_t>(i * cols + from)];
    if (sigma > 0 && std::isfinite(sigma)) {
      for (int64_t i = 0; i < rows; ++i) at(u, ucols, i, j) = at(w.data(), cols, i, from) / sigma;
      filled[static_cast<size_t>(j)] = true;
    } else if (std::isnan(sigma)) {
      for (int64_t i = 0; i < rows; ++i) at(u, ucols, i, j) = sigma;
      filled[static_cast<size_t>(j)] = true;
    }
  }
  complete_basis(u, rows, ucols, filled);
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices, bool compute_uv,
                                       std::optional<std::string_view> driver) {
  constexpr std::string_view op = "linalg.svd";
  linalg::check_matrix(a, op, "A", false);
  KILN_CHECK(!driver, "{}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend", op);
  Shape batch = linalg::batch_of(a);
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  Shape s_shape(batch);
  s_shape.push_back(k);
  Tensor s = meta::allocate(meta::contiguous_spec(s_shape, a.dtype()), a.device());
  Tensor empty0 = meta::allocate(meta::contiguous_spec({0}, a.dtype()), a.device());
  Tensor u = compute_uv ? linalg::allocate(batch, m, ucols, a.dtype(), a.device(), true) : empty0;
  Tensor vh = compute_uv ? linalg::allocate(batch, vrows, n, a.dtype(), a.device(), true) : empty0;
  if (a.device().is_meta()) return {u, s, vh};
  Batch x = linalg::load(a, batch);
  bool tall = m >= n;
  int64_t rows = tall ? m : n, cols = tall ? n : m;  // the tall problem: A or A^T
  int64_t tall_ucols = full_matrices ? rows : cols;
  Batch ub = linalg::zeros(x.count, m, ucols), vb = linalg::zeros(x.count, vrows, n);
  std::vector<double> sv(static_cast<size_t>(x.count * k));
  std::vector<double> t(static_cast<size_t>(rows * cols)), tu(static_cast<size_t>(rows * tall_ucols)),
      tv(static_cast<size_t>(cols * cols));
  for (int64_t b = 0; b < x.count; ++b) {
    const double* mat = x.matrix(b);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        t[static_cast<size_t>(i * cols + j)] = tall ? at(mat, n, i, j) : at(mat, n, j, i);
    jacobi_svd(t.data(), rows, cols, tall_ucols, tu.data(), sv.data() + b * k, tv.data());
    // Tall: A = TU S TV^T. Wide: A^T = TU S TV^T, so U = TV and Vh = TU^T.
    double* ud = ub.matrix(b);
    double* vd = vb.matrix(b);
    if (tall) {
      std::copy(tu.begin(), tu.end(), ud);
      for (int64_t i = 0; i < vrows; ++i)
        for (int64_t j = 0; j < n; ++j) at(vd, n, i, j) = tv[static_cast<size_t>(j * cols + i)];
    } else {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ucols; ++j) at(ud, ucols, i, j) = tv[static_cast<size_t>(i * cols + j)];
      for (int64_t i = 0; i < vrows; ++i)
        for (int64_t j = 0; j < n; ++j) at(vd, n, i, j) = tu[static_cast<size_t>(j * tall_ucols + i)];
    }
  }
  linalg::store_vector(sv, s);
  if (compute_uv) {
    linalg::store(ub, u);
    linalg::store(vb, vh);
  }
  return {u, s, vh};
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&eigh>(r, "aten::_linalg_eigh");
  def_meta_and_cpu<&svd>(r, "aten::_linalg_svd");
});

}  // namespace
}  // namespace kiln::cpu
