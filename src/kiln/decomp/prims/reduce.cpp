// Core ATen -> Prims for reductions (keepdim becomes a broadcast_in_dim after the prim; mean is a
// sum and a division; any a count of nonzero elements; 16-bit floats compute in float32) and for addmm (the mm stays
// whole, in float32 for 16-bit floats; its scaling and bias become prims).
#include "kiln/kernels/meta/reduce.h"
#include "kiln/decomp/prims/promote.h"
#include "kiln/decomp/prims/table.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/prims_api.h"

namespace kiln::decomp {
namespace {

struct Reduction {
  std::vector<int64_t> dims;  // the reduced dims, ascending
  uint64_t mask = 0;
  int64_t count = 1;  // elements reduced into each output
};

Reduction reduction_of(const Tensor& self, std::optional<IntArrayRef> dim, std::string_view op) {
  Reduction r;
  r.mask = meta::reduction_mask(dim, self.dim(), op);
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!(r.mask & (uint64_t{1} << d))) continue;
    r.dims.push_back(d);
    r.count *= self.sizes()[d];
  }
  return r;
}

// The prim reduction of `x` over r.dims (all dims of a 0-d tensor: none).
Tensor reduce(std::string_view prim, const Tensor& x, const Reduction& r) {
  if (x.dim() == 0) return prims::reduce(prim, x, std::nullopt);
  return prims::reduce(prim, x, IntArrayRef(r.dims));
}

// With keepdim, the reduced dims come back as size 1.
Tensor keep_dims(const Tensor& y, const Tensor& self, const Reduction& r, bool keepdim) {
  if (!keepdim || self.dim() == 0) return y;
  Shape shape = meta::reduced_sizes(self.sizes(), r.mask, true);
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!(r.mask & (uint64_t{1} << d))) kept.push_back(d);
  }
  return prims::broadcast_in_dim(y, shape, kept);
}

DType compute_dtype(DType d) { return is_reduced_float(d) ? DType::Float32 : d; }

Tensor sum_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  DType out = meta::sum_dtype(self.dtype(), dtype);
  Reduction r = reduction_of(self, dim, "sum");
  Tensor x = convert(self, compute_dtype(out));
  Tensor y = convert(reduce("sum", x, r), out);
  return keep_dims(y, self, r, keepdim);
}

Tensor mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  meta::mean_dim(self, dim, keepdim, dtype);  // the same argument checks as the kernel
  DType out = dtype.value_or(self.dtype());
  Reduction r = reduction_of(self, dim, "mean");
  DType compute = compute_dtype(out);
  Tensor total = reduce("sum", convert(self, compute), r);
  Tensor count = scalar_like(r.count, compute, total.sizes(), total.device());
  Tensor y = convert(prims::div(total, count), out);
  return keep_dims(y, self, r, keepdim);
}

Tensor mean(const Tensor& self, std::optional<DType> dtype) { return mean_dim(self, std::nullopt, false, dtype); }

Tensor extremum(const Tensor& self, IntArrayRef dim, bool keepdim, std::string_view prim) {
  if (prim == "amax") {
    meta::amax(self, dim, keepdim);
  } else {
    meta::amin(self, dim, keepdim);
  }
  Reduction r = reduction_of(self, dim, prim);
  return keep_dims(reduce(prim, self, r), self, r, keepdim);
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) { return extremum(self, dim, keepdim, "amax"); }
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) { return extremum(self, dim, keepdim, "amin"); }

Tensor variance(const Tensor& self, const Reduction& r, const std::optional<Scalar>& correction, bool keepdim) {
  DType compute = compute_dtype(self.dtype());
  Tensor x = convert(self, compute);
  double c = correction ? correction->to<double>() : 1.0;
  Tensor v = self.dim() == 0 ? prims::var(x, std::nullopt, c) : prims::var(x, IntArrayRef(r.dims), c);
  return keep_dims(convert(v, self.dtype()), self, r, keepdim);
}

Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction, bool keepdim) {
  meta::var_correction(self, dim, correction, keepdim);
  return variance(self, reduction_of(self, dim, "var"), correction, keepdim);
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    const std::optional<Scalar>& correction, bool keepdim) {
  meta::var_mean(self, dim, correction, keepdim);
  Tensor v = variance(self, reduction_of(self, dim, "var_mean"), correction, keepdim);
  Tensor m = mean_dim(self, dim, keepdim, std::nullopt);
  return {v, m};
}

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  DType out = meta::sum_dtype(self.dtype(), dtype);
  Reduction r = reduction_of(self, IntArrayRef(dim), "prod");
  Tensor y = convert(reduce("prod", convert(self, compute_dtype(out)), r), out);
  return keep_dims(y, self, r, keepdim);
}

