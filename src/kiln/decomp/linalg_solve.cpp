// Linear algebra composed of the factorization kernels (kernels/cpu/linalg_*.cpp), as PyTorch
// composes it: LU (lu_factor, lu, lu_unpack, lu_solve), determinants (det, slogdet, logdet),
// inverses and solves (inv, solve, their _ex forms), Cholesky (cholesky, cholesky_solve,
// cholesky_inverse), triangular_solve and QR (qr, orgqr, ormqr). PyTorch's errors for singular or
// indefinite inputs depend on the values: kiln raises them where the values are known (eagerly);
// compiled code returns what the factorization gives (inf or NaN).
#include <cfloat>
#include <string>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

using Lu = std::tuple<Tensor, Tensor, Tensor>;

Lu lu_factor_ex(const Tensor& a, bool check_errors) {
  return detail::call<Lu>(KILN_OP("aten::linalg_lu_factor_ex"), a, true, check_errors);
}
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left = true, bool adjoint = false) {
  return detail::call<Tensor>(KILN_OP("aten::linalg_lu_solve"), lu, pivots, b, left, adjoint);
}
Tensor householder(const Tensor& a, const Tensor& tau) {
  return detail::call<Tensor>(KILN_OP("aten::linalg_householder_product"), a, tau);
}
Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }
// `t` with each matrix column-major, as PyTorch's LAPACK-backed results are laid out.
Tensor column_major(const Tensor& t) { return mT(contiguous(mT(t))); }

void check_square(const Tensor& a, std::string_view op) {
  KILN_CHECK(a.dim() >= 2, "{}: The input tensor A must have at least 2 dimensions, got {}", op, a.describe());
  KILN_CHECK(a.size(-1) == a.size(-2), "{}: A must be batches of square matrices, but they are {} by {} matrices", op,
             a.size(-2), a.size(-1));
}

// PyTorch's _linalg_check_errors, where `info` holds values (not while tracing).
void check_info(const Tensor& info, std::string_view api, bool is_matrix) {
  if (info.device().is_meta() || info.numel() == 0) return;
  Tensor flat = reshape(to(info, DType::Int64), {-1});
  Tensor bad = ne(flat, Scalar(0));
  if (!any(bad).item<bool>()) return;
  int64_t b = argmax(to(bad, DType::Int32)).item<int64_t>();
  int64_t code = select(flat, 0, b).item<int64_t>();
  std::string where = is_matrix ? "" : fmt::format(" (Batch element {})", b);
  if (api.find("inv") != std::string_view::npos)
    KILN_CHECK(false,
               "{}{}: The diagonal element {} is zero, the inversion could not be completed because the "
               "input matrix is singular.",
               api, where, code);
  if (api.find("solve") != std::string_view::npos)
    KILN_CHECK(false, "{}{}: The solver failed because the input matrix is singular.", api, where);
  if (api.find("cholesky") != std::string_view::npos)
    KILN_CHECK(false,
               "{}{}: The factorization could not be completed because the input is not positive-definite "
               "(the leading minor of order {} is not positive-definite).",
               api, where, code);
  KILN_CHECK(false, "{}{}: the factorization failed (info {})", api, where, code);
}

std::tuple<Tensor, Tensor> linalg_lu_factor(const Tensor& a, bool pivot) {
  Lu f = detail::call<Lu>(KILN_OP("aten::linalg_lu_factor_ex"), a, pivot, true);
  return {std::get<0>(f), std::get<1>(f)};
}

// (P, L, U) of a factorization: L unit lower (m x k), U upper (k x n), P the permutation the pivots'
// row swaps make (A = P L U).
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data,
                                             bool unpack_pivots) {
  KILN_CHECK(lu.dim() >= 2, "torch.lu_unpack: LU_data must have at least 2 dimensions, got {}", lu.describe());
  int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  TensorOptions o = TensorOptions(lu.dtype()).device(lu.device());
  Tensor empty0 = zeros({0}, o);
  Tensor l = empty0, u = empty0, p = empty0;
  if (unpack_data) {
    Tensor below = tril(slice(lu, -1, 0, k), -1);
    TensorOptions io = TensorOptions(DType::Int64).device(lu.device());
    Tensor eye_mk = to(eq(unsqueeze(arange(m, io), -1), arange(k, io)), lu.dtype());
    l = add(below, eye_mk);
    u = triu(slice(lu, -2, 0, k));
  }
  if (unpack_pivots) {
    KILN_CHECK_TYPE(pivots.dtype() == DType::Int32,
                    "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                    "of torch.int32 dtype, got {}",
                    pivots.describe());
    TensorOptions io = TensorOptions(DType::Int64).device(lu.device());
    Tensor idx = arange(m, io);
    Shape perm_shape(pivots.sizes());
    perm_shape.back() = m;
    Tensor perm = expand(idx, perm_shape);
    Tensor piv = sub(to(pivots, DType::Int64), Scalar(1));
    for (int64_t j = 0; j < pivots.size(-1); ++j) {  // the row swaps, in order
      Tensor target = slice(piv, -1, j, j + 1);
      Tensor here = slice(perm, -1, j, j + 1);
      Tensor there = gather(perm, -1, target);
      perm = where(eq(idx, Scalar(j)), there, where(eq(idx, target), here, perm));
    }
    // Row perm[c] of A is row c of L U: P[r][c] = (perm[c] == r).
    p = to(eq(unsqueeze(perm, -2), unsqueeze(idx, -1)), lu.dtype());
  }
  return {p, l, u};
}

