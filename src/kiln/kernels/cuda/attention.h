// kiln::attention's CUDA kernel (flash_attention.cu, registered by attention.cpp): its variants and
// their build, which needs NVRTC but no GPU (the tests compile every variant on machines without one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/ops/tensor.h"

namespace kiln::kernels {

// How the kernel divides its work: a block of `warps` warps takes 16 * m_tiles query rows a warp
// and walks the keys `keys` at a time. 0 in a field picks its default for the head size.
struct FlashAttentionShape {
  int warps = 0;
  int m_tiles = 0;
  int keys = 0;
  auto operator<=>(const FlashAttentionShape&) const = default;
};

struct FlashAttentionVariant {
  bool half = false;      // float16 (else bfloat16)
  int64_t head_size = 0;  // a multiple of 16 up to 128
  int mask = 0;           // 0: none; 1: an additive mask of the queries' dtype; 2: of float32
  bool causal = false;
  FlashAttentionShape shape{};
};

// `shape` with its 0 fields set for head size `head_size`: 4 warps of two row tiles (128 rows a
// block, each key fragment feeding two products) while the registers hold two tiles' queries,
// scores and outputs (head sizes up to 64), else one; 64 keys a tile. Throws kiln::Error for a
// shape the kernel cannot take (rows of a block past 256, keys not a multiple of 16 up to 128).
FlashAttentionShape flash_attention_shape(int64_t head_size, FlashAttentionShape shape = {});

// The variant a call takes: the queries' dtype and head size, the mask's kind, causality; `shape`
// with its defaults (flash_attention_shape).
FlashAttentionVariant flash_attention_variant(const Tensor& query, const std::optional<Tensor>& attn_mask,
                                              bool is_causal, FlashAttentionShape shape = {});
// The cubin of `v` for `arch` ("sm_90"): the one libkiln carries (flash_attention_precompiled), else
// from the content-addressed cache or built by NVRTC (the cache key hashes the kernel's source, the
// options, the architecture and NVRTC's version); `use_precompiled` false skips the first. Where
// NVRTC is needed, throws kiln::Error with its log when the variant does not compile, or "NVRTC
// was not found".
std::string flash_attention_cubin(const std::string& arch, const FlashAttentionVariant& v, bool use_precompiled = true);
// How many variants libkiln carries compiled (0 where its build found no NVRTC).
size_t flash_attention_precompiled_count();

// Whether libkiln carries `v` compiled for `arch` (scripts/precompile_flash.py: float16 and bfloat16,
// head sizes 64 and 128, each mask kind, the default shape, for sm_80 and sm_90, where the build had
// NVRTC): flash_attention_cubin then returns it without NVRTC. The script repeats the default shape
// of flash_attention_shape (4 warps, 2 row tiles up to head size 64 else 1, 64 keys): change both.
bool flash_attention_precompiled(const std::string& arch, const FlashAttentionVariant& v);
// kiln::attention's CUDA kernel with a chosen shape, writing `out` (contiguous, the queries' sizes
// and dtype): what the registered kernel runs with the default shape; benchmarks try others.
void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const std::optional<Tensor>& attn_mask, double scale, bool is_causal, const Tensor& out,
                     FlashAttentionShape shape = {});

}  // namespace kiln::kernels