Tensor prod(const Tensor& self, std::optional<DType> dtype) {
  DType out = meta::sum_dtype(self.dtype(), dtype);
  Tensor x = convert(self, compute_dtype(out));
  return convert(prims::prod(x, std::nullopt), out);
}

bool is_one(const Scalar& s) { return s.to<double>() == 1.0; }

// var.dim: var with correction 1 (unbiased) or 0.
Tensor var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return decomp::var(self, dim, std::optional<Scalar>(Scalar(unbiased ? 1 : 0)), keepdim);
}

// any: whether some element is nonzero (NaN is), as a sum of the nonzero flags compared with 0;
// bool, or uint8 for a uint8 input.
Tensor any_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  meta::TensorSpec spec = meta::any_dims(self, dim, keepdim);
  Reduction r = reduction_of(self, dim, "any");
  Tensor nonzero = prims::ne(self, scalar_like(0, self.dtype(), self.sizes(), self.device()));
  Tensor count = reduce("sum", convert(nonzero, DType::Int64), r);
  Tensor found = prims::ne(count, scalar_like(0, DType::Int64, count.sizes(), count.device()));
  return keep_dims(convert(found, spec.dtype), self, r, keepdim);
}
Tensor any_dim(const Tensor& self, int64_t dim, bool keepdim) { return any_dims(self, IntArrayRef(dim), keepdim); }
Tensor any_all(const Tensor& self) { return any_dims(self, std::nullopt, false); }

// 16-bit floats: the product is computed in float32 (products of 16-bit values are exact there;
// aten::mm.dtype, whose GPU GEMM reads the 16-bit inputs as they are) and rounded once, with the bias, as eager's
// kernel and PyTorch's compute addmm: a product rounded to 16 bits before a bias that cancels it would carry that
// rounding into a far smaller sum (float16 -0.3809 for -0.3799, 4 ulps).
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  bool reduced = is_reduced_float(mat1.dtype());
  Tensor product = reduced ? mm(mat1, mat2, DType::Float32) : mm(mat1, mat2);
  Operand operands[] = {self};  // of mat1's dtype (meta::addmm checks)
  Promoted p = promote(operands, Promotion::Default, "aten::addmm", product.sizes());
  Tensor scaled = convert(product, p.compute);
  if (!is_one(alpha)) scaled = prims::mul(scaled, scalar_like(alpha, p.compute, p.shape, p.device));
  // beta == 0 ignores self entirely (NaN and inf in it included), as PyTorch does.
  if (beta.to<double>() == 0.0) return to_result(scaled, p);
  Tensor bias = p.operands[0];
  if (!is_one(beta)) bias = prims::mul(bias, scalar_like(beta, p.compute, p.shape, p.device));
  return to_result(prims::add(scaled, bias), p);
}

}  // namespace

void add_reduction_prims(DecompositionMap& t, const Registry& r) {
  using kiln::detail::boxed;
  t[r.get("aten::sum.dim_IntList")] = boxed<&sum_dim>();
  t[r.get("aten::mean.dim")] = boxed<&mean_dim>();
  t[r.get("aten::mean")] = boxed<&mean>();
  t[r.get("aten::amax")] = boxed<&amax>();
  t[r.get("aten::amin")] = boxed<&amin>();
  t[r.get("aten::var.correction")] = boxed<&var>();
  t[r.get("aten::var.dim")] = boxed<&var_dim>();
  t[r.get("aten::var_mean.correction")] = boxed<&var_mean>();
  t[r.get("aten::prod.dim_int")] = boxed<&prod_dim>();
  t[r.get("aten::prod")] = boxed<&prod>();
  t[r.get("aten::addmm")] = boxed<&addmm>();
  t[r.get("aten::any")] = boxed<&any_all>();
  t[r.get("aten::any.dim")] = boxed<&any_dim>();
  t[r.get("aten::any.dims")] = boxed<&any_dims>();
}

}  // namespace kiln::decomp
