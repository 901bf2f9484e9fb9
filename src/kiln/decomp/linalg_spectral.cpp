// Linear algebra over the eigen- and singular value kernels (kernels/cpu/linalg_spectral.cpp), as
// PyTorch composes it: eigh, eigvalsh, svd, svdvals, the pseudo-inverse and the rank (with
// PyTorch's atol/rtol rule), the condition number, matrix and general norms, and the ops built of
// others (vander, tensorinv, tensorsolve, matrix_exp).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

using Svd = std::tuple<Tensor, Tensor, Tensor>;

Svd svd_of(const Tensor& a, bool full_matrices, bool compute_uv, std::optional<std::string_view> driver = {}) {
  return detail::call<Svd>(KILN_OP("aten::_linalg_svd"), a, full_matrices, compute_uv, driver);
}
std::tuple<Tensor, Tensor> eigh_of(const Tensor& a, std::string_view uplo, bool compute_v) {
  return detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::_linalg_eigh"), a, uplo, compute_v);
}
Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }
TensorOptions like(const Tensor& t, DType dtype) { return TensorOptions(dtype).device(t.device()); }

std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& a, std::string_view uplo) { return eigh_of(a, uplo, true); }
Tensor linalg_eigvalsh(const Tensor& a, std::string_view uplo) { return std::get<0>(eigh_of(a, uplo, false)); }

Svd linalg_svd(const Tensor& a, bool full_matrices, std::optional<std::string_view> driver) {
  return svd_of(a, full_matrices, true, driver);
}
Tensor linalg_svdvals(const Tensor& a, std::optional<std::string_view> driver) {
  return std::get<1>(svd_of(a, false, false, driver));
}
// torch.svd: V rather than Vh; without compute_uv, U and V are zero matrices of their full sizes.
Svd svd(const Tensor& a, bool some, bool compute_uv) {
  if (!compute_uv) {
    Tensor s = std::get<1>(svd_of(a, false, false));
    int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
    Shape us(a.sizes()), vs(a.sizes());
    us.back() = some ? k : m;
    vs[vs.size() - 2] = n;
    vs.back() = some ? k : n;
    return {zeros(us, like(a, a.dtype())), s, zeros(vs, like(a, a.dtype()))};
  }
  auto [u, s, vh] = svd_of(a, !some, true);
  return {u, s, mT(vh)};
}

double epsilon_of(DType dtype) {
  return dtype == DType::Float64 ? DBL_EPSILON : static_cast<double>(std::numeric_limits<float>::epsilon());
}

// PyTorch's atol/rtol rule: atol 0 when absent; rtol, when absent, eps * max(m, n) unless atol > 0.
std::tuple<Tensor, Tensor> tolerances(const Tensor& a, const std::optional<Tensor>& atol,
                                      const std::optional<Tensor>& rtol) {
  TensorOptions d = like(a, DType::Float64);
  Tensor at = atol ? to(*atol, DType::Float64) : zeros({}, d);
  if (rtol) return {at, to(*rtol, DType::Float64)};
  Tensor fallback = full({}, epsilon_of(a.dtype()) * static_cast<double>(std::max(a.size(-1), a.size(-2))), d);
  if (!atol) return {at, fallback};
  return {at, where(gt(at, Scalar(0)), zeros({}, d), fallback)};
}

void check_float_matrix(const Tensor& a, std::string_view op) {
  KILN_CHECK(a.dim() >= 2, "{}: The input tensor input must have at least 2 dimensions, got {}", op, a.describe());
  KILN_CHECK_TYPE(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "{}: Expected a float32 or float64 input, got {}", op, a.describe());
}

// The per-matrix threshold max(atol, rtol * largest) against which singular values count.
Tensor threshold(const Tensor& largest, const Tensor& atol, const Tensor& rtol) {
  return maximum(unsqueeze(atol, -1), mul(unsqueeze(rtol, -1), to(largest, DType::Float64)));
}

