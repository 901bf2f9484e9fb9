// LU with partial pivoting (linalg_lu_factor_ex, LAPACK getrf's conventions: 1-based int32 pivots,
// info the first zero pivot), solves with it (linalg_lu_solve), Cholesky (linalg_cholesky_ex) and
// triangular solves (linalg_solve_triangular) and solves from LDL^T factors (linalg_ldl_solve), on
// float32/float64 batches computed in double.
// Results are column-major per matrix as PyTorch's LAPACK-backed results are.
#include <cmath>
#include <utility>

#include "kiln/core/broadcast.h"
#include "kiln/kernels/cpu/linalg_batch.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

using linalg::at;
using linalg::Batch;

// Factors one rows x cols matrix in place; returns info (0, or the 1-based column of the first zero pivot).
int32_t lu_in_place(double* a, int64_t rows, int64_t cols, int32_t* pivots) {
  int32_t info = 0;
  int64_t k = std::min(rows, cols);
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < rows; ++i)
      if (std::abs(at(a, cols, i, j)) > std::abs(at(a, cols, p, j))) p = i;
    pivots[j] = static_cast<int32_t>(p + 1);
    double pivot = at(a, cols, p, j);
    if (pivot != 0) {
      if (p != j)
        for (int64_t c = 0; c < cols; ++c) std::swap(at(a, cols, p, c), at(a, cols, j, c));
      for (int64_t i = j + 1; i < rows; ++i) at(a, cols, i, j) /= pivot;
    } else if (info == 0) {
      info = static_cast<int32_t>(j + 1);
    }
    for (int64_t i = j + 1; i < rows; ++i) {
      double l = at(a, cols, i, j);
      if (l == 0) continue;
      for (int64_t c = j + 1; c < cols; ++c) at(a, cols, i, c) -= l * at(a, cols, j, c);
    }
  }
  return info;
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  constexpr std::string_view op = "linalg.lu_factor";
  linalg::check_matrix(a, op, "A", false);
  KILN_CHECK(pivot, "{}: LU without pivoting is not implemented on the CPU", op);
  Shape batch = linalg::batch_of(a);
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  Tensor lu = linalg::allocate(batch, m, n, a.dtype(), a.device(), true);
  Shape piv_shape(batch);
  piv_shape.push_back(k);
  Tensor pivots = meta::allocate(meta::contiguous_spec(piv_shape, DType::Int32), a.device());
  Tensor info = meta::allocate(meta::contiguous_spec(batch, DType::Int32), a.device());
  if (a.device().is_meta()) return {lu, pivots, info};
  Batch x = linalg::load(a, batch);
  std::vector<int32_t> piv(static_cast<size_t>(x.count * k)), infos(static_cast<size_t>(x.count));
  for (int64_t b = 0; b < x.count; ++b)
    infos[static_cast<size_t>(b)] = lu_in_place(x.matrix(b), m, n, piv.data() + b * k);
  for (size_t b = 0; b < infos.size(); ++b)
    KILN_CHECK(!check_errors || infos[b] == 0,
               "{}: (Batch element {}): U[{},{}] is zero and using it on lu_solve "
               "would result in a division by zero",
               op, b, infos[b], infos[b]);
  linalg::store(x, lu);
  linalg::store_ints(piv, pivots);
  linalg::store_ints(infos, info);
  return {lu, pivots, info};
}

