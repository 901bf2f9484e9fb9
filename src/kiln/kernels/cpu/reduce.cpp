// CPU kernels of the reductions, as Reducers run by the reduction engine (reduce_engine.h).
#include <cmath>
#include <limits>

#include "kiln/kernels/cpu/accumulate.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/reduce_engine.h"
#include "kiln/kernels/cpu/simd.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/reduce.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

template <class In_, class Acc_, class Out_, bool kMean>
struct SumReducer {
  using In = In_;
  using Acc = Acc_;
  using Out = Out_;
  Acc identity() const { return Acc(0); }
  void add(Acc& a, opmath_t<In> x, int64_t) const { a += Acc(x); }
  void merge(Acc& a, const Acc& b) const { a += b; }
  Acc reduce_contiguous(const In* p, int64_t n, int64_t) const {
    if constexpr (std::is_floating_point_v<Acc>) {
      return pairwise_sum<Acc>(p, n);
    } else {
      Acc s = 0;
      for (int64_t i = 0; i < n; ++i) s += Acc(p[i]);
      return s;
    }
  }
  void store(Out* dst, const Acc& a, int64_t count) const {
    if constexpr (kMean) {
      *dst = Out(static_cast<opmath_t<Out>>(a / static_cast<Acc>(count)));
    } else {
      *dst = Out(static_cast<opmath_t<Out>>(a));
    }
  }
};

// Float products accumulate in double (as compiled code's): rounded once at the end, a product no
// longer depends on the order of its factors unless it leaves the double range.
template <class T>
struct ProdReducer {
  using In = T;
  using Acc = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, double, opmath_t<T>>;
  using Out = T;
  Acc identity() const { return Acc(1); }
  void add(Acc& a, Acc x, int64_t) const { a = wrapping_mul(a, x); }
  void merge(Acc& a, const Acc& b) const { a = wrapping_mul(a, b); }
  void store(Out* dst, const Acc& a, int64_t) const { *dst = Out(static_cast<opmath_t<Out>>(a)); }
};

template <class T>
constexpr opmath_t<T> lowest() {
  if constexpr (std::is_floating_point_v<opmath_t<T>>) return -std::numeric_limits<opmath_t<T>>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <class T>
constexpr opmath_t<T> highest() {
  if constexpr (std::is_floating_point_v<opmath_t<T>>) return std::numeric_limits<opmath_t<T>>::infinity();
  else return std::numeric_limits<T>::max();
}

// amax (kMax) / amin: NaN wins, as in PyTorch.
template <class T, bool kMax>
struct ExtremumReducer {
  using In = T;
  using Acc = opmath_t<T>;
  using Out = T;
  Acc identity() const { return kMax ? lowest<T>() : highest<T>(); }
  static bool better(Acc x, Acc a) { return (kMax ? x > a : x < a) || x != x; }
  void add(Acc& a, Acc x, int64_t) const { a = better(x, a) ? x : a; }
  void merge(Acc& a, const Acc& b) const { a = (a != a) ? a : (better(b, a) ? b : a); }
  Acc reduce_contiguous(const In* p, int64_t n, int64_t) const {
    if constexpr (std::is_same_v<In, float>) {
      return simd::extremum<kMax>(p, n);
    } else {
      Acc a = identity();
      for (int64_t i = 0; i < n; ++i) add(a, Acc(p[i]), i);
      return a;
    }
  }
  void store(Out* dst, const Acc& a, int64_t) const { *dst = Out(a); }
};

// argmax / argmin, and max.dim / min.dim (which also store the value). The first extremum wins;
// the first NaN beats everything.
template <class T, bool kMax>
struct ArgReducer {
  using In = T;
  struct Acc {
    opmath_t<T> value;
    int64_t index;
  };
  using Out = int64_t;
  T* values = nullptr;  // optional second output, laid out like the indices
  const int64_t* indices = nullptr;
  Acc identity() const { return {opmath_t<T>(0), -1}; }
  static bool better(opmath_t<T> x, opmath_t<T> a) {
    if (a != a) return false;
    return x != x || (kMax ? x > a : x < a);
  }
  void add(Acc& a, opmath_t<T> x, int64_t i) const {
    if (a.index < 0 || better(x, a.value)) a = {x, i};
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.index >= 0 && (a.index < 0 || better(b.value, a.value))) a = b;
  }
  void store(Out* dst, const Acc& a, int64_t) const {
    *dst = a.index;
    if (values) values[dst - indices] = T(a.value);
  }
};

