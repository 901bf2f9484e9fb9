// rand and randn on the CPU from the default Philox generator. Element i uses word i % 4 of
// counter block first + i / 4, so the result is the same for any thread count.
#include <cmath>

#include "kiln/core/generator.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/register.h"

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

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::random, &rand_impl>(r, "aten::rand");
  def_structured<&meta::random, &randn_impl>(r, "aten::randn");
});

}  // namespace
}  // namespace kiln::cpu
