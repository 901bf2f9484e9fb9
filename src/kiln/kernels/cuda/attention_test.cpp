// kiln::attention's CUDA flash kernel (kernels/cuda/attention.cpp): every variant compiles with NVRTC
// for the architectures kiln targets (no GPU needed); on the GPU machine (`make test-gpu`), its
// results against softmax(Q K^T * scale + mask) V computed in float64 on the CPU with the unfused ops,
// on shapes inside one 64-row, 64-key tile and across several, masks of both dtypes broadcast over
// batch and heads, causal rows, strided inputs, rows whose scores are all -inf (NaN), no keys (0).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "device_tensors.h"
#include "kiln/cuda/nvrtc.h"
#include "kiln/kernels/cuda/attention.h"
#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln_error.h"

namespace kiln {
namespace {

const Device kCuda{DeviceType::CUDA, 0};
constexpr double kInf = std::numeric_limits<double>::infinity();

// The common variants are compiled at kiln's build (by the NVRTC the tests find too) and linked into
// libkiln: a graph's first attention loads one rather than waiting for NVRTC.
TEST(CudaAttention, CommonVariantsArePrecompiled) {
  if (kernels::flash_attention_precompiled_count() == 0) GTEST_SKIP() << "the build found no NVRTC to precompile with";
  EXPECT_EQ(kernels::flash_attention_precompiled_count(), 32u) << "16 variants for each of sm_80 and sm_90";
  for (const std::string arch : {"sm_80", "sm_90"}) {
    for (bool half : {false, true}) {
      for (int64_t d : {64, 128}) {
        for (int mask : {0, 1, 2}) {
          kernels::FlashAttentionVariant v{.half = half, .head_size = d, .mask = mask};
          EXPECT_TRUE(kernels::flash_attention_precompiled(arch, v)) << arch << " " << half << " " << d << " " << mask;
        }
      }
    }
    EXPECT_TRUE(kernels::flash_attention_precompiled(arch, {.head_size = 64, .causal = true}));
  }
  EXPECT_FALSE(kernels::flash_attention_precompiled("sm_90", {.head_size = 16}));
  EXPECT_FALSE(kernels::flash_attention_precompiled("sm_90", {.head_size = 64, .shape = {8, 1, 64}}));
  EXPECT_FALSE(kernels::flash_attention_precompiled("sm_100", {.head_size = 64}));
  const std::string cubin = kernels::flash_attention_cubin("sm_90", {.head_size = 64, .mask = 1});
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f"
                                            "ELF",
                                            4));
}

TEST(CudaAttention, EveryVariantCompilesWithNvrtc) {
  if (!cuda::nvrtc_available()) GTEST_SKIP() << "NVRTC is not installed";
  for (bool half : {false, true}) {
    for (int64_t d : {16, 64, 128}) {
      for (int mask : {0, 1, 2}) {
        kernels::FlashAttentionVariant v{.half = half, .head_size = d, .mask = mask, .causal = mask == 0 && d == 64};
        SCOPED_TRACE(fmt::format("half {} head size {} mask {}", half, d, mask));
        EXPECT_GT(kernels::flash_attention_cubin("sm_90", v).size(), 1000u);
      }
    }
  }
  EXPECT_GT(kernels::flash_attention_cubin("sm_80", {.head_size = 64}).size(), 1000u);
  // Shapes other than the default (the probe's, bench/probes/attention_gpu_probe.cpp) compile too;
  // ones past the kernel's limits are refused before NVRTC sees them.
  for (kernels::FlashAttentionShape shape : {kernels::FlashAttentionShape{8, 1, 64}, {4, 2, 128}, {2, 4, 32}}) {
    EXPECT_GT(
        kernels::flash_attention_cubin("sm_90", {.head_size = 64, .mask = 2, .causal = true, .shape = shape}).size(),
        1000u);
  }
  EXPECT_KILN_ERROR(kernels::flash_attention_shape(64, {8, 4, 64}), "up to 256 query rows a block");
  EXPECT_KILN_ERROR(kernels::flash_attention_shape(64, {4, 1, 40}), "multiple of 16 keys up to 128");
}

Tensor cuda_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
                      double scale, bool causal = false) {
  return call<Tensor>(Registry::global().get("kiln::attention"), q, k, v, mask, scale, causal);
}

// softmax(q k^T * scale + mask) v in float64 on the CPU: a row whose scores are all -inf is NaN.
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask, double scale,
                 bool causal) {
  Tensor scores = mul(matmul(q.cpu().to(DType::Float64), k.cpu().to(DType::Float64).transpose(-2, -1)), Scalar(scale));
  if (mask) scores = add(scores, mask->cpu().to(DType::Float64));
  if (causal) {
    int64_t l = q.size(2), s = k.size(2);
    scores = add(scores, triu(full({l, s}, -kInf, TensorOptions(DType::Float64)), 1));
  }
  return matmul(softmax(scores, -1), v.cpu().to(DType::Float64));
}

