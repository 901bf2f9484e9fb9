// CPU gather and scatter (scatter_add, scatter.value) along one dim: they walk the index tensor in
// row-major order; the element at an index coordinate pairs with the coordinate whose `dim` entry
// is the index value. index_select copies whole slices.
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/nn.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// Calls f(index value, offset of the coordinate in `along` with dim replaced by the value, offset
// of the coordinate itself in `at`) for every coordinate of `index`. Offsets are in elements from
// each tensor's data pointer; index values are checked against along's size at dim.
template <class I, class F>
void walk_index_of(const Tensor& index, int64_t dim, const Tensor& along, const Tensor& at, std::string_view op,
                   const F& f) {
  int64_t nd = index.dim();
  const I* idx = index.data_ptr<I>();
  int64_t size = along.dim() == 0 ? 1 : along.sizes()[dim];
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  for (int64_t linear = 0; linear < index.numel(); ++linear) {
    int64_t index_offset = 0, along_offset = 0, at_offset = 0;
    for (int64_t d = 0; d < nd; ++d) {
      int64_t c = coord[static_cast<size_t>(d)];
      index_offset += c * index.strides()[d];
      if (d != dim && along.dim() > 0) along_offset += c * along.strides()[d];
      if (at.dim() > 0) at_offset += c * at.strides()[d];
    }
    auto i = static_cast<int64_t>(idx[index_offset]);
    KILN_CHECK_INDEX(i >= 0 && i < size, "{}: index {} is out of bounds for dimension {} with size {}", op, i, dim,
                     size);
    if (along.dim() > 0) along_offset += i * along.strides()[dim];
    f(along_offset, at_offset);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++coord[static_cast<size_t>(d)] < index.sizes()[d]) break;
      coord[static_cast<size_t>(d)] = 0;
    }
  }
}

// Index values are int64 or int32 (PyTorch accepts both).
template <class F>
void walk_index(const Tensor& index, int64_t dim, const Tensor& along, const Tensor& at, std::string_view op,
                const F& f) {
  if (index.numel() == 0) return;
  if (index.dtype() == DType::Int32) return walk_index_of<int32_t>(index, dim, along, at, op, f);
  walk_index_of<int64_t>(index, dim, along, at, op, f);
}

void gather_impl(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/, const Tensor& out) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "gather");
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* src = self.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    walk_index(index, d, self, out, "gather", [&](int64_t from, int64_t to) { dst[to] = src[from]; });
  });
}

void scatter_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "scatter");
  copy_into(out, self);
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* from = src.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    walk_index(index, d, out, src, "scatter", [&](int64_t to, int64_t at) { dst[to] = from[at]; });
  });
}

void scatter_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "scatter_add");
  copy_into(out, self);
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* from = src.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    walk_index(index, d, out, src, "scatter_add", [&](int64_t to, int64_t at) {
      if constexpr (std::is_same_v<T, bool>) dst[to] = dst[to] || from[at];
      else dst[to] = T(wrapping_add(opmath_t<T>(dst[to]), opmath_t<T>(from[at])));
    });
  });
}

void scatter_value_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, const Tensor& out) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "scatter");
  copy_into(out, self);
  visit_dtype(self.dtype(), [&]<class T>() {
    T v = value.to<T>();
    T* dst = out.data_ptr<T>();
    walk_index(index, d, out, out, "scatter", [&](int64_t to, int64_t) { dst[to] = v; });
  });
}