Tensor pinv_tensor(const Tensor& a, const std::optional<Tensor>& atol, const std::optional<Tensor>& rtol,
                   bool hermitian) {
  check_float_matrix(a, "linalg.pinv");
  auto [at, rt] = tolerances(a, atol, rtol);
  if (a.numel() == 0) {
    Shape s(a.sizes());
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    return zeros(s, like(a, a.dtype()));
  }
  if (hermitian) {
    auto [w, v] = eigh_of(a, "L", true);
    Tensor mag = abs(w);
    Tensor tol = threshold(amax(mag, IntArrayRef{-1}, true), at, rt);
    Tensor inv = where(gt(to(mag, DType::Float64), tol), reciprocal(w), zeros({}, like(a, a.dtype())));
    return matmul(mul(v, unsqueeze(inv, -2)), mT(v));
  }
  auto [u, s, vh] = svd_of(a, false, true);
  Tensor tol = threshold(slice(s, -1, 0, 1), at, rt);
  Tensor inv = where(gt(to(s, DType::Float64), tol), reciprocal(s), zeros({}, like(a, a.dtype())));
  return matmul(mul(mT(vh), unsqueeze(inv, -2)), mT(u));
}
Tensor scalar_tolerance(const Tensor& a, double v) { return full({}, v, like(a, DType::Float64)); }
Tensor pinv_float(const Tensor& a, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  std::optional<Tensor> at, rt;
  if (atol) at = scalar_tolerance(a, *atol);
  if (rtol) rt = scalar_tolerance(a, *rtol);
  return pinv_tensor(a, at, rt, hermitian);
}
// NumPy's rcond: a relative tolerance, the absolute one 0.
Tensor pinv_rcond(const Tensor& a, double rcond, bool hermitian) { return pinv_float(a, 0.0, rcond, hermitian); }
Tensor pinverse(const Tensor& a, double rcond) { return pinv_rcond(a, rcond, false); }
Tensor pinv_rcond_tensor(const Tensor& a, const Tensor& rcond, bool hermitian) {
  return pinv_tensor(a, scalar_tolerance(a, 0.0), rcond, hermitian);
}

Tensor rank_tensor(const Tensor& a, const std::optional<Tensor>& atol, const std::optional<Tensor>& rtol,
                   bool hermitian) {
  check_float_matrix(a, "linalg.matrix_rank");
  auto [at, rt] = tolerances(a, atol, rtol);
  Shape batch(a.sizes());
  batch.resize(batch.size() - 2);
  if (a.numel() == 0) return zeros(batch, like(a, DType::Int64));
  Tensor s = hermitian ? abs(std::get<0>(eigh_of(a, "L", false))) : std::get<1>(svd_of(a, false, false));
  Tensor largest = hermitian ? amax(s, IntArrayRef{-1}, true) : slice(s, -1, 0, 1);
  Tensor above = gt(to(s, DType::Float64), threshold(largest, at, rt));
  return sum(to(above, DType::Int64), IntArrayRef{-1});
}
Tensor rank_float(const Tensor& a, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  std::optional<Tensor> at, rt;
  if (atol) at = scalar_tolerance(a, *atol);
  if (rtol) rt = scalar_tolerance(a, *rtol);
  return rank_tensor(a, at, rt, hermitian);
}
Tensor rank_tol(const Tensor& a, double tol, bool hermitian) { return rank_float(a, tol, 0.0, hermitian); }
Tensor rank_tol_tensor(const Tensor& a, const Tensor& tol, bool hermitian) {
  return rank_tensor(a, tol, scalar_tolerance(a, 0.0), hermitian);
}

// ---- norms

// The two matrix dims, wrapped and distinct.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& a, IntArrayRef dim, std::string_view op) {
  KILN_CHECK(dim.size() == 2, "{}: dim must be a 2-tuple. Got {}", op, dim.vec());
  KILN_CHECK(a.dim() >= 2, "{}: The input tensor A must have at least 2 dimensions, got {}", op, a.describe());
  int64_t d0 = wrap_dim(dim[0], a.dim(), op), d1 = wrap_dim(dim[1], a.dim(), op);
  KILN_CHECK(d0 != d1, "{}: dims must be different. Got ({}, {})", op, dim[0], dim[1]);
  return {d0, d1};
}

// Restores the two reduced dims (kept, size 1) or drops them.
Tensor finish(const Tensor& r, int64_t d0, int64_t d1, bool keepdim) {
  if (keepdim) return r;
  return squeeze(r, std::vector<int64_t>{std::min(d0, d1), std::max(d0, d1)});
}