// The kernel's result against the reference, NaN where the reference is; the weights are rounded to
// the inputs' 16-bit type before their product with the values, as flash kernels do.
void expect_matches(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask, double scale,
                    bool causal, const std::string& what) {
  Tensor got = cuda_attention(q, k, v, mask, scale, causal);
  ASSERT_EQ(got.dtype(), q.dtype()) << what;
  ASSERT_EQ(got.sizes().vec(), q.sizes().vec()) << what;
  ASSERT_TRUE(got.is_contiguous()) << what;
  Tensor want = reference(q, k, v, mask, scale, causal);
  Tensor g = got.cpu().to(DType::Float64);
  Tensor nan_want = isnan(want);
  EXPECT_TRUE(same(isnan(g), nan_want)) << what << ": NaN where the float64 result is not, or the reverse";
  Tensor zero = zeros_like(want);
  Tensor w = where(nan_want, zero, want), gg = where(nan_want, zero, g);
  expect_close(gg, w, 2e-2, 2e-2, what);
}

TEST(CudaAttention, MatchesFloat64SoftmaxOfScores) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(41);
  struct Shape {
    int64_t b, h, l, s, d;
  };
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    for (Shape sh : {Shape{2, 3, 64, 64, 64}, Shape{1, 2, 70, 130, 32}, Shape{1, 1, 1, 1, 16},
                     Shape{2, 2, 200, 37, 128}, Shape{1, 4, 129, 257, 64}}) {
      auto o = TensorOptions(dt);
      Tensor q = randn({sh.b, sh.h, sh.l, sh.d}, o).to(kCuda), k = randn({sh.b, sh.h, sh.s, sh.d}, o).to(kCuda),
             v = randn({sh.b, sh.h, sh.s, sh.d}, o).to(kCuda);
      std::string what = fmt::format("{} [{}, {}, {}, {}] keys {}", dtype_name(dt), sh.b, sh.h, sh.l, sh.d, sh.s);
      double scale = 1 / std::sqrt(static_cast<double>(sh.d));
      expect_matches(q, k, v, std::nullopt, scale, false, what);
      expect_matches(q, k, v, std::nullopt, scale, true, what + " causal");
      // An additive mask of the queries' dtype over [L, S], broadcast over batch and heads; one of
      // float32 with a batch dim.
      Tensor m16 = mul(randn({sh.l, sh.s}), Scalar(2)).to(dt).to(kCuda);
      expect_matches(q, k, v, m16, 0.3, false, what + " mask " + std::string(dtype_name(dt)));
      // The same dtype's mask as a view of rows padded to a multiple of 8 keys: 16-byte aligned rows,
      // which the kernel copies through shared memory a tile at a time (zeros past the keys' end).
      Tensor padded = mul(randn({sh.l, (sh.s + 7) / 8 * 8}), Scalar(2)).to(dt).to(kCuda);
      expect_matches(q, k, v, slice(padded, 1, 0, sh.s), 0.3, false, what + " mask of aligned rows");
      expect_matches(q, k, v, slice(padded, 1, 0, sh.s), 0.3, true, what + " mask of aligned rows, causal");
      Tensor m32 = randn({sh.b, 1, sh.l, sh.s}).to(kCuda);
      expect_matches(q, k, v, m32, 0.3, false, what + " float32 mask");
    }
  }
}

// The queries, keys and values of one [B, T, 3, H, D] projection, as views [B, H, T, D] (the layout
// of a transformer's split heads), read 16 bytes at a time; views whose head size is not contiguous
// (keys kept transposed, as a copy of K^T leaves them; queries with odd strides), read element by
// element. None is copied.
TEST(CudaAttention, ReadsStridedViews) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(42);
  Tensor qkv = randn({2, 100, 3, 4, 64}, TensorOptions(DType::BFloat16)).to(kCuda);
  Tensor q = select(qkv, 2, 0).transpose(1, 2), k = select(qkv, 2, 1).transpose(1, 2),
         v = select(qkv, 2, 2).transpose(1, 2);
  expect_matches(q, k, v, std::nullopt, 0.125, false, "views of one projection");
  Tensor odd = randn({1, 2, 64, 33}, TensorOptions(DType::BFloat16)).to(kCuda).transpose(2, 3);  // [1, 2, 33, 64]
  Tensor kk = randn({1, 2, 40, 64}, TensorOptions(DType::BFloat16)).to(kCuda);
  expect_matches(odd, kk, kk, std::nullopt, 0.125, false, "queries with a strided head size");
  Tensor kt = randn({2, 3, 64, 150}, TensorOptions(DType::Float16)).to(kCuda).transpose(2, 3);  // [2, 3, 150, 64]
  Tensor q16 = randn({2, 3, 90, 64}, TensorOptions(DType::Float16)).to(kCuda);
  Tensor v16 = randn({2, 3, 150, 64}, TensorOptions(DType::Float16)).to(kCuda);
  expect_matches(q16, kt, v16, std::nullopt, 0.125, false, "keys transposed in memory");
  expect_matches(q16, kt, kt, std::nullopt, 0.125, true, "keys and values transposed in memory, causal");
}