Lu lu_with_info(const Tensor& a, bool pivot, bool check_errors) {
  return detail::call<Lu>(KILN_OP("aten::linalg_lu_factor_ex"), a, pivot, check_errors);
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& a, bool pivot) {
  Lu f = detail::call<Lu>(KILN_OP("aten::linalg_lu_factor_ex"), a, pivot, false);
  return lu_unpack(std::get<0>(f), std::get<1>(f), true, true);
}

Tensor lu_solve_old(const Tensor& b, const Tensor& lu, const Tensor& pivots) { return lu_solve(lu, pivots, b); }

// The permutation's sign, (-1)^(number of pivots that swap), from 1-based pivots.
Tensor permutation_sign(const Tensor& pivots, DType dtype) {
  int64_t k = pivots.size(-1);
  Tensor rows = arange(Scalar(1), Scalar(k + 1), Scalar(1), TensorOptions(DType::Int32).device(pivots.device()));
  Tensor swaps = sum(to(ne(pivots, rows), DType::Int64), IntArrayRef{-1});
  Tensor odd = remainder(swaps, Scalar(2));
  return to(add(mul(odd, Scalar(-2)), Scalar(1)), dtype);
}

std::tuple<Tensor, Tensor, Tensor> linalg_det_impl(const Tensor& a) {
  check_square(a, "linalg.det");
  auto [lu, pivots, info] = lu_factor_ex(a, false);
  Tensor diag = diagonal(lu, 0, -2, -1);
  Tensor det = mul(prod(diag, -1), permutation_sign(pivots, a.dtype()));
  return {det, lu, pivots};
}
Tensor linalg_det(const Tensor& a) { return std::get<0>(linalg_det_impl(a)); }

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_slogdet_impl(const Tensor& a) {
  check_square(a, "linalg.slogdet");
  auto [lu, pivots, info] = lu_factor_ex(a, false);
  Tensor diag = diagonal(lu, 0, -2, -1);
  Tensor sign_ = mul(prod(sign(diag), -1), permutation_sign(pivots, a.dtype()));
  Tensor logabs = sum(log(abs(diag)), IntArrayRef{-1});
  return {sign_, logabs, lu, pivots};
}
std::tuple<Tensor, Tensor> linalg_slogdet(const Tensor& a) {
  auto r = linalg_slogdet_impl(a);
  return {std::get<0>(r), std::get<1>(r)};
}
// log(det): NaN for a negative determinant, -inf for zero.
Tensor logdet(const Tensor& a) {
  auto [s, logabs, lu, pivots] = linalg_slogdet_impl(a);
  return where(eq(s, Scalar(-1)), full({}, std::nan(""), TensorOptions(a.dtype()).device(a.device())), logabs);
}

Tensor identity_like(const Tensor& a) {
  int64_t n = a.size(-1);
  TensorOptions io = TensorOptions(DType::Int64).device(a.device());
  Tensor eye = to(eq(unsqueeze(arange(n, io), -1), arange(n, io)), a.dtype());
  return expand(eye, a.sizes());
}

std::tuple<Tensor, Tensor> linalg_inv_ex(const Tensor& a, bool check_errors) {
  check_square(a, "linalg.inv");
  auto [lu, pivots, info] = lu_factor_ex(a, false);
  if (check_errors) check_info(info, "linalg.inv_ex", a.dim() == 2);
  return {lu_solve(lu, pivots, identity_like(a)), info};
}
Tensor linalg_inv(const Tensor& a) {
  auto [inv, info] = linalg_inv_ex(a, false);
  check_info(info, "linalg.inv", a.dim() == 2);
  return inv;
}

