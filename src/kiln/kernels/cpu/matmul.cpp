// CPU matrix products. float32 and bfloat16 go to oneDNN's matmul (AVX-512/AMX kernels, bias and
// scaling fused in its epilogue); float16 runs through float32; float64 and integers use a
// blocked loop here. oneDNN primitives are cached by problem shape.
#include <dnnl.hpp>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/matmul.h"
#include "kiln/kernels/register.h"
#include "kiln/support/hash.h"

namespace kiln::cpu {
namespace {

// A batch of matrices [B, rows, cols] with element strides.
struct MatrixView {
  const void* data;
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
};

// oneDNN takes plain layouts: one of the two matrix dims must have stride 1. Anything else is
// copied to row-major first.
Tensor plain_layout(const Tensor& t) {
  int64_t nd = t.dim();
  int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  bool rows_ok = t.sizes()[nd - 1] <= 1 || cs == 1 ? (t.sizes()[nd - 2] <= 1 || rs >= t.sizes()[nd - 1]) : false;
  bool cols_ok = t.sizes()[nd - 2] <= 1 || rs == 1 ? (t.sizes()[nd - 1] <= 1 || cs >= t.sizes()[nd - 2]) : false;
  bool batch_ok = nd < 3 || t.sizes()[0] <= 1 || t.strides()[0] >= t.sizes()[1] * t.sizes()[2];
  if ((rows_ok || cols_ok) && batch_ok) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype(), kCPU);
  copy_into(c, t);
  return c;
}

MatrixView view_of(const Tensor& t) {
  int64_t nd = t.dim();
  MatrixView v{t.data_ptr(),       nd == 3 ? t.sizes()[0] : 1,   t.sizes()[nd - 2],
               t.sizes()[nd - 1],  nd == 3 ? t.strides()[0] : 0, t.strides()[nd - 2],
               t.strides()[nd - 1]};
  // Strides of size-1 dims do not address anything; give them canonical values.
  if (v.cols <= 1) v.col_stride = 1;
  if (v.rows <= 1) v.row_stride = std::max<int64_t>(v.cols, 1);
  if (v.batch <= 1) v.batch_stride = v.rows * v.cols;
  return v;
}

// ---- oneDNN

struct PrimitiveKey {
  int64_t b, m, n, k;
  int64_t as[3], bs[3];
  int dtype;
  bool bias, sum;
  float alpha, beta;
  bool operator==(const PrimitiveKey&) const = default;
};
struct PrimitiveKeyHash {
  size_t operator()(const PrimitiveKey& k) const {
    return hash_values(k.b, k.m, k.n, k.k, k.as[0], k.as[1], k.as[2], k.bs[0], k.bs[1], k.bs[2], k.dtype, k.bias, k.sum,
                       k.alpha, k.beta);
  }
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory::data_type dnnl_type(DType t) {
  return t == DType::BFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

dnnl::memory::desc desc_of(const MatrixView& v, DType t) {
  return dnnl::memory::desc({v.batch, v.rows, v.cols}, dnnl_type(t), {v.batch_stride, v.row_stride, v.col_stride});
}

// c = alpha * (a @ b) [+ bias row] [+ beta * c]
void onednn_matmul(const MatrixView& a, const MatrixView& b, const Tensor& c, const Tensor* bias, float alpha,
                   bool accumulate, float beta) {
  DType dt = c.dtype();
  PrimitiveKey key{a.batch,
                   a.rows,
                   b.cols,
                   a.cols,
                   {a.batch_stride, a.row_stride, a.col_stride},
                   {b.batch_stride, b.row_stride, b.col_stride},
                   static_cast<int>(dt),
                   bias != nullptr,
                   accumulate,
                   alpha,
                   beta};
  static std::mutex mu;
  // Scratchpads are user-managed and allocated per call, so one cached primitive can run in several
  // threads at once.
  struct Cached {
    dnnl::matmul prim;
    dnnl::memory::desc scratchpad;
  };
  static std::unordered_map<PrimitiveKey, Cached, PrimitiveKeyHash> cache;
  MatrixView cv{c.data_ptr(), a.batch, a.rows, b.cols, a.rows * b.cols, b.cols, 1};
  dnnl::memory::desc bias_md;
  if (bias) bias_md = dnnl::memory::desc({1, 1, b.cols}, dnnl_type(dt), {b.cols, b.cols, 1});
  Cached entry;
  try {
    {
      std::lock_guard lock(mu);  // guards the cache only; execution runs unlocked
      auto it = cache.find(key);
      if (it == cache.end()) {
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
        if (accumulate) {
          dnnl::post_ops ops;
          ops.append_sum(beta);
          attr.set_post_ops(ops);
        }
        dnnl::matmul::desc d = bias ? dnnl::matmul::desc(desc_of(a, dt), desc_of(b, dt), bias_md, desc_of(cv, dt))
                                    : dnnl::matmul::desc(desc_of(a, dt), desc_of(b, dt), desc_of(cv, dt));
        dnnl::matmul::primitive_desc pd(d, attr, engine());
        it = cache.emplace(key, Cached{dnnl::matmul(pd), pd.scratchpad_desc()}).first;
      }
      entry = it->second;
    }
    Tensor scratch = empty_tensor({static_cast<int64_t>(entry.scratchpad.get_size())}, DType::UInt8, kCPU);
    dnnl::stream stream(engine());
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(desc_of(a, dt), engine(), const_cast<void*>(a.data))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(desc_of(b, dt), engine(), const_cast<void*>(b.data))},
        {DNNL_ARG_DST, dnnl::memory(desc_of(cv, dt), engine(), c.data_ptr())}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, engine(), bias->data_ptr()));
    if (scratch.numel() > 0) {
      args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(entry.scratchpad, engine(), scratch.data_ptr()));
    }
    entry.prim.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    KILN_FAIL(ErrorKind::Internal, "matmul: oneDNN failed on [{}, {}, {}] x [{}, {}, {}] ({}): {}", a.batch, a.rows,
              a.cols, b.batch, b.rows, b.cols, dt, e.what());
  }
}

