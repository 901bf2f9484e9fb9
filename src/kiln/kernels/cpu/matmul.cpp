// CPU matrix products. float32 and bfloat16 (AMX where the CPU has it) go to oneDNN's matmul,
// bias, scaling, and kiln::gemm_epilogue's activation and residual fused in its epilogue as
// post-ops; float16 runs through float32; float64 and integers use a blocked loop here. oneDNN
// primitives are cached by problem shape. KILN_GEMM=kiln sends float32 to kiln's own GEMM
// (sgemm.h) instead, with the same epilogue: it is 85-95% of oneDNN's speed on the machines
// measured (bench/README.md), so it is not the default.
#include <dnnl.hpp>

#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kiln/kernels/cpu/activations.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/cpu/sgemm.h"
#include "kiln/kernels/meta/matmul.h"
#include "kiln/kernels/register.h"
#include "kiln/support/hash.h"

namespace kiln::cpu {
namespace {

using meta::GemmActivation;

// A batch of matrices [B, rows, cols] with element strides.
struct MatrixView {
  const void* data;
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
  DType dtype = DType::Float32;
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
  MatrixView v{t.data_ptr(),
               nd == 3 ? t.sizes()[0] : 1,
               t.sizes()[nd - 2],
               t.sizes()[nd - 1],
               nd == 3 ? t.strides()[0] : 0,
               t.strides()[nd - 2],
               t.strides()[nd - 1],
               t.dtype()};
  // Strides of size-1 dims do not address anything; give them canonical values.
  if (v.cols <= 1) v.col_stride = 1;
  if (v.rows <= 1) v.row_stride = std::max<int64_t>(v.cols, 1);
  if (v.batch <= 1) v.batch_stride = v.rows * v.cols;
  return v;
}

// ---- oneDNN

// What runs on the product before it is stored (kiln::gemm_epilogue): an activation, then the
// residual added (any strides; the product's sizes).
struct PostOps {
  GemmActivation activation = GemmActivation::None;
  const Tensor* residual = nullptr;
};

struct PrimitiveKey {
  int64_t b, m, n, k;
  int64_t as[3], bs[3], rs[3];
  int dtype, operand_dtype;
  bool bias, sum, residual;
  int activation;
  float alpha, beta;
  bool operator==(const PrimitiveKey&) const = default;
};
struct PrimitiveKeyHash {
  size_t operator()(const PrimitiveKey& k) const {
    return hash_values(k.b, k.m, k.n, k.k, k.as[0], k.as[1], k.as[2], k.bs[0], k.bs[1], k.bs[2], k.rs[0], k.rs[1],
                       k.rs[2], k.dtype, k.operand_dtype, k.bias, k.sum, k.residual, k.activation, k.alpha, k.beta);
  }
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::memory::data_type dnnl_type(DType t) {
  return t == DType::BFloat16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

dnnl::memory::desc desc_of(const MatrixView& v) {
  return dnnl::memory::desc({v.batch, v.rows, v.cols}, dnnl_type(v.dtype),
                            {v.batch_stride, v.row_stride, v.col_stride});
}

dnnl::algorithm eltwise_of(GemmActivation a) {
  switch (a) {
    case GemmActivation::Relu: return dnnl::algorithm::eltwise_relu;
    case GemmActivation::Gelu: return dnnl::algorithm::eltwise_gelu_erf;
    case GemmActivation::GeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case GemmActivation::Silu: return dnnl::algorithm::eltwise_swish;
    case GemmActivation::None: break;
  }
  KILN_FAIL(ErrorKind::Internal, "matmul: no oneDNN eltwise for activation {}", static_cast<int>(a));
}

// c = post(alpha * (a @ b) [+ bias row] [+ beta * c]); a and b of one dtype, c, bias and residual of
// c's (bfloat16 operands with a float32 c: their products accumulated in float32, never rounded).
void onednn_matmul(const MatrixView& a, const MatrixView& b, const Tensor& c, const Tensor* bias, float alpha,
                   bool accumulate, float beta, const PostOps& post = {}) {
  DType dt = c.dtype();
  MatrixView rv{};
  if (post.residual) rv = view_of(*post.residual);
  PrimitiveKey key{a.batch,
                   a.rows,
                   b.cols,
                   a.cols,
                   {a.batch_stride, a.row_stride, a.col_stride},
                   {b.batch_stride, b.row_stride, b.col_stride},
                   {rv.batch_stride, rv.row_stride, rv.col_stride},
                   static_cast<int>(dt),
                   static_cast<int>(a.dtype),
                   bias != nullptr,
                   accumulate,
                   post.residual != nullptr,
                   static_cast<int>(post.activation),
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
  MatrixView cv{c.data_ptr(), a.batch, a.rows, b.cols, a.rows * b.cols, b.cols, 1, dt};
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
        dnnl::post_ops ops;
        if (accumulate) ops.append_sum(beta);
        if (post.activation != GemmActivation::None) {
          // swish is x * sigmoid(alpha x): silu with alpha 1; relu's alpha is its negative slope.
          ops.append_eltwise(1.0f, eltwise_of(post.activation), post.activation == GemmActivation::Silu ? 1.0f : 0.0f,
                             0.0f);
        }
        if (post.residual) ops.append_binary(dnnl::algorithm::binary_add, desc_of(rv));
        attr.set_post_ops(ops);
        dnnl::matmul::desc d = bias ? dnnl::matmul::desc(desc_of(a), desc_of(b), bias_md, desc_of(cv))
                                    : dnnl::matmul::desc(desc_of(a), desc_of(b), desc_of(cv));
        dnnl::matmul::primitive_desc pd(d, attr, engine());
        it = cache.emplace(key, Cached{dnnl::matmul(pd), pd.scratchpad_desc()}).first;
      }
      entry = it->second;
    }
    Tensor scratch = empty_tensor({static_cast<int64_t>(entry.scratchpad.get_size())}, DType::UInt8, kCPU);
    dnnl::stream stream(engine());
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(desc_of(a), engine(), const_cast<void*>(a.data))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(desc_of(b), engine(), const_cast<void*>(b.data))},
        {DNNL_ARG_DST, dnnl::memory(desc_of(cv), engine(), c.data_ptr())}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(bias_md, engine(), bias->data_ptr()));
    if (post.residual) {
      int index = (accumulate ? 1 : 0) + (post.activation != GemmActivation::None ? 1 : 0);
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1,
                   dnnl::memory(desc_of(rv), engine(), const_cast<void*>(rv.data)));
    }
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

// Whether this CPU's oneDNN has a bfloat16 matmul: it has none without AVX-512 (an AVX2-only CPU
// such as many AMD EPYC and desktop parts), where bfloat16 products are computed in float32 instead.
// Asked once, by creating a small bfloat16 matmul.
bool onednn_bf16_matmul() {
  static const bool available = [] {
    try {
      auto bf16 = dnnl::memory::data_type::bf16;
      dnnl::memory::desc m({1, 2, 2}, bf16, dnnl::memory::dims{4, 2, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(m, m, m), engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

// ---- kiln's float32 GEMM

// Whether KILN_GEMM=kiln asks for kiln's float32 GEMM instead of oneDNN's (read at every call, so a
// test can switch it; a getenv is nothing beside a GEMM).
bool kiln_sgemm_requested() {
  const char* v = std::getenv("KILN_GEMM");
  return v != nullptr && std::string_view(v) == "kiln";
}

// c = post(alpha * (a @ b) [+ bias row] [+ beta * c]) through sgemm when KILN_GEMM=kiln asks for it,
// one matrix of the batch at a time; false (nothing done) otherwise, and where oneDNN is the only
// choice: no kernel in this build, another dtype, or a batch of small matrices (oneDNN runs those
// in parallel across the batch).
bool try_sgemm(const MatrixView& a, const MatrixView& b, const Tensor& c, const Tensor* bias, float alpha,
               bool accumulate, float beta, const PostOps& post = {}) {
  if (c.dtype() != DType::Float32 || a.dtype != DType::Float32 || !sgemm_available() || !kiln_sgemm_requested())
    return false;
  double flops = 2.0 * static_cast<double>(a.rows) * static_cast<double>(b.cols) * static_cast<double>(a.cols);
  if (a.batch > 1 && flops < 16e6) return false;
  MatrixView rv{};
  if (post.residual) rv = view_of(*post.residual);
  SgemmEpilogue ep{alpha, accumulate, beta, bias ? bias->data_ptr<float>() : nullptr, 1, post.activation, {}};
  for (int64_t i = 0; i < a.batch; ++i) {
    SgemmMatrix am{static_cast<const float*>(a.data) + i * a.batch_stride, a.row_stride, a.col_stride};
    SgemmMatrix bm{static_cast<const float*>(b.data) + (b.batch > 1 ? i * b.batch_stride : 0), b.row_stride,
                   b.col_stride};
    if (post.residual) {
      ep.residual = {static_cast<const float*>(rv.data) + (rv.batch > 1 ? i * rv.batch_stride : 0), rv.row_stride,
                     rv.col_stride};
    }
    sgemm(a.rows, b.cols, a.cols, am, bm, c.data_ptr<float>() + i * a.rows * b.cols, b.cols, ep);
  }
  return true;
}

// The float32 / bfloat16 product: kiln's sgemm where try_sgemm takes it, oneDNN's otherwise.
void vendor_matmul(const MatrixView& a, const MatrixView& b, const Tensor& c, const Tensor* bias, float alpha,
                   bool accumulate, float beta, const PostOps& post = {}) {
  if (!try_sgemm(a, b, c, bias, alpha, accumulate, beta, post))
    onednn_matmul(a, b, c, bias, alpha, accumulate, beta, post);
}

// ---- Portable fallback (float64, integers): i-k-j order so the inner loop runs along rows of b and c.
// Integer products and sums wrap, as PyTorch's: they are computed in uint64_t, where wrapping is
// defined, and the low bits are the same in any width (a signed overflow would be undefined).
template <class T>
using MatmulAcc = std::conditional_t<std::is_integral_v<opmath_t<T>>, uint64_t, opmath_t<T>>;

template <class T>
void loop_matmul(const MatrixView& a, const MatrixView& b, const Tensor& c, double alpha, double beta,
                 bool accumulate) {
  using M = MatmulAcc<T>;
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
        M v = M(M(static_cast<opmath_t<T>>(alpha)) * acc[j]);
        if (accumulate) v = M(v + M(static_cast<opmath_t<T>>(beta)) * M(crow[j]));
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
  if (dt == DType::Float16 || (dt == DType::BFloat16 && !onednn_bf16_matmul())) {
    // oneDNN in this build has no float16 matmul, nor a bfloat16 one on a CPU without AVX-512:
    // compute in float32 (the inputs convert exactly) and round once.
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
    vendor_matmul(av, bv, c, bias, static_cast<float>(alpha.to_double()), accumulate,
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
// A float32 product of 16-bit matrices: of the inputs converted (products of 16-bit values are
// exact in float32), as the decomposition this op replaces computed it.
void mm_dtype_impl(const Tensor& self, const Tensor& mat2, DType out_dtype, const Tensor& out) {
  if (out_dtype == self.dtype()) return matmul_into(self, mat2, out, 1, false, 0, nullptr);
  matmul_into(self.to(out_dtype), mat2.to(out_dtype), out, 1, false, 0, nullptr);
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

// The epilogue of gemm_epilogue where oneDNN does not run it: out = act(out + bias) + residual,
// each step rounded to the dtype as eager's separate ops round it, the activation eager's own.
template <class T>
void apply_epilogue(const Tensor& out, const std::optional<Tensor>& bias, GemmActivation act,
                    const std::optional<Tensor>& residual) {
  using M = opmath_t<T>;
  T* o = out.data_ptr<T>();
  int64_t nd = out.dim(), rows = out.numel() / std::max<int64_t>(out.sizes()[nd - 1], 1), n = out.sizes()[nd - 1];
  int64_t m = out.sizes()[nd - 2];
  for (int64_t r = 0; r < rows && n > 0; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      M v = M(o[r * n + j]);
      if (bias) v = M(T(v + M(bias->data_ptr<T>()[j * bias->strides()[0]])));
      switch (act) {
        case GemmActivation::Relu: v = v < M(0) ? M(0) : v; break;
        case GemmActivation::Gelu: v = act::gelu_erf(v); break;
        case GemmActivation::GeluTanh: v = act::gelu_tanh(v); break;
        case GemmActivation::Silu: v = act::silu(v); break;
        case GemmActivation::None: break;
      }
      v = M(T(v));
      if (residual) {
        const auto& st = residual->strides();
        int64_t at = (nd == 3 ? (r / m) * st[0] : 0) + (r % m) * st[nd - 2] + j * st[nd - 1];
        v = v + M(residual->data_ptr<T>()[at]);
      }
      o[r * n + j] = T(v);
    }
  }
}

void gemm_epilogue_impl(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& bias,
                        std::string_view activation, const std::optional<Tensor>& residual, std::optional<DType> dtype,
                        const Tensor& out) {
  GemmActivation act = *meta::parse_gemm_activation(activation);
  DType dt = out.dtype();
  if (!onednn_bf16_matmul() && (self.dtype() == DType::BFloat16 || dt == DType::BFloat16)) {
    // No bfloat16 matmul in this CPU's oneDNN: the product in float32 (matmul_into; operands for a
    // float32 result converted exactly), then the epilogue as eager's separate ops round it.
    Tensor a = self.dtype() == dt ? self : to_dtype(self, dt), b = mat2.dtype() == dt ? mat2 : to_dtype(mat2, dt);
    matmul_into(a, b, out, 1, false, 0, nullptr);
    if (out.numel() == 0) return;
    visit_dtype(dt, [&]<class T>() {
      if constexpr (std::is_floating_point_v<opmath_t<T>>) apply_epilogue<T>(out, bias, act, residual);
    });
    return;
  }
  // bfloat16 operands to a float32 product: oneDNN reads them as they are; elsewhere (empty) they
  // are converted, exactly.
  if (self.dtype() != dt && (out.numel() == 0 || self.sizes().back() == 0)) {
    gemm_epilogue_impl(to_dtype(self, dt), to_dtype(mat2, dt), bias, activation, residual, std::nullopt, out);
    return;
  }
  (void)dtype;  // the result's dtype, which `out` has
  if ((dt == DType::Float32 || dt == DType::BFloat16) && out.numel() > 0 && self.sizes().back() > 0) {
    Tensor a = plain_layout(self), b = plain_layout(mat2);
    std::optional<Tensor> r, bias_c;
    if (residual) r = plain_layout(*residual);
    if (bias) {
      bias_c = *bias;
      if (!bias->is_contiguous()) {
        bias_c = Tensor(empty_tensor(bias->sizes(), dt, kCPU));
        copy_into(*bias_c, *bias);
      }
    }
    // oneDNN's relu post-op turns a NaN into 0 in some of its kernels (PyTorch's relu keeps it):
    // the product and bias run there, the relu and the residual in apply_epilogue.
    bool relu_here = act == GemmActivation::Relu;
    vendor_matmul(view_of(a), view_of(b), out, bias_c ? &*bias_c : nullptr, 1.0f, false, 0.0f,
                  relu_here ? PostOps{} : PostOps{act, r ? &*r : nullptr});
    if (relu_here) {
      visit_dtype(dt, [&]<class T>() {
        if constexpr (std::is_floating_point_v<opmath_t<T>>) apply_epilogue<T>(out, std::nullopt, act, r);
      });
    }
    return;
  }
  matmul_into(self, mat2, out, 1, false, 0, nullptr);
  if (out.numel() == 0) return;
  visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_floating_point_v<opmath_t<T>>) apply_epilogue<T>(out, bias, act, residual);
  });
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::mm, &mm_impl>(r, "aten::mm");
  def_structured<&meta::mm_dtype, &mm_dtype_impl>(r, "aten::mm.dtype");
  def_structured<&meta::bmm, &bmm_impl>(r, "aten::bmm");
  def_structured<&meta::addmm, &addmm_impl>(r, "aten::addmm");
  // kiln::gemm_epilogue (declared in ops/fused_ops.cpp): one oneDNN primitive with post-ops.
  def_structured<&meta::gemm_epilogue, &gemm_epilogue_impl>(r, "kiln::gemm_epilogue");
});

}  // namespace
}  // namespace kiln::cpu
