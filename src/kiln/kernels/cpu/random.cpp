// rand, randn, native_dropout and randperm on the CPU from the default Philox generator. Element i
// uses word i % 4 of counter block first + i / 4, so the result is the same for any thread count.
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/core/generator.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// Uniform in [0, 1) with as many random bits as T's mantissa holds, so rounding never gives 1.
template <class T>
opmath_t<T> uniform(uint32_t bits) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(bits) * 0x1p-32;
  } else if constexpr (std::is_same_v<T, Half>) {
    return static_cast<float>(bits >> 21) * 0x1p-11f;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<float>(bits >> 24) * 0x1p-8f;
  } else {
    return static_cast<float>(bits >> 8) * 0x1p-24f;
  }
}

template <class Fill>
void fill_blocks(const Tensor& out, const Fill& fill) {
  int64_t n = out.numel();
  if (n == 0) return;
  Generator& gen = default_generator();
  uint64_t blocks = static_cast<uint64_t>((n + 3) / 4);
  uint64_t first = gen.reserve(blocks);
  uint64_t seed = gen.seed();
  parallel_for(0, static_cast<int64_t>(blocks), kGrainSize / 4, [&](int64_t b, int64_t e) {
    for (int64_t block = b; block < e; ++block) {
      auto words = philox4x32(seed, 0, first + static_cast<uint64_t>(block));
      fill(block * 4, std::min<int64_t>(4, n - block * 4), words);
    }
  });
}

void rand_impl(IntArrayRef, std::optional<DType>, std::optional<Layout>, std::optional<Device>, std::optional<bool>,
               const Tensor& out) {
  visit_floating(out.dtype(), "rand", [&]<class T>() {
    T* p = out.data_ptr<T>();
    fill_blocks(out, [&](int64_t base, int64_t count, const std::array<uint32_t, 4>& w) {
      for (int64_t j = 0; j < count; ++j) p[base + j] = T(uniform<T>(w[static_cast<size_t>(j)]));
    });
  });
}

void randn_impl(IntArrayRef, std::optional<DType>, std::optional<Layout>, std::optional<Device>, std::optional<bool>,
                const Tensor& out) {
  visit_floating(out.dtype(), "randn", [&]<class T>() {
    T* p = out.data_ptr<T>();
    fill_blocks(out, [&](int64_t base, int64_t count, const std::array<uint32_t, 4>& w) {
      // Box-Muller on word pairs (0, 1) and (2, 3).
      for (int64_t pair = 0; pair < 2; ++pair) {
        double u1 = (static_cast<double>(w[static_cast<size_t>(2 * pair)]) + 1.0) * 0x1p-32;  // (0, 1]
        double u2 = static_cast<double>(w[static_cast<size_t>(2 * pair + 1)]) * 0x1p-32;
        double radius = std::sqrt(-2.0 * std::log(u1));
        double angle = 6.283185307179586477 * u2;
        if (2 * pair < count) p[base + 2 * pair] = T(static_cast<opmath_t<T>>(radius * std::cos(angle)));
        if (2 * pair + 1 < count) p[base + 2 * pair + 1] = T(static_cast<opmath_t<T>>(radius * std::sin(angle)));
      }
    });
  });
}

// Keeps each element with probability 1 - p, scaled by 1 / (1 - p); the mask says which were kept.
// Not training (train false): the input and an all-true mask.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train) {
  KILN_CHECK(p >= 0 && p <= 1, "native_dropout: p must be in [0, 1], got {}", p);
  KILN_CHECK_TYPE(is_floating(input.dtype()), "native_dropout: expected a floating point input, got {}",
                  input.describe());
  Tensor out = meta::allocate(meta::like_spec(input, input.dtype(), MemoryFormat::Preserve), input.device());
  Tensor mask = meta::allocate(meta::like_spec(input, DType::Bool, MemoryFormat::Preserve), input.device());
  if (input.device().is_meta()) return {out, mask};
  if (!train.value_or(true)) {
    copy_into(out, input);
    copy_into(mask, ones({}, TensorOptions(DType::Bool)));
    return {out, mask};
  }
  Tensor x = input.contiguous(), o = out.contiguous(), m = mask.contiguous();
  visit_floating(input.dtype(), "native_dropout", [&]<class T>() {
    using M = opmath_t<T>;
    const T* in = x.data_ptr<T>();
    T* po = o.data_ptr<T>();
    bool* pm = m.data_ptr<bool>();
    M scale = p < 1 ? M(1.0 / (1.0 - p)) : M(0);  // p = 1: input * 0
    fill_blocks(o, [&](int64_t base, int64_t count, const std::array<uint32_t, 4>& w) {
      for (int64_t j = 0; j < count; ++j) {
        bool keep = static_cast<double>(w[static_cast<size_t>(j)]) * 0x1p-32 >= p;
        pm[base + j] = keep;
        // input * mask * scale, as PyTorch computes it: a dropped inf or NaN is NaN, a dropped -1 is -0.
        po[base + j] = T(M(in[base + j]) * M(keep ? 1 : 0) * scale);
      }
    });
  });
  if (!o.is_same(out)) copy_into(out, o);
  if (!m.is_same(mask)) copy_into(mask, m);
  return {out, mask};
}

// A uniformly random permutation of 0..n-1 (Fisher-Yates on the generator's words).
Tensor randperm(int64_t n, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
                std::optional<bool>) {
  KILN_CHECK(n >= 0, "randperm: n must be non-negative, got {}", n);
  DType dt = dtype.value_or(DType::Int64);
  KILN_CHECK_TYPE(dt != DType::Bool, "randperm: bool is not supported");
  // The largest n whose values 0..n-1 the dtype holds exactly (PyTorch's check).
  int digits = dt == DType::Float16 ? 11 : dt == DType::BFloat16 ? 8 : dt == DType::Float32 ? 24 : 53;
  double largest = is_floating(dt) ? std::ldexp(1.0, digits) + 1 : visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_integral_v<T>) return static_cast<double>(std::numeric_limits<T>::max()) + 1;
    return 0.0;
  });
  KILN_CHECK(static_cast<double>(n) <= largest, "randperm: n ({}) is too large for dtype {}", n, dtype_name(dt));
  Tensor out = meta::allocate(meta::contiguous_spec({n}, dt), device.value_or(kCPU));
  if (out.device().is_meta() || n == 0) return out;
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) perm[static_cast<size_t>(k)] = k;
  Generator& gen = default_generator();
  uint64_t blocks = static_cast<uint64_t>((n + 1) / 2);
  uint64_t first = gen.reserve(blocks);
  for (int64_t k = n - 1; k > 0; --k) {
    auto w = philox4x32(gen.seed(), 0, first + static_cast<uint64_t>(k / 2));
    uint64_t bits = (uint64_t{w[static_cast<size_t>(2 * (k % 2))]} << 32) | w[static_cast<size_t>(2 * (k % 2) + 1)];
    std::swap(perm[static_cast<size_t>(k)], perm[static_cast<size_t>(bits % static_cast<uint64_t>(k + 1))]);
  }
  visit_dtype(dt, [&]<class T>() {
    T* p = out.data_ptr<T>();
    for (int64_t k = 0; k < n; ++k) p[k] = static_cast<T>(perm[static_cast<size_t>(k)]);
  });
  return out;
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::random, &rand_impl>(r, "aten::rand");
  def_structured<&meta::random, &randn_impl>(r, "aten::randn");
  kernels::def_meta_and_cpu<&native_dropout>(r, "aten::native_dropout");
  kernels::def_meta_and_cpu<&randperm>(r, "aten::randperm");
});

}  // namespace
}  // namespace kiln::cpu
