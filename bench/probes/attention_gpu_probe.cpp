// The CUDA flash attention kernel (kernels/cuda/flash_attention.cu) in each of several shapes (warps
// of a block, 16-row query tiles a warp, keys a tile) on the suite's attention problems, to choose
// the defaults of kernels::flash_attention_shape: bfloat16, random inputs, each shape's result
// checked against the default shape's first (max abs difference printed), then its time: the
// median of 20 batches of 10 calls back to back, the device synchronized after each batch, and the
// TFLOP/s of 4 B H L S D (half that when causal). Needs a GPU (bench/gpu.md runs it on the device).
//   kiln_attention_gpu_probe [B H L D]   (default 8 16 1024 64)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "kiln/core/device_hooks.h"
#include "kiln/kernels/cuda/attention.h"
#include "kiln/ops/api.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::Tensor;
using kiln::kernels::FlashAttentionShape;

struct Problem {
  const char* name;
  bool causal;
  bool mask;  // an additive bfloat16 [L, L] mask (GPT-2's, as the compiled block passes it)
};

double time_ms(const std::function<void()>& f, const kiln::Device& dev) {
  for (int i = 0; i < 3; ++i) f();
  kiln::synchronize_device(dev);
  std::vector<double> t;
  for (int r = 0; r < 20; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < 10; ++i) f();
    kiln::synchronize_device(dev);
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() / 10);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  const int64_t B = argc > 4 ? std::atoll(argv[1]) : 8, H = argc > 4 ? std::atoll(argv[2]) : 16,
                L = argc > 4 ? std::atoll(argv[3]) : 1024, D = argc > 4 ? std::atoll(argv[4]) : 64;
  const Device cuda{DeviceType::CUDA, 0};
  manual_seed(7);
  auto o = TensorOptions(DType::BFloat16);
  Tensor q = randn({B, H, L, D}, o).to(cuda), k = randn({B, H, L, D}, o).to(cuda), v = randn({B, H, L, D}, o).to(cuda);
  Tensor causal_mask = triu(full({L, L}, -std::numeric_limits<double>::infinity(), o), 1).to(cuda);
  const double scale = 1 / std::sqrt(static_cast<double>(D));
  std::vector<FlashAttentionShape> shapes = {{},          {8, 1, 64}, {4, 1, 64}, {4, 2, 64}, {4, 2, 32},
                                             {4, 2, 128}, {8, 2, 64}, {4, 4, 32}, {2, 4, 64}};
  fmt::print("B={} H={} L=S={} D={} bfloat16\n", B, H, L, D);
  for (Problem p : {Problem{"plain", false, false}, Problem{"causal", true, false}, Problem{"mask", false, true}}) {
    std::optional<Tensor> mask;
    if (p.mask) mask = causal_mask;
    const double flops = 4.0 * B * H * L * L * D * (p.causal || p.mask ? 0.5 : 1.0);
    Tensor want = empty_like(q);
    kernels::flash_attention(q, k, v, mask, scale, p.causal, want);
    for (const FlashAttentionShape& s : shapes) {
      FlashAttentionShape full = kernels::flash_attention_shape(D, s);
      Tensor out = empty_like(q);
      try {
        kernels::flash_attention(q, k, v, mask, scale, p.causal, out, s);
      } catch (const std::exception& e) {
        fmt::print("{:7} warps {} tiles {} keys {:3}: {}\n", p.name, full.warps, full.m_tiles, full.keys, e.what());
        continue;
      }
      double diff = sub(out.cpu().to(DType::Float32), want.cpu().to(DType::Float32)).abs().amax().item<double>();
      double ms = time_ms([&] { kernels::flash_attention(q, k, v, mask, scale, p.causal, out, s); }, cuda);
      fmt::print("{:7} warps {} tiles {} keys {:3}{}: {:.4f} ms  {:6.1f} TFLOP/s (useful)  max diff {:.3g}\n", p.name,
                 full.warps, full.m_tiles, full.keys, s == FlashAttentionShape{} ? " (default)" : "", ms,
                 flops / ms / 1e9, diff);
    }
  }
  return 0;
}
