// CPU _embedding_bag: reduces bags of rows of `weight` (sum, mean or max per column), bag b holding
// indices[offsets[b] .. offsets[b + 1]). Returns PyTorch's four outputs exactly as its CPU kernel
// does on the autograd path (`_embedding_bag`, not `_embedding_bag_forward_only`):
//   output      [bags, D], weight's dtype; an empty bag (or one of padding only) gives zeros;
//   offset2bag  the bag of each index, [indices.size(0)] — but [0] (nothing computed) for mode sum
//               on PyTorch's "fast path" (float32/16-bit weight with unit column stride, no
//               padding_idx, per_sample_weights of unit stride);
//   bag_size    [bags]: indices per bag less those equal to padding_idx; all zeros for mode sum;
//   max_indices [bags, D] for mode max (the row each maximum came from, 0 for an empty bag), else a
//               copy of bag_size.
// The index outputs take the promoted dtype of indices and offsets (int32 only if both are).
// PyTorch quirks kept: with include_last_offset, indices past the last offset count toward the
// last bag's size and, off the fast path, its value; on the fast path they are ignored. 2-D indices
// are read flattened on the fast path while sizes use indices.size(0); PyTorch's other paths fail
// or read out of bounds there, so kiln raises. Offsets that decrease raise (PyTorch raises on its
// fast path and returns negative bag sizes elsewhere). padding_idx outside [0, num_embeddings)
// matches no index, as PyTorch's kernel (its Python wrapper range-checks it before).
#include <algorithm>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

constexpr std::string_view kOp = "_embedding_bag";
enum Mode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// The checks that need no data, and the output geometry (what the meta kernel returns).
struct Plan {
  Mode mode;
  DType index_dtype;
  int64_t bags, dim;
  bool fast;  // PyTorch's fast path for sum/mean: offset2bag is not computed for sum
  Shape offset2bag_sizes, max_indices_sizes;
};

Plan plan(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
          const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx) {
  KILN_CHECK(weight.dim() == 2, "{}: weight must be 2-D, got sizes {}", kOp, weight.sizes());
  KILN_CHECK(mode >= 0 && mode <= 2, "{}: mode must be 0 (sum), 1 (mean) or 2 (max), got {}", kOp, mode);
  KILN_CHECK(indices.dim() == 1 || indices.dim() == 2, "{}: indices must be 1-D or 2-D, got sizes {}", kOp,
             indices.sizes());
  KILN_CHECK(offsets.dim() == 1, "{}: offsets must be 1-D, got sizes {}", kOp, offsets.sizes());
  for (const Tensor* t : {&indices, &offsets}) {
    KILN_CHECK_TYPE(t->dtype() == DType::Int64 || t->dtype() == DType::Int32,
                    "{}: expected {} to be int64 or int32, got {}", kOp, t == &indices ? "indices" : "offsets",
                    t->describe());
  }
  KILN_CHECK_TYPE(is_floating(weight.dtype()), "{}: expected a floating point weight, got {}", kOp, weight.describe());
  if (per_sample_weights) {
    const Tensor& psw = *per_sample_weights;
    KILN_CHECK(mode == kSum, "{}: per_sample_weights are only supported with mode sum (0), got mode {}", kOp, mode);
    KILN_CHECK_TYPE(psw.dtype() == weight.dtype(), "{}: per_sample_weights {} must have weight's dtype {}", kOp,
                    psw.describe(), dtype_name(weight.dtype()));
    KILN_CHECK(psw.dim() == 1 && psw.numel() == indices.numel(),
               "{}: per_sample_weights must be 1-D with one weight per index ({}), got sizes {}", kOp, indices.numel(),
               psw.sizes());
  }
  KILN_CHECK(!include_last_offset || offsets.size(0) >= 1,
             "{}: include_last_offset needs at least one offset, got offsets of sizes {}", kOp, offsets.sizes());
  Plan p;
  p.mode = static_cast<Mode>(mode);
  p.index_dtype = indices.dtype() == DType::Int64 || offsets.dtype() == DType::Int64 ? DType::Int64 : DType::Int32;
  p.bags = offsets.size(0) - (include_last_offset ? 1 : 0);
  p.dim = weight.size(1);
  DType w = weight.dtype();
  p.fast = (w == DType::Float32 || w == DType::Float16 || w == DType::BFloat16) && weight.strides()[1] == 1 &&
           padding_idx < 0 && (!per_sample_weights || per_sample_weights->strides()[0] == 1);
  bool computes_offset2bag = p.mode != kSum || !p.fast;
  KILN_CHECK(indices.dim() == 1 || indices.size(1) == 1 || (p.fast && p.mode != kMax),
             "{}: 2-D indices (sizes {}) are only defined for mode sum or mean on a float32/float16/bfloat16 weight "
             "with unit column stride and no padding_idx (PyTorch's CPU kernel fails or reads out of bounds "
             "otherwise); flatten them and pass offsets",
             kOp, indices.sizes());
  p.offset2bag_sizes = {computes_offset2bag ? indices.size(0) : 0};
  p.max_indices_sizes = p.mode == kMax ? Shape{p.bags, p.dim} : Shape{p.bags};
  return p;
}

