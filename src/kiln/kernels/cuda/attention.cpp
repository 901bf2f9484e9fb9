// kiln::attention on CUDA tensors: the flash kernel of flash_attention.cu, for the device's
// architecture: its common variants compiled at kiln's build and carried in libkiln, any other
// compiled by NVRTC at its first use and kept in the content-addressed cache
// (support/content_cache.h); loaded once per process and device.
// Float16 and bfloat16 queries with head sizes that are multiples of 16 up to 128; anything else is
// a kiln::Error saying so (the CUDA target fuses only what this takes: compiler/target.cpp).
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/kernels/cuda/attention.h"

#include "kiln/cuda/hooks.h"
#include "kiln/cuda/module.h"
#include "kiln/cuda/nvrtc.h"
#include "kiln/kernels/meta/nn.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"
#include "kiln/ops/prebuild.h"
#include "kiln/support/content_cache.h"
#include "kiln/support/log.h"
#include "kiln/support/sha256.h"

// The variants compiled ahead of time (scripts/precompile_flash.py, at kiln's build): the cubins'
// symbols (extern "C") and KILN_FLASH_CUBINS.
#include "kiln/kernels/cuda/flash_attention_cubins.inc"

namespace kiln::kernels {
namespace {

constexpr const char* kSource =
#include "kiln/kernels/cuda/flash_attention_source.inc"
    ;

struct Precompiled {
  std::string_view arch, options;
  const char* begin;
  const char* end;
};

const std::vector<Precompiled>& precompiled() {
#define KILN_FLASH_ENTRY(arch, options, begin, end) Precompiled{arch, options, begin, end},
  static const std::vector<Precompiled> table = {KILN_FLASH_CUBINS(KILN_FLASH_ENTRY)};
#undef KILN_FLASH_ENTRY
  return table;
}

struct Loaded {
  std::unique_ptr<cuda::Module> module;
  cuda::CUfunction function = nullptr;
  cuda::CUfunction mask_summary = nullptr;  // a 16-bit mask's summary, and the keys' and values'
  cuda::CUfunction kv_summary = nullptr;    // (flash_attention.cu)
};

// The kernel for `v` on `device`, built (or read from the cache) and loaded at the first call.
const Loaded& kernel_for(int device, const FlashAttentionVariant& v) {
  const cuda::DeviceProperties& props = cuda::device_properties(device);
  const std::string arch = fmt::format("sm_{}{}", props.major, props.minor);
  static std::mutex mutex;
  static std::map<std::tuple<int, bool, int64_t, int, bool, FlashAttentionShape>, Loaded> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto k = std::make_tuple(device, v.half, v.head_size, v.mask, v.causal, v.shape);
  auto it = loaded.find(k);
  if (it != loaded.end()) return it->second;
  Loaded l;
  try {
    l.module = std::make_unique<cuda::Module>(device, flash_attention_cubin(arch, v));
  } catch (const Error&) {
    // A precompiled cubin this driver does not load (an older driver than the build's NVRTC): the
    // variant is built here, by the NVRTC the driver goes with.
    if (!flash_attention_precompiled(arch, v)) throw;
    l.module = std::make_unique<cuda::Module>(device, flash_attention_cubin(arch, v, /*use_precompiled=*/false));
  }
  l.function = l.module->function("kiln_flash_attention");
  if (v.mask == 1) {
    l.mask_summary = l.module->function("kiln_attention_mask_summary");
    l.kv_summary = l.module->function("kiln_attention_kv_summary");
  }
  return loaded.emplace(k, std::move(l)).first->second;
}

// Whether the kernel reads `t`'s rows 16 bytes at a time: unit stride in the head size, the other
// strides and the start 16-byte aligned. Any other layout is read element by element, in place.
bool vector_rows(const Tensor& t) {
  bool ok = t.stride(3) == 1 && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  for (int64_t d = 0; d < 3; ++d) ok = ok && t.stride(d) % 8 == 0;
  return ok;
}

// Whether the mask's pairs of keys (2i, 2i + 1) of every row lie side by side, aligned to their
// size: one load a pair.
bool mask_pairs(const Tensor& mask) {
  bool ok = mask.stride(3) == 1 && reinterpret_cast<uintptr_t>(mask.data_ptr()) % (2 * mask.element_size()) == 0;
  for (int64_t d = 0; d < 3; ++d) ok = ok && mask.stride(d) % 2 == 0;
  return ok;
}

// Whether the kernel copies the mask's tiles through shared memory (a 16-bit mask): unit stride
// along the keys, every row 16-byte aligned.
bool mask_tiles(const Tensor& mask) {
  bool ok = mask.stride(3) == 1 && reinterpret_cast<uintptr_t>(mask.data_ptr()) % 16 == 0;
  for (int64_t d = 0; d < 3; ++d) ok = ok && mask.stride(d) % 8 == 0;
  return ok;
}

void attention_cuda(const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask,
                    double scale, bool is_causal, const Tensor& out) {
  flash_attention(query, key, value, attn_mask, scale, is_causal, out);
}

}  // namespace

void flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const std::optional<Tensor>& attn_mask, double scale, bool is_causal, const Tensor& out,
                     FlashAttentionShape shape) {
  constexpr std::string_view op = "kiln::attention";
  const DType dt = query.dtype();
  KILN_CHECK_KIND(dt == DType::BFloat16 || dt == DType::Float16, ErrorKind::NotImplemented,
                  "{}: on CUDA the flash kernel takes float16 or bfloat16 queries, got {}", op, dtype_name(dt));
  const int64_t batch = query.size(0), heads = query.size(1), L = query.size(2), S = key.size(2), D = query.size(3);
  KILN_CHECK_KIND(D > 0 && D % 16 == 0 && D <= 128, ErrorKind::NotImplemented,
                  "{}: on CUDA the head size must be a multiple of 16 up to 128, got query {}", op, query.sizes());
  for (const Tensor* t : {&key, &value, attn_mask ? &*attn_mask : nullptr}) {
    KILN_CHECK(t == nullptr || t->device() == query.device(),
               "{}: every tensor must be on the queries' device {}, got {}", op, query.device(), t->describe());
  }
  KILN_CHECK(out.is_contiguous() && out.sizes().vec() == query.sizes().vec() && out.dtype() == dt &&
                 out.device() == query.device(),
             "{}: the output must be a contiguous {} tensor of the queries' sizes {} on {}, got {}", op, dtype_name(dt),
             query.sizes(), query.device(), out.describe());
  if (out.numel() == 0) return;
  FlashAttentionVariant v = flash_attention_variant(query, attn_mask, is_causal, shape);
  const int64_t block_rows = 16 * v.shape.warps * v.shape.m_tiles;
  const int64_t row_blocks = (L + block_rows - 1) / block_rows;
  KILN_CHECK_KIND(L < (int64_t{1} << 31) && S < (int64_t{1} << 31) && heads < (int64_t{1} << 31) &&
                      batch * heads * row_blocks < (int64_t{1} << 31),
                  ErrorKind::NotImplemented, "{}: query {} and key {} are past the CUDA kernel's grid", op,
                  query.sizes(), key.sizes());
  const Tensor &q = query, &k = key, &val = value;
  int vector_loads = (vector_rows(q) ? 1 : 0) | (vector_rows(k) ? 2 : 0) | (vector_rows(val) ? 4 : 0);
  Tensor mask;
  int64_t ms[4] = {0, 0, 0, 0};
  const void* mask_data = nullptr;
  int pairs = 0, tiles = 0;
  Tensor summary;   // per block of rows and tile of keys of the mask's own (batch, head): all -inf, all zero
  Tensor kv_bound;  // per (batch, head) and tile of keys: the largest |k|, inf where a key or value is not finite
  int64_t sum_strides[2] = {0, 0};
  if (attn_mask) {
    mask = attn_mask->expand({batch, heads, L, S});
    for (int64_t d = 0; d < 4; ++d) ms[d] = mask.stride(d);
    mask_data = mask.data_ptr();
    pairs = mask_pairs(mask) ? 1 : 0;
    tiles = v.mask == 1 && mask_tiles(mask) ? 1 : 0;
  }
  const int device = out.device().index;
  const Loaded& kernel = kernel_for(device, v);
  int64_t strides[12] = {q.stride(0),   q.stride(1),   q.stride(2),   k.stride(0), k.stride(1), k.stride(2),
                         val.stride(0), val.stride(1), val.stride(2), q.stride(3), k.stride(3), val.stride(3)};
  int h32 = static_cast<int>(heads), l32 = static_cast<int>(L), s32 = static_cast<int>(S);
  const void* kp = k.data_ptr();
  const void* vp = val.data_ptr();
  if (tiles && S > 0) {
    const int64_t key_tiles = (S + v.shape.keys - 1) / v.shape.keys, per_head = row_blocks * key_tiles;
    const int64_t mask_batches = ms[0] == 0 ? 1 : batch, mask_heads = ms[1] == 0 ? 1 : heads;
    const TensorOptions on_device = TensorOptions(DType::UInt8).device(out.device());
    summary = empty({mask_batches * mask_heads * per_head}, on_device);
    sum_strides[0] = mask_batches == 1 ? 0 : mask_heads * per_head;
    sum_strides[1] = mask_heads == 1 ? 0 : per_head;
    const void* md = mask_data;
    void* sp = summary.data_ptr();
    int mh32 = static_cast<int>(mask_heads);
    void* summary_params[] = {&md, &sp, &ms[0], &ms[1], &ms[2], &mh32, &l32, &s32};
    kernel.module->launch(kernel.mask_summary, summary.numel(), 128, summary_params);
    kv_bound = empty({batch * heads * key_tiles}, on_device.dtype(DType::Float32));
    void* bp = kv_bound.data_ptr();
    void* kv_params[] = {&kp,         &vp,         &bp,         &strides[3],  &strides[4], &strides[5], &strides[10],
                         &strides[6], &strides[7], &strides[8], &strides[11], &h32,        &s32};
    kernel.module->launch(kernel.kv_summary, kv_bound.numel(), 128, kv_params);
  }
  const void* summary_data = summary.defined() ? summary.data_ptr() : nullptr;
  const void* bound_data = kv_bound.defined() ? kv_bound.data_ptr() : nullptr;
  const void* qp = q.data_ptr();
  void* op_ = out.data_ptr();
  float scale32 = static_cast<float>(scale);
  void* params[] = {
      &qp,         &kp,          &vp,          &op_,          &mask_data,      &strides[0],     &strides[1],
      &strides[2], &strides[3],  &strides[4],  &strides[5],   &strides[6],     &strides[7],     &strides[8],
      &strides[9], &strides[10], &strides[11], &vector_loads, &ms[0],          &ms[1],          &ms[2],
      &ms[3],      &pairs,       &tiles,       &summary_data, &sum_strides[0], &sum_strides[1], &bound_data,
      &h32,        &l32,         &s32,         &scale32};
  kernel.module->launch(kernel.function, batch * heads * row_blocks, 32 * v.shape.warps, params);
}

