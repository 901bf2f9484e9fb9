// CPU advanced indexing: index.Tensor (x[i, :, j] with integer or boolean index tensors),
// index_put (x[i, j] = v, or += with accumulate) and nonzero. Boolean masks become the integer
// indices of their true elements (nonzero); the integer indices broadcast together; the indexed
// dims come first unless they are adjacent, then they stay in place (NumPy's rule, PyTorch's).
// Output sizes that depend on the data (a mask, nonzero) have no meta kernel: a trace refuses them.
#include <cstring>
#include <vector>

#include "kiln/core/broadcast.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

Tensor nonzero(const Tensor& self) {
  KILN_CHECK_KIND(!self.device().is_meta(), ErrorKind::NotImplemented,
                  "nonzero: its output size depends on the data (no meta kernel)");
  Tensor x = self.contiguous();
  std::vector<int64_t> found;
  int64_t nd = self.dim();
  visit_dtype(self.dtype(), [&]<class T>() {
    const T* p = x.data_ptr<T>();
    for (int64_t k = 0; k < x.numel(); ++k) {
      if (p[k] != T(0)) found.push_back(k);
    }
  });
  // Stored dim by dim, [nd, n], and returned transposed: PyTorch's layout (strides (1, n)).
  int64_t n = static_cast<int64_t>(found.size());
  Tensor by_dim(empty_tensor({nd, n}, DType::Int64, kCPU));
  int64_t* o = by_dim.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    int64_t rest = found[static_cast<size_t>(r)];
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[d * n + r] = rest % self.sizes()[d];
      rest /= self.sizes()[d];
    }
  }
  return kiln::t(by_dim);
}

// The element offsets (in self) an index list selects, and the selection's sizes.
struct Selection {
  Shape sizes;
  std::vector<int64_t> offsets;  // row-major over `sizes`
};

