// Large transient memory comes from the CPU allocator's cache call after call, eager and compiled,
// even when blocks of sizes no longer asked for (an earlier workload's) have filled the cache to its
// limit. Were the cache to turn new sizes away, every call would fetch its large blocks from the
// system again: under glibc's defaults an mmap, and page faults, for each block above 32 MiB.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/api/compile.h"
#include "kiln/core/allocator.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

// bench/compiled_bench.cpp's rmsnorm_bf16 and pointwise_chain.
std::vector<Tensor> rmsnorm(const std::vector<Tensor>& in) {
  Tensor ms = mean(pow(in[0], Scalar(2)), IntArrayRef{-1}, true);
  Tensor scaled = mul(in[0], rsqrt(add(ms, Scalar(1e-6))));
  return {mul(scaled, in[1])};
}

std::vector<Tensor> pointwise_chain(const std::vector<Tensor>& in) {
  return {mul(gelu(add(mul(in[0], in[1]), in[2])), sigmoid(in[0]))};
}

// Lowers the cache's limit and fills the cache with blocks of a size nothing below allocates.
class CacheReuse : public ::testing::Test {
 protected:
  static constexpr size_t kLimit = size_t{16} << 20;
  static constexpr size_t kStale = (size_t{3} << 20) / 2 + 4096;  // 1.5 MiB + 4 KiB

  void SetUp() override {
    if (!cpu_cache_enabled()) GTEST_SKIP() << "the CPU cache is off (sanitizer build or KILN_CPU_CACHE=0)";
    cpu_cache_release();
    previous_limit_ = set_cpu_cache_limit(kLimit);
    std::vector<void*> stale;
    for (size_t held = 0; held + kStale <= kLimit; held += kStale) stale.push_back(cpu_allocator()->allocate(kStale));
    for (void* p : stale) cpu_allocator()->deallocate(p, kStale);
    ASSERT_GT(cpu_cache_stats().cached_bytes, kLimit - kStale);
  }

  void TearDown() override {
    if (!cpu_cache_enabled()) return;
    set_cpu_cache_limit(previous_limit_);
    cpu_cache_release();
  }

  // The allocations of one call of `fn` that the cache could not serve.
  template <class F>
  static size_t misses_of(F&& fn) {
    size_t before = cpu_cache_stats().misses;
    fn();
    return cpu_cache_stats().misses - before;
  }

  size_t previous_limit_ = 0;
};

TEST_F(CacheReuse, NewSizeEvictsTheOldestBlocks) {
  Allocator* a = cpu_allocator();
  constexpr size_t kSize = size_t{3} << 20;
  auto round = [&] {
    void* p = a->allocate(kSize);
    void* q = a->allocate(kSize);
    a->deallocate(p, kSize);
    a->deallocate(q, kSize);
  };
  size_t evictions = cpu_cache_stats().evictions;
  EXPECT_EQ(misses_of(round), 2u);
  EXPECT_EQ(misses_of(round), 0u);
  EXPECT_EQ(misses_of(round), 0u);
  CpuCacheStats s = cpu_cache_stats();
  EXPECT_LE(s.cached_bytes, kLimit);
  EXPECT_EQ(s.evictions - evictions, 4u);  // 4 stale blocks made room for the two new ones
  // A block larger than the limit is never cached, and evicts nothing.
  void* big = a->allocate(kLimit + 64);
  a->deallocate(big, kLimit + 64);
  EXPECT_EQ(cpu_cache_stats().evictions, s.evictions);
  EXPECT_EQ(cpu_cache_stats().cached_bytes, s.cached_bytes);
  // Lowering the limit returns the oldest blocks at once.
  set_cpu_cache_limit(kSize);
  EXPECT_LE(cpu_cache_stats().cached_bytes, kSize);
  EXPECT_EQ(misses_of(round), 1u);  // the most recently freed 3 MiB block stayed
}

TEST_F(CacheReuse, EagerCallsReuseTheirBlocks) {
  Tensor x = randn({1024, 1024}).to(DType::BFloat16), w = randn({1024}).to(DType::BFloat16);  // 2 MiB
  EXPECT_GT(misses_of([&] { rmsnorm({x, w}); }), 0u);
  EXPECT_EQ(misses_of([&] { rmsnorm({x, w}); }), 0u);
  EXPECT_EQ(misses_of([&] { rmsnorm({x, w}); }), 0u);
  Tensor y = randn({512, 1024}), a = randn({1024}), b = randn({1024});  // 2 MiB of float32
  pointwise_chain({y, a, b});  // its first call may find rmsnorm's 2 MiB blocks
  EXPECT_EQ(misses_of([&] { pointwise_chain({y, a, b}); }), 0u);
  EXPECT_LE(cpu_cache_stats().cached_bytes, kLimit);
}

TEST_F(CacheReuse, CompiledCallsReuseTheirBlocks) {
  Tensor x = randn({1024, 1024}).to(DType::BFloat16), w = randn({1024}).to(DType::BFloat16);
  CompiledFunction fn = compile(rmsnorm);
  size_t first = misses_of([&] { fn({x, w}); });
  EXPECT_GT(first, 0u);
  EXPECT_EQ(misses_of([&] { fn({x, w}); }), 0u);
  EXPECT_EQ(misses_of([&] { fn({x, w}); }), 0u);
}

}  // namespace
}  // namespace kiln