// B is a vector (or a batch of them) when it is 1-D or A's batch of vectors (PyTorch's rule).
bool vector_rhs(const Tensor& a, const Tensor& b) {
  if (b.dim() == 1) return true;
  if (b.dim() != a.dim() - 1) return false;
  Shape batch(a.sizes());
  batch.pop_back();
  return b.sizes().equals(batch);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_solve_ex_impl(const Tensor& a, const Tensor& b, bool left,
                                                                bool check_errors) {
  check_square(a, "linalg.solve");
  KILN_CHECK_TYPE(a.dtype() == b.dtype(),
                  "linalg.solve: Expected A and B to have the same dtype, but found A of type "
                  "{} and B of type {} instead",
                  dtype_name(a.dtype()), dtype_name(b.dtype()));
  bool vec = vector_rhs(a, b);
  Tensor rhs = vec ? unsqueeze(b, left ? -1 : -2) : b;
  auto [lu, pivots, info] = lu_factor_ex(a, false);
  if (check_errors) check_info(info, "linalg.solve_ex", a.dim() == 2);
  Tensor x = lu_solve(lu, pivots, rhs, left);
  return {vec ? squeeze(x, left ? -1 : -2) : x, lu, pivots, info};
}
std::tuple<Tensor, Tensor> linalg_solve_ex(const Tensor& a, const Tensor& b, bool left, bool check_errors) {
  auto r = linalg_solve_ex_impl(a, b, left, check_errors);
  return {std::get<0>(r), std::get<3>(r)};
}
Tensor linalg_solve(const Tensor& a, const Tensor& b, bool left) {
  auto r = linalg_solve_ex_impl(a, b, left, false);
  check_info(std::get<3>(r), "torch.linalg.solve", a.dim() == 2);
  return std::get<0>(r);
}

Tensor cholesky_checked(const Tensor& a, bool upper, std::string_view api) {
  auto [l, info] = detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::linalg_cholesky_ex"), a, upper, false);
  check_info(info, api, a.dim() == 2);
  return l;
}
Tensor linalg_cholesky(const Tensor& a, bool upper) { return cholesky_checked(a, upper, "linalg.cholesky"); }
Tensor cholesky(const Tensor& a, bool upper) { return cholesky_checked(a, upper, "cholesky"); }

// A^{-1} B for A = L L^T (or U^T U when `upper`), from the factor.
Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper) {
  KILN_CHECK(b.dim() >= 2 && factor.dim() >= 2,
             "cholesky_solve: expected b and the factor to have at least 2 "
             "dimensions, got {} and {}",
             b.describe(), factor.describe());
  Tensor lower = upper ? mT(factor) : factor;  // the lower factor L (read from its lower triangle)
  Tensor y = linalg_solve_triangular(lower, b, false, true, false);
  return linalg_solve_triangular(mT(lower), y, true, true, false);
}
Tensor cholesky_inverse(const Tensor& factor, bool upper) {
  check_square(factor, "cholesky_inverse");
  return cholesky_solve(identity_like(factor), factor, upper);
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& a, bool upper, bool transpose_a,
                                            bool unitriangular) {
  Tensor coef = transpose_a ? mT(a) : a;
  Tensor x = linalg_solve_triangular(coef, b, transpose_a ? !upper : upper, true, unitriangular);
  Shape batch(x.sizes());
  batch[batch.size() - 2] = a.size(-2);
  batch[batch.size() - 1] = a.size(-1);
  return {x, column_major(expand(a, batch))};
}

std::tuple<Tensor, Tensor> linalg_qr_impl(const Tensor& a, std::string_view mode) {
  KILN_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
             "qr received unrecognized mode '{}' but expected one of 'reduced' (default), 'r', or 'complete'", mode);
  KILN_CHECK(a.dim() >= 2, "linalg.qr: The input tensor A must have at least 2 dimensions, got {}", a.describe());
  auto [h, tau] = detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::geqrf"), a);
  int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  bool complete = mode == "complete";
  Tensor r = column_major(triu(complete ? h : slice(h, -2, 0, k)));
  if (mode == "r") return {zeros({0}, TensorOptions(a.dtype()).device(a.device())), r};
  Tensor v = slice(h, -1, 0, k);
  if (complete && m > k) {  // Q is m x m: the reflectors applied to every column of the identity
    Shape pad(v.sizes());
    pad.back() = m - k;
    v = cat(std::vector<Tensor>{v, zeros(pad, TensorOptions(a.dtype()).device(a.device()))}, -1);
  }
  return {householder(v, tau), r};
}
std::tuple<Tensor, Tensor> qr(const Tensor& a, bool some) { return linalg_qr_impl(a, some ? "reduced" : "complete"); }