// ---- Portable fallback (float64, integers): i-k-j order so the inner loop runs along rows of b and c.
template <class T>
void loop_matmul(const MatrixView& a, const MatrixView& b, const Tensor& c, double alpha, double beta,
                 bool accumulate) {
  using M = opmath_t<T>;
  const T* ap = static_cast<const T*>(a.data);
  const T* bp = static_cast<const T*>(b.data);
  T* cp = static_cast<T*>(c.data_ptr());
  int64_t m = a.rows, n = b.cols, k = a.cols;
  parallel_for(0, a.batch * m, std::max<int64_t>(1, 4096 / std::max<int64_t>(n * k, 1)), [&](int64_t lo, int64_t hi) {
    std::vector<M> acc(static_cast<size_t>(n));
    for (int64_t bi = lo; bi < hi; ++bi) {
      int64_t batch = bi / m, i = bi % m;
      std::fill(acc.begin(), acc.end(), M(0));
      const T* arow = ap + batch * a.batch_stride + i * a.row_stride;
      const T* bmat = bp + batch * b.batch_stride;
      for (int64_t kk = 0; kk < k; ++kk) {
        M av = M(arow[kk * a.col_stride]);
        const T* brow = bmat + kk * b.row_stride;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * M(brow[j * b.col_stride]);
      }
      T* crow = cp + batch * m * n + i * n;
      for (int64_t j = 0; j < n; ++j) {
        M v = M(static_cast<M>(alpha) * acc[j]);
        if (accumulate) v = M(v + static_cast<M>(beta) * M(crow[j]));
        crow[j] = T(v);
      }
    }
  });
}

// c (contiguous) = alpha * a @ b [+ beta * c when accumulate] [+ bias]
void matmul_into(const Tensor& a_in, const Tensor& b_in, const Tensor& c, const Scalar& alpha, bool accumulate,
                 const Scalar& beta, const Tensor* bias) {
  if (c.numel() == 0) return;
  DType dt = c.dtype();
  if (dt == DType::Float16) {
    // oneDNN in this build has no float16 matmul: compute in float32.
    Tensor c32 = to_dtype(c, DType::Float32);
    std::optional<Tensor> bias32;
    if (bias) bias32 = to_dtype(*bias, DType::Float32);
    matmul_into(to_dtype(a_in, DType::Float32), to_dtype(b_in, DType::Float32), c32, alpha, accumulate, beta,
                bias32 ? &*bias32 : nullptr);
    copy_into(c, c32);
    return;
  }
  Tensor a = plain_layout(a_in), b = plain_layout(b_in);
  MatrixView av = view_of(a), bv = view_of(b);
  if (av.cols == 0) {  // empty inner dimension: the product is zero
    Tensor zero = empty_tensor({}, dt, kCPU);
    visit_dtype(dt, [&]<class T>() { *zero.data_ptr<T>() = T(0); });
    if (!accumulate) copy_into(c, zero);
    else {
      Tensor scaled = empty_tensor(c.sizes(), dt, kCPU);
      copy_into(scaled, c);
      visit_dtype(dt, [&]<class T>() {
        T* p = scaled.data_ptr<T>();
        for (int64_t i = 0; i < scaled.numel(); ++i) p[i] = T(opmath_t<T>(beta.to<opmath_t<T>>() * opmath_t<T>(p[i])));
      });
      copy_into(c, scaled);
    }
    if (bias) copy_into(c, *bias);  // reached only with beta == 1 and nothing to accumulate
    return;
  }
  if (dt == DType::Float32 || dt == DType::BFloat16) {
    onednn_matmul(av, bv, c, bias, static_cast<float>(alpha.to_double()), accumulate,
                  static_cast<float>(beta.to_double()));
    return;
  }
  KILN_ASSERT(bias == nullptr);
  visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      KILN_FAIL(ErrorKind::Type, "matmul: bool matrices are not supported");
    } else {
      loop_matmul<T>(av, bv, c, alpha.to_double(), beta.to_double(), accumulate);
    }
  });
}

void mm_impl(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  matmul_into(self, mat2, out, 1, false, 0, nullptr);
}
void bmm_impl(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  matmul_into(self, mat2, out, 1, false, 0, nullptr);
}

void addmm_impl(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha,
                const Tensor& out) {
  DType dt = out.dtype();
  bool fused_bias = (dt == DType::Float32 || dt == DType::BFloat16) && beta.to_double() == 1.0 &&
                    alpha.to_double() == 1.0 && self.numel() == out.sizes()[1] && self.is_contiguous() &&
                    (self.dim() == 1 || (self.dim() == 2 && self.sizes()[0] == 1));
  if (fused_bias) return matmul_into(mat1, mat2, out, 1, false, 0, &self);
  // beta == 0 ignores self entirely (NaN and inf in it do not propagate), as in PyTorch.
  bool accumulate = beta.to_double() != 0.0;
  if (accumulate) copy_into(out, self);
  matmul_into(mat1, mat2, out, alpha, accumulate, beta, nullptr);
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::mm, &mm_impl>(r, "aten::mm");
  def_structured<&meta::bmm, &bmm_impl>(r, "aten::bmm");
  def_structured<&meta::addmm, &addmm_impl>(r, "aten::addmm");
});

}  // namespace
}  // namespace kiln::cpu