// Solves op(A) X = B in place for one n x n LU (op: A, or A^T when `transposed`), B n x k.
void lu_solve_one(const double* lu, const int32_t* piv, int64_t n, double* b, int64_t k, bool transposed) {
  auto swap_rows = [&](int64_t i, int64_t j) {
    if (i != j)
      for (int64_t c = 0; c < k; ++c) std::swap(at(b, k, i, c), at(b, k, j, c));
  };
  if (!transposed) {
    for (int64_t j = 0; j < n; ++j) swap_rows(j, piv[j] - 1);
    for (int64_t i = 0; i < n; ++i)  // L y = P^T b, L unit lower
      for (int64_t j = 0; j < i; ++j)
        for (int64_t c = 0; c < k; ++c) at(b, k, i, c) -= at(lu, n, i, j) * at(b, k, j, c);
    for (int64_t i = n - 1; i >= 0; --i) {  // U x = y
      for (int64_t j = i + 1; j < n; ++j)
        for (int64_t c = 0; c < k; ++c) at(b, k, i, c) -= at(lu, n, i, j) * at(b, k, j, c);
      for (int64_t c = 0; c < k; ++c) at(b, k, i, c) /= at(lu, n, i, i);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {  // U^T y = b
    for (int64_t j = 0; j < i; ++j)
      for (int64_t c = 0; c < k; ++c) at(b, k, i, c) -= at(lu, n, j, i) * at(b, k, j, c);
    for (int64_t c = 0; c < k; ++c) at(b, k, i, c) /= at(lu, n, i, i);
  }
  for (int64_t i = n - 1; i >= 0; --i)  // L^T z = y
    for (int64_t j = i + 1; j < n; ++j)
      for (int64_t c = 0; c < k; ++c) at(b, k, i, c) -= at(lu, n, j, i) * at(b, k, j, c);
  for (int64_t j = n - 1; j >= 0; --j) swap_rows(j, piv[j] - 1);  // x = P z
}

// The transpose of each matrix of a batch.
Batch transposed(const Batch& x) {
  Batch t = linalg::zeros(x.count, x.cols, x.rows);
  for (int64_t b = 0; b < x.count; ++b)
    for (int64_t i = 0; i < x.rows; ++i)
      for (int64_t j = 0; j < x.cols; ++j) at(t.matrix(b), x.rows, j, i) = at(x.matrix(b), x.cols, i, j);
  return t;
}

// A X = B (left) or X A = B, with A = P L U given by (LU, pivots); A^T for `adjoint` (real tensors).
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  constexpr std::string_view op = "linalg.lu_solve";
  linalg::check_matrix(lu, op, "LU", true);
  KILN_CHECK(b.dim() >= 2, "{}: Expected B to have at least 2 dimensions, got {}", op, b.describe());
  KILN_CHECK_TYPE(b.dtype() == lu.dtype(),
                  "{}: Expected LU and B to have the same dtype, but found LU of type {} "
                  "and B of type {} instead",
                  op, dtype_name(lu.dtype()), dtype_name(b.dtype()));
  KILN_CHECK_TYPE(pivots.dtype() == DType::Int32, "{}: pivots should be a Tensor of scalar type int32, got {}", op,
                  pivots.describe());
  int64_t n = lu.size(-1);
  KILN_CHECK(pivots.dim() == lu.dim() - 1 && pivots.size(-1) == n,
             "{}: Expected pivots of sizes LU.shape[:-1] ({}), got {}", op, lu.describe(), pivots.describe());
  KILN_CHECK((left ? b.size(-2) : b.size(-1)) == n,
             "{}: Incompatible shapes of A and B for the equation {} "
             "({}x{} and {}x{})",
             op, left ? "AX = B" : "XA = B", n, n, b.size(-2), b.size(-1));
  Shape batch = broadcast_shapes(linalg::batch_of(lu), linalg::batch_of(b), op);
  // Column-major as PyTorch's; a right-hand solve is a left one transposed, so row-major.
  Tensor out = linalg::allocate(batch, b.size(-2), b.size(-1), b.dtype(), b.device(), left);
  if (lu.device().is_meta() || out.numel() == 0) return out;
  Batch f = linalg::load(lu, batch);
  Shape piv_batch(batch);
  piv_batch.push_back(n);
  Tensor piv = expand(pivots, piv_batch).contiguous();
  const int32_t* p = piv.data_ptr<int32_t>();
  for (int64_t i = 0; i < piv.numel(); ++i)
    KILN_CHECK_INDEX(p[i] >= 1 && p[i] <= n, "{}: pivots must be in [1, {}], got {}", op, n, p[i]);
  // X A = B is A^T X^T = B^T: solve with the other transposition on B^T.
  Batch x = left ? linalg::load(b, batch) : transposed(linalg::load(b, batch));
  bool trans = left ? adjoint : !adjoint;
  for (int64_t k = 0; k < x.count; ++k) lu_solve_one(f.matrix(k), p + k * n, n, x.matrix(k), x.cols, trans);
  linalg::store(left ? x : transposed(x), out);
  return out;
}

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& a, bool upper, bool check_errors) {
  constexpr std::string_view op = "linalg.cholesky";
  linalg::check_matrix(a, op, "A", true);
  Shape batch = linalg::batch_of(a);
  int64_t n = a.size(-1);
  Tensor l = linalg::allocate(batch, n, n, a.dtype(), a.device(), true);
  Tensor info = meta::allocate(meta::contiguous_spec(batch, DType::Int32), a.device());
  if (a.device().is_meta()) return {l, info};
  Batch x = linalg::load(a, batch);
  Batch out = linalg::zeros(x.count, n, n);
  std::vector<int32_t> infos(static_cast<size_t>(x.count), 0);
  for (int64_t b = 0; b < x.count; ++b) {
    const double* m = x.matrix(b);
    double* f = out.matrix(b);
    // The lower triangle of A (of A^T for `upper`, whose factor is then transposed back).
    auto elem = [&](int64_t i, int64_t j) { return upper ? at(m, n, j, i) : at(m, n, i, j); };
    for (int64_t j = 0; j < n && infos[static_cast<size_t>(b)] == 0; ++j) {
      double d = elem(j, j);
      for (int64_t c = 0; c < j; ++c) d -= at(f, n, j, c) * at(f, n, j, c);
      if (!(d > 0)) {
        infos[static_cast<size_t>(b)] = static_cast<int32_t>(j + 1);
        break;
      }
      double diag = std::sqrt(d);
      at(f, n, j, j) = diag;
      for (int64_t i = j + 1; i < n; ++i) {
        double s = elem(i, j);
        for (int64_t c = 0; c < j; ++c) s -= at(f, n, i, c) * at(f, n, j, c);
        at(f, n, i, j) = s / diag;
      }
    }
  }
  for (size_t b = 0; b < infos.size(); ++b)
    KILN_CHECK(!check_errors || infos[b] == 0,
               "{}: {}The factorization could not be completed because the input is "
               "not positive-definite (the leading minor of order {} is not positive-definite).",
               op, a.dim() > 2 ? fmt::format("(Batch element {}): ", b) : std::string(), infos[b]);
  linalg::store(upper ? transposed(out) : out, l);
  linalg::store_ints(infos, info);
  return {l, info};
}