std::vector<int64_t> as_int64(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  if (c.dtype() == DType::Int64) {
    std::copy_n(c.data_ptr<int64_t>(), v.size(), v.begin());
  } else {
    std::copy_n(c.data_ptr<int32_t>(), v.size(), v.begin());
  }
  return v;
}

template <class I>
void store(const Tensor& t, const std::vector<int64_t>& v) {
  I* p = t.data_ptr<I>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<I>(v[i]);
}

void store_index(const Tensor& t, const std::vector<int64_t>& v) {
  if (t.dtype() == DType::Int64) store<int64_t>(t, v);
  else store<int32_t>(t, v);
}

struct Outputs {
  Tensor output, offset2bag, bag_size, max_indices;
};

template <class T>
void reduce_bags(const Tensor& weight, const std::vector<int64_t>& idx, const std::vector<int64_t>& begin,
                 const std::vector<int64_t>& end, const std::optional<Tensor>& per_sample_weights, int64_t padding_idx,
                 const Plan& p, std::vector<int64_t>& bag_size, std::vector<int64_t>& max_idx, const Tensor& output) {
  using M = opmath_t<T>;
  const T* w = weight.data_ptr<T>();
  const int64_t ws0 = weight.strides()[0], ws1 = weight.strides()[1], rows = weight.size(0), dim = p.dim;
  T* out = output.data_ptr<T>();
  std::vector<M> scale;
  if (per_sample_weights) {
    Tensor s = per_sample_weights->contiguous();
    const T* ps = s.data_ptr<T>();
    scale.assign(ps, ps + s.numel());
  }
  parallel_for(0, p.bags, 1, [&](int64_t lo, int64_t hi) {
    std::vector<M> acc(static_cast<size_t>(dim));
    for (int64_t b = lo; b < hi; ++b) {
      std::fill(acc.begin(), acc.end(), M(0));
      bool first = true;
      for (int64_t i = begin[b]; i < end[b]; ++i) {
        const int64_t k = idx[i];
        KILN_CHECK_INDEX(k >= 0 && k < rows, "{}: index {} of indices is {}, outside [0, {}) (weight rows)", kOp, i, k,
                         rows);
        if (k == padding_idx) {
          --bag_size[b];
          continue;
        }
        const T* row = w + k * ws0;
        if (p.mode == kMax) {
          for (int64_t d = 0; d < dim; ++d) {
            M v = M(row[d * ws1]);
            if (first || v > acc[d]) acc[d] = v, max_idx[b * dim + d] = k;
          }
          first = false;
        } else {
          const M s = scale.empty() ? M(1) : scale[i];
          for (int64_t d = 0; d < dim; ++d) acc[d] += scale.empty() ? M(row[d * ws1]) : M(row[d * ws1]) * s;
        }
      }
      if (p.mode == kMean) {
        const M n = M(std::max<int64_t>(bag_size[b], 1));
        for (int64_t d = 0; d < dim; ++d) acc[d] /= n;
      }
      for (int64_t d = 0; d < dim; ++d) out[b * dim + d] = T(acc[d]);
    }
  });
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag(const Tensor& weight, const Tensor& indices,
                                                         const Tensor& offsets, bool /*scale_grad_by_freq*/,
                                                         int64_t mode, bool /*sparse*/,
                                                         const std::optional<Tensor>& per_sample_weights,
                                                         bool include_last_offset, int64_t padding_idx) {
  Plan p = plan(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx);
  Device dev = weight.device();
  Outputs o{meta::allocate(meta::contiguous_spec({p.bags, p.dim}, weight.dtype()), dev),
            meta::allocate(meta::contiguous_spec(p.offset2bag_sizes, p.index_dtype), dev),
            meta::allocate(meta::contiguous_spec({p.bags}, p.index_dtype), dev),
            meta::allocate(meta::contiguous_spec(p.max_indices_sizes, p.index_dtype), dev)};
  if (dev.is_meta()) return {o.output, o.offset2bag, o.bag_size, o.max_indices};

  const std::vector<int64_t> offs = as_int64(offsets), idx = as_int64(indices);
  const int64_t n0 = indices.size(0), flat = indices.numel(), count = static_cast<int64_t>(offs.size());
  if (count > 0) {
    KILN_CHECK_INDEX(offs[0] == 0, "{}: offsets[0] must be 0 (the first bag starts at the first index), got {}", kOp,
                     offs[0]);
    KILN_CHECK_INDEX(offs.back() <= n0, "{}: offsets[-1] ({}) must not exceed indices.size(0) ({})", kOp, offs.back(),
                     n0);
  }
  for (int64_t k = 1; k < count; ++k) {
    KILN_CHECK_INDEX(offs[k] >= offs[k - 1], "{}: offsets must not decrease, got offsets[{}] = {} < offsets[{}] = {}",
                     kOp, k, offs[k], k - 1, offs[k - 1]);
  }
  // Bag b reads indices [begin[b], end[b]); the last bag runs to the end of indices except on the
  // fast path with include_last_offset, which stops at the last offset.
  std::vector<int64_t> begin(p.bags), end(p.bags), bag_size(p.bags);
  for (int64_t b = 0; b < p.bags; ++b) {
    begin[b] = offs[b];
    bool last = b + 1 == p.bags;
    end[b] = !last ? offs[b + 1] : !p.fast || p.mode == kMax ? n0 : include_last_offset ? offs[b + 1] : flat;
    bag_size[b] = (last ? n0 : offs[b + 1]) - offs[b];
  }
  if (o.offset2bag.numel() > 0) {
    // (offsets up to and including i, the last one left out with include_last_offset) - 1.
    std::vector<int64_t> bag_of(n0);
    int64_t used = count - (include_last_offset ? 1 : 0), k = 0;
    for (int64_t i = 0; i < n0; ++i) {
      while (k < used && offs[k] <= i) ++k;
      bag_of[i] = k - 1;
    }
    store_index(o.offset2bag, bag_of);
  }
  std::vector<int64_t> max_idx(p.mode == kMax ? p.bags * p.dim : 0, 0);
  visit_floating(weight.dtype(), kOp, [&]<class T>() {
    reduce_bags<T>(weight, idx, begin, end, per_sample_weights, padding_idx, p, bag_size, max_idx, o.output);
  });
  if (p.mode == kSum) std::fill(bag_size.begin(), bag_size.end(), 0);
  store_index(o.bag_size, bag_size);
  store_index(o.max_indices, p.mode == kMax ? max_idx : bag_size);
  return {o.output, o.offset2bag, o.bag_size, o.max_indices};
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&embedding_bag>(r, "aten::_embedding_bag");
});

}  // namespace
}  // namespace kiln::cpu