// Singular values of the matrices over dims (d0, d1), with those dims kept as size 1 around them.
Tensor singular_values_over(const Tensor& a, int64_t d0, int64_t d1) {
  Tensor moved = movedim(movedim(a, d0, -1), d1 > d0 ? d1 - 1 : d1, -1);  // [..., d0, d1]
  return std::get<1>(svd_of(moved, false, false));
}

Tensor matrix_norm_impl(const Tensor& self, double ord, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  constexpr std::string_view op = "linalg.matrix_norm";
  auto [d0, d1] = matrix_dims(self, dim, op);
  KILN_CHECK(ord == 2 || ord == -2 || ord == 1 || ord == -1 || std::isinf(ord), "{}: Order {} not supported.", op, ord);
  Tensor a = dtype ? to(self, *dtype) : self;
  KILN_CHECK_TYPE(is_floating(a.dtype()), "{}: Expected a floating point tensor, got {}", op, a.describe());
  if (ord == 2 || ord == -2) {
    Tensor s = singular_values_over(a, d0, d1);
    Tensor r = ord == 2 ? amax(s, IntArrayRef{-1}) : amin(s, IntArrayRef{-1});
    if (!keepdim) return r;
    return unsqueeze(unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
  }
  // 1: the largest column sum (over rows d0), inf: the largest row sum (over columns d1).
  bool columns = std::abs(ord) == 1;
  Tensor sums = sum(abs(a), IntArrayRef{columns ? d0 : d1}, true);
  Tensor r = ord > 0 ? amax(sums, IntArrayRef{columns ? d1 : d0}, true)
                     : amin(sums, IntArrayRef{columns ? d1 : d0}, true);
  return finish(r, d0, d1, keepdim);
}
Tensor matrix_norm(const Tensor& self, const Scalar& ord, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return matrix_norm_impl(self, ord.to_double(), dim, keepdim, dtype);
}
Tensor matrix_norm_str(const Tensor& self, std::string_view ord, IntArrayRef dim, bool keepdim,
                       std::optional<DType> dtype) {
  constexpr std::string_view op = "linalg.matrix_norm";
  KILN_CHECK(ord == "fro" || ord == "nuc", "{}: Order {} not supported.", op, ord);
  auto [d0, d1] = matrix_dims(self, dim, op);
  if (ord == "fro") return linalg_vector_norm(self, 2, dim, keepdim, dtype);
  Tensor a = dtype ? to(self, *dtype) : self;
  Tensor r = sum(singular_values_over(a, d0, d1), IntArrayRef{-1});
  if (!keepdim) return r;
  return unsqueeze(unsqueeze(r, std::min(d0, d1)), std::max(d0, d1));
}

std::vector<int64_t> last_two() { return {-2, -1}; }

Tensor linalg_norm(const Tensor& self, const std::optional<Scalar>& ord, std::optional<IntArrayRef> dim, bool keepdim,
                   std::optional<DType> dtype) {
  if (dim) {
    if (dim->size() == 1) return linalg_vector_norm(self, ord.value_or(Scalar(2.0)), dim, keepdim, dtype);
    if (!ord) return matrix_norm_str(self, "fro", *dim, keepdim, dtype);
    return matrix_norm(self, *ord, *dim, keepdim, dtype);
  }
  if (!ord) return linalg_vector_norm(self, 2, std::nullopt, keepdim, dtype);
  KILN_CHECK(self.dim() == 1 || self.dim() == 2,
             "linalg.norm: If dim is not specified but ord is, the input must be "
             "1D or 2D. Got {}D.",
             self.dim());
  if (self.dim() == 1) return linalg_vector_norm(self, *ord, std::nullopt, keepdim, dtype);
  return matrix_norm(self, *ord, last_two(), keepdim, dtype);
}
Tensor linalg_norm_str(const Tensor& self, std::string_view ord, std::optional<IntArrayRef> dim, bool keepdim,
                       std::optional<DType> dtype) {
  if (dim) return matrix_norm_str(self, ord, *dim, keepdim, dtype);
  KILN_CHECK(self.dim() == 2, "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.",
             self.dim());
  return matrix_norm_str(self, ord, last_two(), keepdim, dtype);
}

// ||A|| ||A^-1|| in the norm `ord` (2 and -2: the ratio of extreme singular values); inf for a
// singular matrix.
Tensor cond_of(const Tensor& a, std::optional<double> ord, std::optional<std::string_view> ord_str) {
  constexpr std::string_view op = "linalg.cond";
  check_float_matrix(a, op);
  if (!ord_str && (!ord || *ord == 2 || *ord == -2)) {
    Tensor s = std::get<1>(svd_of(a, false, false));
    if (a.numel() == 0) return sum(s, IntArrayRef{-1});
    Tensor first = select(s, -1, 0), last = select(s, -1, s.size(-1) - 1);
    return !ord || *ord == 2 ? div(first, last) : div(last, first);
  }
  KILN_CHECK(a.size(-1) == a.size(-2), "{}: A must be batches of square matrices, but they are {} by {} matrices", op,
             a.size(-2), a.size(-1));
  Shape batch(a.sizes());
  batch.resize(batch.size() - 2);
  if (a.numel() == 0) return zeros(batch, like(a, a.dtype()));
  auto [inv, info] = detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::linalg_inv_ex"), a, false);
  auto norm = [&](const Tensor& m) {
    return ord_str ? matrix_norm_str(m, *ord_str, last_two(), false, std::nullopt)
                   : matrix_norm_impl(m, *ord, last_two(), false, std::nullopt);
  };
  Tensor c = mul(norm(a), norm(inv));
  return where(gt(info, Scalar(0)), full({}, INFINITY, like(a, a.dtype())), c);
}
Tensor linalg_cond(const Tensor& a, const std::optional<Scalar>& p) {
  return cond_of(a, p ? std::optional<double>(p->to_double()) : std::nullopt, std::nullopt);
}
Tensor linalg_cond_str(const Tensor& a, std::string_view p) {
  KILN_CHECK(p == "fro" || p == "nuc", "linalg.cond got an invalid norm type: {}", p);
  return cond_of(a, std::nullopt, p);
}

// [x^0, x^1, ..., x^(N-1)] along a new last dim, products accumulated as PyTorch's cumprod.
Tensor linalg_vander(const Tensor& x, std::optional<int64_t> n) {
  KILN_CHECK_TYPE(x.dtype() != DType::Bool,
                  "linalg.vander supports floating point, complex, and integer tensors, but got Bool");
  Tensor base = x.dim() == 0 ? unsqueeze(x, 0) : x;  // a number is a vector of one
  int64_t count = n.value_or(base.size(-1));
  KILN_CHECK(count > 1, "linalg.vander: N must be greater than 1, got {}", count);
  Shape sizes(base.sizes());
  sizes.push_back(count - 1);
  Tensor powers = cumprod(expand(unsqueeze(base, -1), sizes), -1);
  Tensor one = ones_like(unsqueeze(base, -1));
  return cat(std::vector<Tensor>{to(one, powers.dtype()), powers}, -1);
}

int64_t product(IntArrayRef s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

Tensor linalg_tensorinv(const Tensor& a, int64_t ind) {
  KILN_CHECK(ind > 0, "linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {}", ind);
  KILN_CHECK(ind <= a.dim(), "linalg.tensorinv: ind ({}) exceeds the input's dims ({})", ind, a.describe());
  IntArrayRef sizes = a.sizes();
  IntArrayRef head(sizes.data(), static_cast<size_t>(ind));
  IntArrayRef tail(sizes.data() + ind, sizes.size() - static_cast<size_t>(ind));
  int64_t rows = product(head), cols = product(tail);
  KILN_CHECK(rows == cols,
             "linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
             "prod(self.shape[:ind]), but got {} != {}",
             cols, rows);
  Shape result(tail);
  for (int64_t d : head) result.push_back(d);
  return reshape(linalg_inv(reshape(a, {rows, cols})), result);
}

Tensor linalg_tensorsolve(const Tensor& a, const Tensor& b, std::optional<IntArrayRef> dims) {
  Tensor moved = a;
  if (dims) {
    std::vector<int64_t> wrapped;
    for (int64_t d : *dims) wrapped.push_back(wrap_dim(d, a.dim(), "linalg.tensorsolve"));
    std::vector<int64_t> order;
    for (int64_t d = 0; d < a.dim(); ++d)
      if (std::find(wrapped.begin(), wrapped.end(), d) == wrapped.end()) order.push_back(d);
    for (int64_t d : wrapped) order.push_back(d);
    KILN_CHECK(static_cast<int64_t>(order.size()) == a.dim(), "linalg.tensorsolve: dims {} repeat a dim of {}",
               dims->vec(), a.describe());
    moved = permute(a, order);
  }
  KILN_CHECK(b.dim() <= moved.dim(), "linalg.tensorsolve: other ({}) has more dims than self ({})", b.describe(),
             a.describe());
  IntArrayRef sizes = moved.sizes();
  IntArrayRef result(sizes.data() + b.dim(), sizes.size() - static_cast<size_t>(b.dim()));
  int64_t cols = product(result);
  KILN_CHECK(b.numel() == cols,
             "linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
             "== prod(self.shape[:other.ndim]), but got {} != {}",
             cols, b.numel());
  Tensor x = linalg_solve(reshape(moved, {b.numel(), cols}), reshape(b, {-1}), true);
  return reshape(x, Shape(result));
}

Tensor matrix_exp(const Tensor& a) { return linalg_matrix_exp(a); }

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::linalg_eigh", kiln::detail::boxed<&linalg_eigh>());
  r.set_compound_kernel("aten::linalg_eigvalsh", kiln::detail::boxed<&linalg_eigvalsh>());
  r.set_compound_kernel("aten::linalg_svd", kiln::detail::boxed<&linalg_svd>());
  r.set_compound_kernel("aten::svd", kiln::detail::boxed<&svd>());
  r.set_compound_kernel("aten::linalg_svdvals", kiln::detail::boxed<&linalg_svdvals>());
  r.set_compound_kernel("aten::linalg_pinv", kiln::detail::boxed<&pinv_rcond>());
  r.set_compound_kernel("aten::linalg_pinv.atol_rtol_float", kiln::detail::boxed<&pinv_float>());
  r.set_compound_kernel("aten::linalg_pinv.atol_rtol_tensor", kiln::detail::boxed<&pinv_tensor>());
  r.set_compound_kernel("aten::linalg_pinv.rcond_tensor", kiln::detail::boxed<&pinv_rcond_tensor>());
  r.set_compound_kernel("aten::pinverse", kiln::detail::boxed<&pinverse>());
  r.set_compound_kernel("aten::linalg_matrix_rank", kiln::detail::boxed<&rank_tol>());
  r.set_compound_kernel("aten::linalg_matrix_rank.atol_rtol_float", kiln::detail::boxed<&rank_float>());
  r.set_compound_kernel("aten::linalg_matrix_rank.atol_rtol_tensor", kiln::detail::boxed<&rank_tensor>());
  r.set_compound_kernel("aten::linalg_matrix_rank.tol_tensor", kiln::detail::boxed<&rank_tol_tensor>());
  r.set_compound_kernel("aten::linalg_cond", kiln::detail::boxed<&linalg_cond>());
  r.set_compound_kernel("aten::linalg_cond.p_str", kiln::detail::boxed<&linalg_cond_str>());
  r.set_compound_kernel("aten::linalg_matrix_norm", kiln::detail::boxed<&matrix_norm>());
  r.set_compound_kernel("aten::linalg_matrix_norm.str_ord", kiln::detail::boxed<&matrix_norm_str>());
  r.set_compound_kernel("aten::linalg_norm", kiln::detail::boxed<&linalg_norm>());
  r.set_compound_kernel("aten::linalg_norm.ord_str", kiln::detail::boxed<&linalg_norm_str>());
  r.set_compound_kernel("aten::linalg_vander", kiln::detail::boxed<&linalg_vander>());
  r.set_compound_kernel("aten::linalg_tensorinv", kiln::detail::boxed<&linalg_tensorinv>());
  r.set_compound_kernel("aten::linalg_tensorsolve", kiln::detail::boxed<&linalg_tensorsolve>());
  r.set_compound_kernel("aten::matrix_exp", kiln::detail::boxed<&matrix_exp>());
});

}  // namespace
}  // namespace kiln::decomp