// A X = B (left) or X A = B for triangular A (only its `upper` or lower triangle is read; a unit
// diagonal when `unitriangular`).
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unitriangular) {
  constexpr std::string_view op = "linalg.solve_triangular";
  linalg::check_matrix(a, op, "A", true);
  KILN_CHECK(b.dim() >= 2, "{}: The input tensor B must have at least 2 dimensions, got {}", op, b.describe());
  KILN_CHECK_TYPE(b.dtype() == a.dtype(),
                  "{}: Expected A and B to have the same dtype, but found A of type {} and "
                  "B of type {} instead",
                  op, dtype_name(a.dtype()), dtype_name(b.dtype()));
  int64_t n = a.size(-1);
  KILN_CHECK((left ? b.size(-2) : b.size(-1)) == n,
             "{}: Incompatible shapes of A and B for the equation {} "
             "({}x{} and {}x{})",
             op, left ? "AX = B" : "XA = B", n, n, b.size(-2), b.size(-1));
  Shape batch = broadcast_shapes(linalg::batch_of(a), linalg::batch_of(b), op);
  Tensor out = linalg::allocate(batch, b.size(-2), b.size(-1), b.dtype(), b.device(), true);
  if (a.device().is_meta() || out.numel() == 0) return out;
  Batch t = linalg::load(a, batch);
  // X A = B is A^T X^T = B^T, and A^T is triangular the other way.
  Batch x = left ? linalg::load(b, batch) : transposed(linalg::load(b, batch));
  bool lower = left ? !upper : upper;
  int64_t k = x.cols;
  for (int64_t m = 0; m < x.count; ++m) {
    const double* tri = t.matrix(m);
    double* v = x.matrix(m);
    auto coef = [&](int64_t i, int64_t j) { return left ? at(tri, n, i, j) : at(tri, n, j, i); };
    for (int64_t s = 0; s < n; ++s) {
      int64_t i = lower ? s : n - 1 - s;
      int64_t from = lower ? 0 : i + 1, to = lower ? i : n;
      for (int64_t j = from; j < to; ++j)
        for (int64_t c = 0; c < k; ++c) at(v, k, i, c) -= coef(i, j) * at(v, k, j, c);
      if (!unitriangular)
        for (int64_t c = 0; c < k; ++c) at(v, k, i, c) /= coef(i, i);
    }
  }
  linalg::store(left ? x : transposed(x), out);
  return out;
}