FlashAttentionVariant flash_attention_variant(const Tensor& query, const std::optional<Tensor>& attn_mask,
                                              bool is_causal, FlashAttentionShape shape) {
  FlashAttentionVariant v{.half = query.dtype() == DType::Float16, .head_size = query.size(3), .causal = is_causal};
  if (attn_mask) v.mask = attn_mask->dtype() == query.dtype() ? 1 : 2;
  v.shape = flash_attention_shape(v.head_size, shape);
  return v;
}

FlashAttentionShape flash_attention_shape(int64_t head_size, FlashAttentionShape shape) {
  if (shape.warps == 0) shape.warps = 4;
  if (shape.m_tiles == 0) shape.m_tiles = head_size <= 64 ? 2 : 1;
  if (shape.keys == 0) shape.keys = 64;
  KILN_CHECK(shape.warps > 0 && shape.m_tiles > 0 && 16 * shape.warps * shape.m_tiles <= 256 && shape.keys % 16 == 0 &&
                 shape.keys > 0 && shape.keys <= 128,
             "kiln::attention: the CUDA kernel takes up to 256 query rows a block and a multiple of 16 keys up to "
             "128 a tile, got {} warps of {} row tiles and {} keys",
             shape.warps, shape.m_tiles, shape.keys);
  return shape;
}