// Welford's algorithm in double; var_mean also stores the mean, as the plain sum over n: Welford's
// running mean turns NaN once an infinity meets a later element, which depends on the order of the
// elements (PyTorch's does; docs/conformance.md), where sum / n is inf whatever the order.
template <class T>
struct VarReducer {
  using In = T;
  struct Acc {
    double n, mean, m2, sum;
  };
  using Out = T;
  double correction = 1;
  T* means = nullptr;
  const T* vars = nullptr;
  Acc identity() const { return {0, 0, 0, 0}; }
  void add(Acc& a, opmath_t<T> x, int64_t) const {
    double v = static_cast<double>(x);
    a.n += 1;
    a.sum += v;
    double d = v - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (v - a.mean);
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    double n = a.n + b.n;
    double d = b.mean - a.mean;
    a.mean += d * b.n / n;
    a.m2 += b.m2 + d * d * a.n * b.n / n;
    a.sum += b.sum;
    a.n = n;
  }
  void store(Out* dst, const Acc& a, int64_t) const {
    double divisor = std::max(a.n - correction, 0.0);
    *dst = T(static_cast<opmath_t<T>>(a.n == 0 ? NAN : a.m2 / divisor));
    if (means) means[dst - vars] = T(static_cast<opmath_t<T>>(a.n == 0 ? NAN : a.sum / a.n));
  }
};

template <class T>
struct AnyReducer {
  using In = T;
  using Acc = bool;
  using Out = bool;
  Acc identity() const { return false; }
  void add(Acc& a, opmath_t<T> x, int64_t) const { a = a || (x != opmath_t<T>(0)); }
  void merge(Acc& a, const Acc& b) const { a = a || b; }
  void store(Out* dst, const Acc& a, int64_t) const { *dst = a; }
};

uint64_t mask_of(const Tensor& self, std::optional<IntArrayRef> dim, std::string_view op) {
  return meta::reduction_mask(dim, self.dim(), op);
}

template <bool kMean>
void sum_like(const Tensor& self, uint64_t mask, const Tensor& out) {
  if (is_floating(out.dtype())) {
    Tensor in = to_dtype(self, out.dtype());
    visit_floating(out.dtype(), "sum",
                   [&]<class T>() { run_reduction(SumReducer<T, opmath_t<T>, T, kMean>{}, in, mask, out); });
  } else {
    Tensor in = to_dtype(self, out.dtype());
    visit_dtype(out.dtype(), [&]<class T>() {
      if constexpr (std::is_integral_v<T>) {
        using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, T>;
        run_reduction(SumReducer<T, Acc, T, false>{}, in, mask, out);
      }
    });
  }
}

void sum_dim_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool, std::optional<DType>, const Tensor& out) {
  sum_like<false>(self, mask_of(self, dim, "sum"), out);
}
void mean_dim_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool, std::optional<DType>, const Tensor& out) {
  sum_like<true>(self, mask_of(self, dim, "mean"), out);
}
void mean_all_impl(const Tensor& self, std::optional<DType> dtype, const Tensor& out) {
  mean_dim_impl(self, std::nullopt, false, dtype, out);
}

void prod_like(const Tensor& self, uint64_t mask, const Tensor& out) {
  Tensor in = to_dtype(self, out.dtype());
  visit_dtype(out.dtype(), [&]<class T>() { run_reduction(ProdReducer<T>{}, in, mask, out); });
}
void prod_all_impl(const Tensor& self, std::optional<DType>, const Tensor& out) {
  prod_like(self, mask_of(self, std::nullopt, "prod"), out);
}
void prod_dim_impl(const Tensor& self, int64_t dim, bool, std::optional<DType>, const Tensor& out) {
  prod_like(self, mask_of(self, IntArrayRef(dim), "prod"), out);
}

template <bool kMax>
void extremum_impl(const Tensor& self, IntArrayRef dim, bool, const Tensor& out) {
  uint64_t mask = mask_of(self, dim, "amax");
  visit_dtype(self.dtype(), [&]<class T>() { run_reduction(ExtremumReducer<T, kMax>{}, self, mask, out, true); });
}

