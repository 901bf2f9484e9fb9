#include "kiln/kernels/cpu/reduce_engine.h"

#include <algorithm>
#include <numeric>

namespace kiln::cpu {
namespace {

struct Dim {
  int64_t size, in_stride, out_stride;
};

// Sorts dims fastest first and merges neighbours that are contiguous in both input and output.
Shape merge_dims(std::vector<Dim>& dims, bool coalesce, Shape& in_strides, Shape& out_strides) {
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.in_stride < b.in_stride; });
  Shape sizes;
  for (const Dim& d : dims) {
    if (coalesce && !sizes.empty() && d.in_stride == in_strides.back() * sizes.back() &&
        d.out_stride == out_strides.back() * sizes.back()) {
      sizes.back() *= d.size;
      continue;
    }
    sizes.push_back(d.size);
    in_strides.push_back(d.in_stride);
    out_strides.push_back(d.out_stride);
  }
  return sizes;
}

}  // namespace

ReduceGeometry reduce_geometry(const Tensor& in, uint64_t mask, const Tensor& out, bool coalesce) {
  ReduceGeometry g;
  bool keepdim = out.dim() == in.dim();
  std::vector<Dim> kept, red;
  int64_t out_d = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    bool reduced = mask & (uint64_t{1} << d);
    int64_t size = in.sizes()[d];
    if (reduced) {
      if (size != 1) red.push_back({size, in.strides()[d], 0});
      if (keepdim) ++out_d;
    } else {
      if (size != 1) kept.push_back({size, in.strides()[d], out.strides()[out_d]});
      ++out_d;
    }
  }
  Shape unused;
  g.kept_sizes = merge_dims(kept, true, g.kept_in_strides, g.kept_out_strides);
  g.red_sizes = merge_dims(red, coalesce, g.red_strides, unused);
  for (int64_t s : g.kept_sizes) g.num_outputs *= s;
  for (int64_t s : g.red_sizes) g.red_numel *= s;
  if (in.numel() == 0) g.red_numel = 0;
  g.inner = g.kept_sizes.empty() || (!g.red_sizes.empty() && g.red_strides[0] < g.kept_in_strides[0]);
  return g;
}

}  // namespace kiln::cpu