namespace {

const Precompiled* find_precompiled(std::string_view arch, std::string_view options) {
  for (const Precompiled& p : precompiled()) {
    if (p.arch == arch && p.options == options) return &p;
  }
  return nullptr;
}

// The NVRTC options of `v`: what the kernel's source is compiled with, and the precompiled table's key.
std::vector<std::string> nvrtc_options(const FlashAttentionVariant& v) {
  const FlashAttentionShape shape = flash_attention_shape(v.head_size, v.shape);
  return {
      "-std=c++17",
      fmt::format("-DKILN_ATT_HALF={}", v.half ? 1 : 0),
      fmt::format("-DKILN_ATT_D={}", v.head_size),
      fmt::format("-DKILN_ATT_MASK={}", v.mask),
      fmt::format("-DKILN_ATT_CAUSAL={}", v.causal ? 1 : 0),
      fmt::format("-DKILN_ATT_WARPS={}", shape.warps),
      fmt::format("-DKILN_ATT_MT={}", shape.m_tiles),
      fmt::format("-DKILN_ATT_KEYS={}", shape.keys),
  };
}

}  // namespace

bool flash_attention_precompiled(const std::string& arch, const FlashAttentionVariant& v) {
  return find_precompiled(arch, fmt::format("{}", fmt::join(nvrtc_options(v), " "))) != nullptr;
}