// out = self with src reduced into the positions `index` names; with include_self false a named
// position starts from the reduction's identity instead of self. mean divides by the count (floor
// division for integers); amax/amin propagate NaN.
void scatter_reduce_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         std::string_view reduce, bool include_self, const Tensor& out) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "scatter_reduce");
  copy_into(out, self);
  std::vector<int64_t> count(static_cast<size_t>(out.numel()), include_self ? 1 : 0);
  std::vector<bool> touched(static_cast<size_t>(out.numel()), false);
  visit_dtype(self.dtype(), [&]<class T>() {
    // bool reduces as integers: sum and amax are or, prod and amin are and.
    using M = std::conditional_t<std::is_same_v<T, bool>, int64_t, opmath_t<T>>;
    const T* from = src.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    auto nan = [](M v) {
      if constexpr (std::is_floating_point_v<M>) return std::isnan(v);
      return false;
    };
    walk_index(index, d, out, src, "scatter_reduce", [&](int64_t to, int64_t at) {
      auto t = static_cast<size_t>(to);
      M cur = M(dst[to]), v = M(from[at]);
      if (!include_self && !touched[t]) {
        touched[t] = true;
        cur = reduce == "prod"   ? M(1)
              : reduce == "amax" ? (std::numeric_limits<M>::has_infinity ? -std::numeric_limits<M>::infinity()
                                                                         : std::numeric_limits<M>::lowest())
              : reduce == "amin" ? (std::numeric_limits<M>::has_infinity ? std::numeric_limits<M>::infinity()
                                                                         : std::numeric_limits<M>::max())
                                 : M(0);
      }
      touched[t] = true;
      ++count[t];
      if (reduce == "sum" || reduce == "mean") cur = wrapping_add(cur, v);
      else if (reduce == "prod") cur = wrapping_mul(cur, v);
      else if (reduce == "amax") cur = nan(v) || nan(cur) ? (nan(cur) ? cur : v) : std::max(cur, v);
      else cur = nan(v) || nan(cur) ? (nan(cur) ? cur : v) : std::min(cur, v);
      dst[to] = static_cast<T>(cur);
    });
    if (reduce != "mean") return;
    for (size_t k = 0; k < count.size(); ++k) {
      if (!touched[k] || count[k] == 0) continue;
      M total = M(dst[k]), n = M(count[k]);
      if constexpr (std::is_floating_point_v<M>) dst[k] = T(total / n);
      else dst[k] = static_cast<T>((total / n) - ((total % n != 0) && ((total < 0) != (n < 0)) ? 1 : 0));
    }
  });
}

void masked_scatter_impl(const Tensor& self, const Tensor& mask, const Tensor& source, const Tensor& out) {
  copy_into(out, expand(self, out.sizes()));
  Tensor m = expand(mask, out.sizes()).contiguous();
  Tensor s = source.contiguous();
  const bool* mp = m.data_ptr<bool>();
  int64_t needed = 0;
  for (int64_t k = 0; k < m.numel(); ++k) needed += mp[k] ? 1 : 0;
  KILN_CHECK(needed <= s.numel(), "masked_scatter: the mask selects {} elements but source {} has only {}", needed,
             source.sizes(), s.numel());
  auto item = static_cast<int64_t>(element_size(self.dtype()));
  auto* to = static_cast<char*>(out.data_ptr());
  const auto* from = static_cast<const char*>(s.data_ptr());
  int64_t next = 0;
  for (int64_t k = 0; k < m.numel(); ++k) {
    if (mp[k]) std::memcpy(to + k * item, from + (next++) * item, static_cast<size_t>(item));
  }
}

template <class I>
std::vector<int64_t> read_indices(const Tensor& index, int64_t size) {
  Tensor dense = index.contiguous();
  const I* p = dense.data_ptr<I>();
  std::vector<int64_t> out(static_cast<size_t>(dense.numel()));
  for (size_t k = 0; k < out.size(); ++k) {
    auto i = static_cast<int64_t>(p[k]);
    KILN_CHECK_INDEX(i >= 0 && i < size, "index_select: index {} is out of range for a dimension of size {}", i, size);
    out[k] = i;
  }
  return out;
}

void index_select_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, "index_select");
  int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  auto idx = index.dtype() == DType::Int32 ? read_indices<int32_t>(index, size) : read_indices<int64_t>(index, size);
  Tensor src = self.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k < d) outer *= self.sizes()[k];
    if (k > d) inner *= self.sizes()[k];
  }
  auto item = static_cast<int64_t>(element_size(self.dtype()));
  const auto* from = static_cast<const char*>(src.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  auto n = static_cast<int64_t>(idx.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(to + ((o * n + j) * inner) * item, from + ((o * size + idx[static_cast<size_t>(j)]) * inner) * item,
                  static_cast<size_t>(inner * item));
    }
  }
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_structured<&meta::gather, &gather_impl>(r, "aten::gather");
  kernels::def_structured<&meta::scatter, &scatter_impl>(r, "aten::scatter.src");
  kernels::def_structured<&meta::scatter_add, &scatter_add_impl>(r, "aten::scatter_add");
  kernels::def_structured<&meta::scatter_value, &scatter_value_impl>(r, "aten::scatter.value");
  kernels::def_structured<&meta::index_select, &index_select_impl>(r, "aten::index_select");
  kernels::def_structured<&meta::scatter_reduce, &scatter_reduce_impl>(r, "aten::scatter_reduce.two");
  kernels::def_structured<&meta::masked_scatter, &masked_scatter_impl>(r, "aten::masked_scatter");
});

}  // namespace
}  // namespace kiln::cpu