// A row whose scores are all -inf (a masked-out query) is NaN, as softmax then a product gives,
// even when its -inf tile comes before finite ones for the other rows; with no keys the result is 0.
TEST(CudaAttention, MaskedRowsAreNaNAndNoKeysIsZero) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(43);
  auto o = TensorOptions(DType::BFloat16);
  Tensor q = randn({1, 2, 80, 32}, o).to(kCuda), k = randn({1, 2, 150, 32}, o).to(kCuda),
         v = randn({1, 2, 150, 32}, o).to(kCuda);
  Tensor mask = zeros({80, 150}, TensorOptions(DType::Float32));
  mask.select(0, 5).fill_(Scalar(-kInf));                   // row 5: nothing to weigh
  mask.select(0, 70).slice(0, 0, 64).fill_(Scalar(-kInf));  // row 70: its first key tile masked
  expect_matches(q, k, v, mask.to(kCuda), 0.2, false, "masked rows");
  Tensor got = cuda_attention(q, k, v, mask.to(kCuda), 0.2).cpu().to(DType::Float32);
  EXPECT_TRUE(std::isnan(got[0][1][5][0].item<double>()));
  EXPECT_TRUE(std::isfinite(got[0][1][70][0].item<double>()));
  Tensor none = cuda_attention(q, slice(k, 2, 0, 0), slice(v, 2, 0, 0), std::nullopt, 0.2);
  EXPECT_EQ(none.cpu().to(DType::Float64).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(cuda_attention(slice(q, 2, 0, 0), k, v, std::nullopt, 0.2).numel(), 0);
}

// A causal block skips the keys after its last row (weights 0): a value there that is inf or NaN
// still makes its column NaN in every row that weighs it 0, as softmax then a product does; finite
// ones change nothing. Tiles across the diagonal and the keys' end check each key; every shape the
// probe tries gives the default's result.
TEST(CudaAttention, CausalBlocksSkipLaterKeysButNotTheirInfinities) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(44);
  auto o = TensorOptions(DType::BFloat16);
  // 280 queries, 300 keys: no row weighs key 290 (the last block computes it, weight 0; the others
  // skip it); every row weighs key 200 of head 1 zero or not.
  Tensor q = randn({1, 2, 280, 64}, o), k = randn({1, 2, 300, 64}, o), v = randn({1, 2, 300, 64}, o);
  v.select(0, 0).select(0, 0).select(0, 290).select(0, 3).fill_(Scalar(kInf));
  v.select(0, 0).select(0, 1).select(0, 200).select(0, 7).fill_(Scalar(std::nan("")));
  Tensor qc = q.to(kCuda), kc = k.to(kCuda), vc = v.to(kCuda);
  expect_matches(qc, kc, vc, std::nullopt, 0.125, true, "causal, non-finite values after a block");
  Tensor got = cuda_attention(qc, kc, vc, std::nullopt, 0.125, true).cpu().to(DType::Float32);
  EXPECT_TRUE(std::isnan(got[0][0][10][3].item<double>()));     // row 10 weighs key 290 zero
  EXPECT_TRUE(std::isfinite(got[0][0][10][4].item<double>()));  // other columns are untouched
  EXPECT_TRUE(std::isnan(got[0][1][0][7].item<double>()));
  for (bool causal : {false, true}) {
    Tensor want = cuda_attention(kc, qc, qc, std::nullopt, 0.125, causal).cpu();
    for (kernels::FlashAttentionShape shape : {kernels::FlashAttentionShape{8, 1, 64}, {4, 2, 128}, {2, 4, 32}}) {
      Tensor out = empty_like(kc);
      kernels::flash_attention(kc, qc, qc, std::nullopt, 0.125, causal, out, shape);
      expect_close(
          out.cpu().to(DType::Float64), want.to(DType::Float64), 1e-2, 1e-2,
          fmt::format("causal {} shape {} warps {} tiles {} keys", causal, shape.warps, shape.m_tiles, shape.keys));
    }
  }
}

// Equal results, NaN in the same places.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  Tensor g = got.cpu().to(DType::Float64), w = want.cpu().to(DType::Float64);
  Tensor nan_w = isnan(w), zero = zeros_like(w);
  EXPECT_TRUE(same(isnan(g), nan_w)) << what << ": NaN in other places";
  EXPECT_TRUE(same(where(nan_w, zero, g), where(nan_w, zero, w))) << what << ": values differ";
}