size_t flash_attention_precompiled_count() { return precompiled().size(); }

std::string flash_attention_cubin(const std::string& arch, const FlashAttentionVariant& v, bool use_precompiled) {
  const std::vector<std::string> options = nvrtc_options(v);
  const std::string joined = fmt::format("{}", fmt::join(options, " "));
  if (const Precompiled* p = use_precompiled ? find_precompiled(arch, joined) : nullptr) {
    KILN_LOG("compile", "flash attention ({}): precompiled for {}", joined, arch);
    return std::string(p->begin, p->end);
  }
  const cuda::Nvrtc& nvrtc = cuda::nvrtc();
  Sha256 h;
  h.update(kSource).update(arch).update(fmt::format("NVRTC {}.{}", nvrtc.major, nvrtc.minor));
  for (const auto& o : options) h.update("\n").update(o);
  bool from_cache = false;
  const auto start = std::chrono::steady_clock::now();
  std::string cubin = cached_bytes(
      h.hex_digest(), ".cubin", [&] { return cuda::compile_cubin(kSource, "flash_attention.cu", arch, {}, options); },
      from_cache);
  KILN_LOG("compile", "flash attention ({}): {} in {:.1f} ms", joined, from_cache ? "cache hit" : "built by NVRTC",
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return cubin;
}

namespace {

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::attention, &attention_cuda>(r, "kiln::attention", DispatchKey::CUDA);
  // A compiled graph's attention: its variant built and loaded while the graph's kernels build.
  prebuild_attr(DispatchKey::CUDA).set(r.get("kiln::attention"), [](const Stack& args, Device device) {
    // kiln::attention(query, key, value, attn_mask, scale, is_causal); the call checks the rest.
    KILN_CHECK(args.size() == 6, "kiln::attention's prebuild: {} arguments, 6 expected", args.size());
    const Tensor& query = args.at(0).to_tensor();
    const DType dt = query.dtype();
    const int64_t d = query.dim() == 4 ? query.size(3) : 0;
    if (query.numel() == 0 || (dt != DType::BFloat16 && dt != DType::Float16) || d <= 0 || d % 16 != 0 || d > 128)
      return;  // the call refuses or does nothing
    std::optional<Tensor> mask;
    if (!args.at(3).is_none()) mask = args.at(3).to_tensor();
    kernel_for(device.index, flash_attention_variant(query, mask, args.at(5).to_bool()));
  });
});

}  // namespace
}  // namespace kiln::kernels
