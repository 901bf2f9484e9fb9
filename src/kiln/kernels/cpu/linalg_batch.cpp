#include "kiln/kernels/cpu/linalg_batch.h"

#include <cstring>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/ops/api.h"

namespace kiln::cpu::linalg {

void check_matrix(const Tensor& a, std::string_view op, std::string_view arg, bool square) {
  KILN_CHECK(a.dim() >= 2, "{}: The input tensor {} must have at least 2 dimensions, got {}", op, arg, a.describe());
  KILN_CHECK_TYPE(a.dtype() == DType::Float32 || a.dtype() == DType::Float64,
                  "{}: Expected {} to be float32 or float64 (kiln has no low-precision or complex linear algebra), "
                  "got {}",
                  op, arg, a.describe());
  KILN_CHECK(!square || a.size(-1) == a.size(-2),
             "{}: {} must be batches of square matrices, but they are {} by {} "
             "matrices ({})",
             op, arg, a.size(-2), a.size(-1), a.describe());
}

Shape batch_of(const Tensor& a) {
  Shape batch(a.sizes());
  batch.resize(batch.size() - 2);
  return batch;
}

Shape with_matrix(IntArrayRef batch, int64_t rows, int64_t cols) {
  Shape s(batch);
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

Batch load(const Tensor& a, IntArrayRef batch) {
  Shape full = with_matrix(batch, a.size(-2), a.size(-1));
  Tensor x = to_dtype(expand(a, full).contiguous(), DType::Float64).contiguous();
  Batch out;
  out.rows = a.size(-2);
  out.cols = a.size(-1);
  out.count = 1;
  for (size_t k = 0; k + 2 < full.size(); ++k) out.count *= full[k];
  out.data.resize(static_cast<size_t>(x.numel()));
  if (x.numel() > 0) std::memcpy(out.data.data(), x.data_ptr<double>(), out.data.size() * sizeof(double));
  return out;
}

Batch zeros(int64_t count, int64_t rows, int64_t cols) {
  Batch b;
  b.count = count;
  b.rows = rows;
  b.cols = cols;
  b.data.assign(static_cast<size_t>(count * rows * cols), 0.0);
  return b;
}

Tensor allocate(IntArrayRef batch, int64_t rows, int64_t cols, DType dtype, Device device, bool fortran) {
  if (!fortran) return meta::allocate(meta::contiguous_spec(with_matrix(batch, rows, cols), dtype), device);
  Tensor t = meta::allocate(meta::contiguous_spec(with_matrix(batch, cols, rows), dtype), device);
  return transpose(t, -2, -1);
}

namespace {

// Writes `count` values of type T (Float64 or Int32) into `out`, converting them to its dtype.
template <class T>
void store_values(const T* values, size_t count, DType dtype, const Tensor& out) {
  if (out.numel() == 0) return;
  Tensor src = empty(out.sizes(), TensorOptions(dtype));
  std::memcpy(src.data_ptr<T>(), values, count * sizeof(T));
  copy_into(out, src);
}

}  // namespace

void store(const Batch& values, const Tensor& out) {
  store_values(values.data.data(), values.data.size(), DType::Float64, out);
}

void store_vector(const std::vector<double>& values, const Tensor& out) {
  store_values(values.data(), values.size(), DType::Float64, out);
}

void store_ints(const std::vector<int32_t>& values, const Tensor& out) {
  store_values(values.data(), values.size(), DType::Int32, out);
}

}  // namespace kiln::cpu::linalg