// With `offsets` false only the sizes (a trace's meta kernel: no per-element work).
Selection selection(std::string_view op, const Tensor& self, const std::vector<std::optional<Tensor>>& given,
                    bool offsets = true) {
  KILN_CHECK_INDEX(static_cast<int64_t>(given.size()) <= self.dim(),
                   "{}: too many indices ({}) for a tensor of {} dims", op, given.size(), self.dim());
  // Masks become integer indices, one per masked dim.
  std::vector<std::optional<Tensor>> idx;
  for (const auto& t : given) {
    if (t && (t->dtype() == DType::Bool || t->dtype() == DType::UInt8)) {
      int64_t at = static_cast<int64_t>(idx.size());
      for (int64_t d = 0; d < t->dim(); ++d) {
        KILN_CHECK_INDEX(at + d < self.dim() && t->sizes()[d] == self.sizes()[at + d],
                         "{}: the mask {} does not match the indexed tensor {} at dim {}", op, t->sizes(), self.sizes(),
                         at + d);
      }
      Tensor where = nonzero(*t);
      for (int64_t d = 0; d < t->dim(); ++d) idx.emplace_back(kiln::select(where, 1, d));
      continue;
    }
    KILN_CHECK_TYPE(!t || t->dtype() == DType::Int64 || t->dtype() == DType::Int32,
                    "{}: tensors used as indices must be int64, int32, bool or uint8, got {}", op, t->describe());
    idx.push_back(t);
  }
  KILN_CHECK_INDEX(static_cast<int64_t>(idx.size()) <= self.dim(), "{}: too many indices for a tensor of {} dims", op,
                   self.dim());
  idx.resize(static_cast<size_t>(self.dim()));
  std::vector<int64_t> indexed, sliced;
  Shape common;
  bool first = true;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!idx[static_cast<size_t>(d)]) {
      sliced.push_back(d);
      continue;
    }
    indexed.push_back(d);
    common = first ? Shape(idx[static_cast<size_t>(d)]->sizes())
                   : broadcast_shapes(common, idx[static_cast<size_t>(d)]->sizes(), op);
    first = false;
  }
  Selection s;
  // The offset each broadcast index position contributes.
  int64_t count = 1;
  for (int64_t x : common) count *= x;
  std::vector<int64_t> advanced(static_cast<size_t>(indexed.empty() || !offsets ? 1 : count), 0);
  for (int64_t d : offsets ? indexed : std::vector<int64_t>{}) {
    Tensor i = expand(*idx[static_cast<size_t>(d)], common).to(DType::Int64).contiguous();
    const int64_t* p = i.data_ptr<int64_t>();
    int64_t size = self.sizes()[d];
    for (int64_t k = 0; k < count; ++k) {
      int64_t v = p[k];
      KILN_CHECK_INDEX(v >= -size && v < size, "{}: index {} is out of bounds for dimension {} with size {}", op, v, d,
                       size);
      advanced[static_cast<size_t>(k)] += (v < 0 ? v + size : v) * self.strides()[d];
    }
  }
  // Axes of the result: sliced dims, and the indexed block (at the first indexed dim when the
  // indexed dims are adjacent, else first).
  bool adjacent = !indexed.empty() && indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  struct Axis {
    int64_t size, stride;
    bool block;
  };
  std::vector<Axis> axes;
  if (!indexed.empty() && !adjacent) axes.push_back({count, 0, true});
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!indexed.empty() && adjacent && d == indexed.front()) axes.push_back({count, 0, true});
    if (!idx[static_cast<size_t>(d)]) axes.push_back({self.sizes()[d], self.strides()[d], false});
  }
  s.sizes.clear();
  for (const Axis& a : axes) {
    if (!a.block) {
      s.sizes.push_back(a.size);
      continue;
    }
    for (int64_t x : common) s.sizes.push_back(x);
  }
  if (!offsets) return s;
  int64_t total = 1;
  for (const Axis& a : axes) total *= a.size;
  s.offsets.reserve(static_cast<size_t>(total));
  std::vector<int64_t> coord(axes.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t off = 0;
    for (size_t a = 0; a < axes.size(); ++a) {
      off += axes[a].block ? advanced[static_cast<size_t>(coord[a])] : coord[a] * axes[a].stride;
    }
    s.offsets.push_back(off);
    for (size_t a = axes.size(); a-- > 0;) {
      if (++coord[a] < axes[a].size) break;
      coord[a] = 0;
    }
  }
  return s;
}

Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  for (const auto& t : indices) {
    KILN_CHECK_KIND(!t || !self.device().is_meta() || (t->dtype() != DType::Bool && t->dtype() != DType::UInt8),
                    ErrorKind::NotImplemented, "index: a boolean mask makes the output size depend on the data");
  }
  if (self.device().is_meta()) {  // sizes only: select on index tensors of the same geometry holding zeros
    std::vector<std::optional<Tensor>> zeros;
    for (const auto& t : indices)
      zeros.push_back(t ? std::optional(kiln::zeros(t->sizes(), TensorOptions(DType::Int64))) : std::nullopt);
    Tensor probe(empty_strided_tensor(self.sizes(), Shape(static_cast<size_t>(self.dim()), 0), self.dtype(), kCPU));
    return meta::allocate(meta::contiguous_spec(selection("index", probe, zeros, false).sizes, self.dtype()),
                          self.device());
  }
  Selection s = selection("index", self, indices);
  Tensor out(empty_tensor(s.sizes, self.dtype(), kCPU));
  auto item = static_cast<int64_t>(element_size(self.dtype()));
  const auto* from = static_cast<const char*>(self.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  for (size_t k = 0; k < s.offsets.size(); ++k) {
    std::memcpy(to + static_cast<int64_t>(k) * item, from + s.offsets[k] * item, static_cast<size_t>(item));
  }
  return out;
}

Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate) {
  KILN_CHECK_TYPE(values.dtype() == self.dtype(), "index_put: values {} must have self's dtype {}", values.describe(),
                  dtype_name(self.dtype()));
  if (self.device().is_meta()) return meta::allocate(meta::contiguous_spec(self.sizes(), self.dtype()), self.device());
  Tensor out = clone(self, MemoryFormat::Contiguous);
  Selection s = selection("index_put", out, indices);
  Tensor v = expand(values, s.sizes).contiguous();  // values broadcast to the selection
  visit_dtype(self.dtype(), [&]<class T>() {
    T* o = out.data_ptr<T>();
    const T* p = v.data_ptr<T>();
    for (size_t k = 0; k < s.offsets.size(); ++k) {
      if (!accumulate) o[s.offsets[k]] = p[k];
      else if constexpr (std::is_same_v<T, bool>) o[s.offsets[k]] = o[s.offsets[k]] || p[k];
      else o[s.offsets[k]] = T(wrapping_add(opmath_t<T>(o[s.offsets[k]]), opmath_t<T>(p[k])));
    }
  });
  return out;
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&nonzero>(r, "aten::nonzero");
  kernels::def_meta_and_cpu<&index>(r, "aten::index.Tensor");
  kernels::def_meta_and_cpu<&index_put>(r, "aten::index_put");
});

}  // namespace
}  // namespace kiln::cpu
