// kiln::attention's CUDA kernel (flash_attention.cu, registered by attention.cpp): its variants and
// their build, which needs NVRTC but no GPU (the tests compile every variant on machines without one).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::kernels {

struct FlashAttentionVariant {
  bool half = false;      // float16 (else bfloat16)
  int64_t head_size = 0;  // a multiple of 16 up to 128
  int mask = 0;           // 0: none; 1: an additive mask of the queries' dtype; 2: of float32
  bool causal = false;
};

// The warps of a block of variant `v`: 8 (128 query rows, the keys and values read from L2 half as
// often) while its registers allow two blocks a multiprocessor (head sizes up to 64), else 4.
int flash_attention_warps(const FlashAttentionVariant& v);

// The cubin of `v` for `arch` ("sm_90"), from the content-addressed cache or built by NVRTC (its
// key hashes the kernel's source, the options, the architecture and NVRTC's version). Throws
// kiln::Error with NVRTC's log when it does not compile, or "NVRTC was not found".
std::string flash_attention_cubin(const std::string& arch, const FlashAttentionVariant& v);

}  // namespace kiln::kernels