// A 16-bit mask with 16-byte aligned rows is summarized per tile: tiles all -inf are skipped where
// that changes nothing, tiles all zero add no mask. The same mask read in place (rows of an odd
// stride: no summary) gives the same bits: with finite inputs, with an inf or NaN value under a
// skipped tile (its column NaN), keys whose scores overflow float32 (inf + -inf: NaN), and queries
// holding inf (nothing skipped). Masks broadcast over batch and heads, and one per batch.
TEST(CudaAttention, MaskTilesAllNegInfAreSkippedOnlyWhereNothingChanges) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(45);
  const int64_t B = 2, H = 2, L = 200, S = 300, D = 64;
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    auto o = TensorOptions(dt);
    // Row i weighs keys up to i + 40 and none from 256 on (batch 1: none from 100 on).
    const int64_t padded = (S + 7) / 8 * 8;
    Tensor pattern = zeros({B, 1, L, padded}, TensorOptions(DType::Float32));
    for (int64_t i = 0; i < L; ++i)
      pattern.select(0, 0).select(0, 0).select(0, i).slice(0, i + 41, S).fill_(Scalar(-kInf));
    pattern.select(0, 0).slice(2, 256, S).fill_(Scalar(-kInf));
    pattern.select(0, 1).copy_(pattern.select(0, 0));
    pattern.select(0, 1).slice(2, 100, S).fill_(Scalar(-kInf));
    Tensor aligned = pattern.to(dt).to(kCuda);                               // 16-byte aligned rows
    Tensor odd = slice(pattern, 3, 0, S + 1).contiguous().to(dt).to(kCuda);  // rows of S + 1 keys: read in place
    Tensor q = randn({B, H, L, D}, o), k = randn({B, H, S, D}, o), v = randn({B, H, S, D}, o);
    // With `reference`, also against float64 (whose scores do not overflow).
    auto check = [&](const std::string& what, bool reference) {
      Tensor qc = q.to(kCuda), kc = k.to(kCuda), vc = v.to(kCuda);
      for (bool per_batch : {false, true}) {
        Tensor tiled = slice(per_batch ? aligned : aligned.select(0, 0).select(0, 0), -1, 0, S);
        Tensor in_place = slice(per_batch ? odd : odd.select(0, 0).select(0, 0), -1, 0, S);
        std::string w = fmt::format("{} {}{}", dtype_name(dt), what, per_batch ? ", a mask per batch" : "");
        expect_same(cuda_attention(qc, kc, vc, tiled, 0.125), cuda_attention(qc, kc, vc, in_place, 0.125), w);
        if (reference) expect_matches(qc, kc, vc, tiled, 0.125, false, w);
      }
    };
    check("finite inputs", true);
    v.select(0, 0).select(0, 1).select(0, 280).select(0, 3).fill_(Scalar(kInf));  // under tiles all -inf
    v.select(0, 1).select(0, 0).select(0, 150).select(0, 9).fill_(Scalar(std::nan("")));
    check("inf and NaN values under skipped tiles", true);
    k.select(0, 0).select(0, 0).select(0, 270).fill_(Scalar(dt == DType::Float16 ? 6e4 : 1e30));
    q.select(0, 0).select(0, 0).copy_(mul(q.select(0, 0).select(0, 0), Scalar(dt == DType::Float16 ? 1e3 : 1e10)));
    check("huge keys under skipped tiles (bfloat16: scores that overflow)", false);
    q.select(0, 1).select(0, 1).select(0, 7).select(0, 0).fill_(Scalar(kInf));
    check("queries holding inf", false);
  }
}

TEST(CudaAttention, RefusesWhatTheKernelDoesNotTake) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  Tensor f32 = randn({1, 1, 8, 16}).to(kCuda);
  EXPECT_KILN_ERROR(cuda_attention(f32, f32, f32, std::nullopt, 1.0), "float16 or bfloat16");
  Tensor wide = randn({1, 1, 8, 144}, TensorOptions(DType::BFloat16)).to(kCuda);
  EXPECT_KILN_ERROR(cuda_attention(wide, wide, wide, std::nullopt, 1.0), "multiple of 16 up to 128");
  // A 0-d CPU mask passes the dispatcher's device check (a CPU scalar joins any device), not the kernel's.
  Tensor q = randn({1, 1, 8, 16}, TensorOptions(DType::BFloat16)).to(kCuda);
  EXPECT_KILN_ERROR(cuda_attention(q, q, q, scalar_tensor(0, DType::BFloat16), 1.0),
                    "every tensor must be on the queries' device");
}

}  // namespace
}  // namespace kiln