// Arg reductions over all dims index the flattened (row-major) tensor.
template <bool kMax>
void arg_reduce(const Tensor& self, std::optional<int64_t> dim, const Tensor& indices, const Tensor* values) {
  Tensor in = self;
  uint64_t mask;
  if (dim) {
    mask = uint64_t{1} << wrap_dim(*dim, self.dim(), "argmax");
    if (self.dim() == 0) mask = 0;
  } else {
    in = empty_tensor({self.numel()}, self.dtype(), self.device());
    copy_into(in.view_with(self.sizes(), contiguous_strides(self.sizes()), 0), self);
    mask = 1;
  }
  Tensor idx_view = indices;
  if (!dim) idx_view = indices.view_with({}, {}, indices.storage_offset());
  visit_dtype(self.dtype(), [&]<class T>() {
    ArgReducer<T, kMax> r;
    if (values) {
      r.values = static_cast<T*>(values->data_ptr());
      r.indices = static_cast<const int64_t*>(indices.data_ptr());
    }
    run_reduction(r, in, mask, idx_view, false);
  });
}
template <bool kMax>
void arg_impl(const Tensor& self, std::optional<int64_t> dim, bool, const Tensor& out) {
  arg_reduce<kMax>(self, dim, out, nullptr);
}
template <bool kMax>
void max_dim_impl(const Tensor& self, int64_t dim, bool, const Tensor& values, const Tensor& indices) {
  arg_reduce<kMax>(self, dim, indices, &values);
}

void var_like(const Tensor& self, std::optional<IntArrayRef> dim, double correction, const Tensor& var,
              const Tensor* mean) {
  uint64_t mask = mask_of(self, dim, "var");
  visit_floating(self.dtype(), "var", [&]<class T>() {
    VarReducer<T> r;
    r.correction = correction;
    if (mean) {
      r.means = static_cast<T*>(mean->data_ptr());
      r.vars = static_cast<const T*>(var.data_ptr());
    }
    run_reduction(r, self, mask, var);
  });
}
void var_correction_impl(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                         bool, const Tensor& out) {
  var_like(self, dim, correction ? correction->to_double() : 1.0, out, nullptr);
}
void var_dim_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool, const Tensor& out) {
  var_like(self, dim, unbiased ? 1.0 : 0.0, out, nullptr);
}
void var_mean_impl(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction, bool,
                   const Tensor& var, const Tensor& mean) {
  var_like(self, dim, correction ? correction->to_double() : 1.0, var, &mean);
}

void any_dims_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool, const Tensor& out) {
  uint64_t mask = mask_of(self, dim, "any");
  // uint8 results (PyTorch's rule for uint8 input) share bool's representation of 0 and 1.
  Tensor bool_out = out.dtype() == DType::Bool ? out
                                               : Tensor(make_tensor(out.storage(), out.sizes(), out.strides(),
                                                                    out.storage_offset(), DType::Bool));
  visit_dtype(self.dtype(), [&]<class T>() { run_reduction(AnyReducer<T>{}, self, mask, bool_out); });
}
void any_dim_impl(const Tensor& self, int64_t dim, bool keepdim, const Tensor& out) {
  any_dims_impl(self, IntArrayRef(dim), keepdim, out);
}
void any_all_impl(const Tensor& self, const Tensor& out) { any_dims_impl(self, std::nullopt, false, out); }

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::sum_dim, &sum_dim_impl>(r, "aten::sum.dim_IntList");
  def_structured<&meta::mean_all, &mean_all_impl>(r, "aten::mean");
  def_structured<&meta::mean_dim, &mean_dim_impl>(r, "aten::mean.dim");
  def_structured<&meta::prod_all, &prod_all_impl>(r, "aten::prod");
  def_structured<&meta::prod_dim, &prod_dim_impl>(r, "aten::prod.dim_int");
  def_structured<&meta::amax, &extremum_impl<true>>(r, "aten::amax");
  def_structured<&meta::amin, &extremum_impl<false>>(r, "aten::amin");
  def_structured<&meta::argmax, &arg_impl<true>>(r, "aten::argmax");
  def_structured<&meta::argmin, &arg_impl<false>>(r, "aten::argmin");
  def_structured<&meta::max_dim, &max_dim_impl<true>>(r, "aten::max.dim");
  def_structured<&meta::min_dim, &max_dim_impl<false>>(r, "aten::min.dim");
  def_structured<&meta::var_dim, &var_dim_impl>(r, "aten::var.dim");
  def_structured<&meta::var_correction, &var_correction_impl>(r, "aten::var.correction");
  def_structured<&meta::var_mean, &var_mean_impl>(r, "aten::var_mean.correction");
  def_structured<&meta::any_all, &any_all_impl>(r, "aten::any");
  def_structured<&meta::any_dim, &any_dim_impl>(r, "aten::any.dim");
  def_structured<&meta::any_dims, &any_dims_impl>(r, "aten::any.dims");
});

}  // namespace
}  // namespace kiln::cpu