// Solves A X = B from LAPACK's LDL^T factors (linalg_ldl_factor's LD and pivots, the lower form):
// L unit lower with D's 1x1 and 2x2 blocks on the diagonal, a positive pivot a 1x1 block and its
// row swap, a negative pair a 2x2 block (LAPACK's sytrs steps). Real tensors: hermitian is the same.
Tensor ldl_solve(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool) {
  constexpr std::string_view op = "torch.linalg.ldl_solve";
  linalg::check_matrix(ld, op, "LD", true);
  KILN_CHECK(b.dim() >= 2, "{}: Expected B to have at least 2 dimensions, got {}", op, b.describe());
  KILN_CHECK_TYPE(b.dtype() == ld.dtype(), "{}: Expected LD and B to have the same dtype, got {} and {}", op,
                  dtype_name(ld.dtype()), dtype_name(b.dtype()));
  KILN_CHECK_TYPE(pivots.dtype() == DType::Int32, "{}: pivots should be int32, got {}", op, pivots.describe());
  int64_t n = ld.size(-1);
  KILN_CHECK(pivots.dim() == ld.dim() - 1 && pivots.size(-1) == n, "{}: Expected pivots of sizes LD.shape[:-1], got {}",
             op, pivots.describe());
  KILN_CHECK(b.size(-2) == n, "{}: Incompatible shapes of A and B for the equation AX = B ({}x{} and {}x{})", op, n, n,
             b.size(-2), b.size(-1));
  Shape batch = broadcast_shapes(linalg::batch_of(ld), linalg::batch_of(b), op);
  Tensor out = linalg::allocate(batch, n, b.size(-1), b.dtype(), b.device(), true);
  if (ld.device().is_meta() || out.numel() == 0) return out;
  Batch f = linalg::load(ld, batch), x = linalg::load(b, batch);
  Shape piv_batch(batch);
  piv_batch.push_back(n);
  Tensor piv = expand(pivots, piv_batch).contiguous();
  const int32_t* pp = piv.data_ptr<int32_t>();
  int64_t k = x.cols;
  for (int64_t m = 0; m < x.count; ++m) {
    const double* a = f.matrix(m);
    double* v = x.matrix(m);
    const int32_t* ip = pp + m * n;
    auto swap_rows = [&](int64_t i, int64_t j) {
      if (i != j)
        for (int64_t c = 0; c < k; ++c) std::swap(at(v, k, i, c), at(v, k, j, c));
    };
    auto row_of = [&](int32_t p) {
      int64_t r = (p > 0 ? p : -p) - 1;
      KILN_CHECK_INDEX(r >= 0 && r < n, "{}: pivot {} is out of range for {} rows", op, p, n);
      return r;
    };
    // L D Y = B, forward.
    for (int64_t i = 0; i < n;) {
      if (ip[i] > 0) {
        swap_rows(i, row_of(ip[i]));
        for (int64_t r = i + 1; r < n; ++r)
          for (int64_t c = 0; c < k; ++c) at(v, k, r, c) -= at(a, n, r, i) * at(v, k, i, c);
        for (int64_t c = 0; c < k; ++c) at(v, k, i, c) /= at(a, n, i, i);
        i += 1;
        continue;
      }
      KILN_CHECK(i + 1 < n, "{}: a 2x2 pivot block at the last row", op);
      swap_rows(i + 1, row_of(ip[i]));
      for (int64_t r = i + 2; r < n; ++r)
        for (int64_t c = 0; c < k; ++c)
          at(v, k, r, c) -= at(a, n, r, i) * at(v, k, i, c) + at(a, n, r, i + 1) * at(v, k, i + 1, c);
      double off = at(a, n, i + 1, i), d0 = at(a, n, i, i) / off, d1 = at(a, n, i + 1, i + 1) / off;
      double denom = d0 * d1 - 1;
      for (int64_t c = 0; c < k; ++c) {
        double b0 = at(v, k, i, c) / off, b1 = at(v, k, i + 1, c) / off;
        at(v, k, i, c) = (d1 * b0 - b1) / denom;
        at(v, k, i + 1, c) = (d0 * b1 - b0) / denom;
      }
      i += 2;
    }
    // L^T X = Y, backward.
    for (int64_t i = n - 1; i >= 0;) {
      auto subtract_below = [&](int64_t row, int64_t col) {
        for (int64_t r = i + 1; r < n; ++r)
          for (int64_t c = 0; c < k; ++c) at(v, k, row, c) -= at(a, n, r, col) * at(v, k, r, c);
      };
      if (ip[i] > 0) {
        subtract_below(i, i);
        swap_rows(i, row_of(ip[i]));
        i -= 1;
        continue;
      }
      KILN_CHECK(i >= 1, "{}: a 2x2 pivot block at the first row", op);
      subtract_below(i, i);
      subtract_below(i - 1, i - 1);
      swap_rows(i, row_of(ip[i]));
      i -= 2;
    }
  }
  linalg::store(x, out);
  return out;
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&lu_factor_ex>(r, "aten::linalg_lu_factor_ex");
  def_meta_and_cpu<&lu_solve>(r, "aten::linalg_lu_solve");
  def_meta_and_cpu<&cholesky_ex>(r, "aten::linalg_cholesky_ex");
  def_meta_and_cpu<&solve_triangular>(r, "aten::linalg_solve_triangular");
  def_meta_and_cpu<&ldl_solve>(r, "aten::linalg_ldl_solve");
});

}  // namespace
}  // namespace kiln::cpu