// Q C, Q^T C, C Q or C Q^T for the full Q of (input, tau)'s reflectors.
Tensor ormqr(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose_q) {
  KILN_CHECK(input.dim() >= 2 && other.dim() >= 2,
             "torch.ormqr: input and other must have at least 2 dimensions, "
             "got {} and {}",
             input.describe(), other.describe());
  int64_t mn = input.size(-2);
  KILN_CHECK((left ? other.size(-2) : other.size(-1)) == mn,
             "torch.ormqr: other.shape[{}] must be equal to "
             "input.shape[-2] (got {} and {})",
             left ? -2 : -1, other.describe(), input.describe());
  KILN_CHECK(tau.dim() >= 1 && tau.size(-1) <= input.size(-1),
             "torch.ormqr: tau.shape[-1] must be less than or "
             "equal to input.shape[-1] (got {} and {})",
             tau.describe(), input.describe());
  int64_t k = tau.size(-1);
  Tensor v = slice(input, -1, 0, k);
  if (mn > k) {
    Shape pad(v.sizes());
    pad.back() = mn - k;
    v = cat(std::vector<Tensor>{v, zeros(pad, TensorOptions(input.dtype()).device(input.device()))}, -1);
  }
  Tensor q = householder(v, tau);
  if (transpose_q) q = mT(q);
  return column_major(left ? matmul(q, other) : matmul(other, q));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::linalg_lu_factor", kiln::detail::boxed<&linalg_lu_factor>());
  r.set_compound_kernel("aten::linalg_lu", kiln::detail::boxed<&linalg_lu>());
  r.set_compound_kernel("aten::_lu_with_info", kiln::detail::boxed<&lu_with_info>());
  r.set_compound_kernel("aten::lu_unpack", kiln::detail::boxed<&lu_unpack>());
  r.set_compound_kernel("aten::lu_solve", kiln::detail::boxed<&lu_solve_old>());
  r.set_compound_kernel("aten::_linalg_det", kiln::detail::boxed<&linalg_det_impl>());
  r.set_compound_kernel("aten::linalg_det", kiln::detail::boxed<&linalg_det>());
  r.set_compound_kernel("aten::det", kiln::detail::boxed<&linalg_det>());
  r.set_compound_kernel("aten::_linalg_slogdet", kiln::detail::boxed<&linalg_slogdet_impl>());
  r.set_compound_kernel("aten::linalg_slogdet", kiln::detail::boxed<&linalg_slogdet>());
  r.set_compound_kernel("aten::slogdet", kiln::detail::boxed<&linalg_slogdet>());
  r.set_compound_kernel("aten::logdet", kiln::detail::boxed<&logdet>());
  r.set_compound_kernel("aten::linalg_inv_ex", kiln::detail::boxed<&linalg_inv_ex>());
  r.set_compound_kernel("aten::linalg_inv", kiln::detail::boxed<&linalg_inv>());
  r.set_compound_kernel("aten::inverse", kiln::detail::boxed<&linalg_inv>());
  r.set_compound_kernel("aten::_linalg_solve_ex", kiln::detail::boxed<&linalg_solve_ex_impl>());
  r.set_compound_kernel("aten::linalg_solve_ex", kiln::detail::boxed<&linalg_solve_ex>());
  r.set_compound_kernel("aten::linalg_solve", kiln::detail::boxed<&linalg_solve>());
  r.set_compound_kernel("aten::linalg_cholesky", kiln::detail::boxed<&linalg_cholesky>());
  r.set_compound_kernel("aten::cholesky", kiln::detail::boxed<&cholesky>());
  r.set_compound_kernel("aten::cholesky_solve", kiln::detail::boxed<&cholesky_solve>());
  r.set_compound_kernel("aten::_cholesky_solve_helper", kiln::detail::boxed<&cholesky_solve>());
  r.set_compound_kernel("aten::cholesky_inverse", kiln::detail::boxed<&cholesky_inverse>());
  r.set_compound_kernel("aten::triangular_solve", kiln::detail::boxed<&triangular_solve>());
  r.set_compound_kernel("aten::linalg_qr", kiln::detail::boxed<&linalg_qr_impl>());
  r.set_compound_kernel("aten::qr", kiln::detail::boxed<&qr>());
  r.set_compound_kernel("aten::orgqr", kiln::detail::boxed<&householder>());
  r.set_compound_kernel("aten::ormqr", kiln::detail::boxed<&ormqr>());
});

}  // namespace
}  // namespace kiln::decomp
