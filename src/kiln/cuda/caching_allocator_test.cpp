// The caching allocator's logic on fake device memory (host memory with a capacity): rounding,
// the two pools, splitting and merging, reuse per stream, empty_cache, and out of memory.
#include "kiln/cuda/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "kiln/support/error.h"

namespace kiln::cuda {
namespace {

class FakeMemory final : public RawMemory {
 public:
  explicit FakeMemory(size_t capacity, size_t* live) : capacity_(capacity), live_(live) {}
  void* allocate(size_t bytes) override {
    if (*live_ + bytes > capacity_) return nullptr;
    *live_ += bytes;
    void* p = std::malloc(bytes);
    sizes_[p] = bytes;
    return p;
  }
  void free(void* p) override {
    *live_ -= sizes_.at(p);
    sizes_.erase(p);
    std::free(p);
  }
  std::string memory_info() const override { return fmt::format("the fake device holds {}", capacity_); }

 private:
  size_t capacity_;
  size_t* live_;
  std::map<void*, size_t> sizes_;
};

constexpr size_t kMiB = size_t{1} << 20;
const Device kDev{DeviceType::CUDA, 0};

TEST(CachingAllocator, RoundsAndPicksSegmentSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(11 * kMiB + 1), 12 * kMiB);
}

TEST(CachingAllocator, SmallBlocksSplitOneSegmentAndMergeBack) {
  size_t live = 0;
  CachingAllocator a(kDev, std::make_unique<FakeMemory>(64 * kMiB, &live));
  std::set<char*> seen;
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) {
    void* p = a.allocate(1000);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(seen.insert(static_cast<char*>(p)).second);
    blocks.push_back(p);
  }
  EXPECT_EQ(a.stats().segment_allocations, 1u);  // eight 1 KiB blocks from one 2 MiB segment
  EXPECT_EQ(a.stats().allocated_bytes, 8 * 1024u);
  EXPECT_EQ(live, 2 * kMiB);
  // Consecutive blocks of a segment are adjacent.
  EXPECT_EQ(static_cast<char*>(blocks[1]) - static_cast<char*>(blocks[0]), 1024);
  for (void* p : blocks) a.deallocate(p, 1000);
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
  // All merged back into one free block: a request of the whole segment reuses it.
  void* whole = a.allocate(kMiB);
  EXPECT_EQ(whole, blocks[0]);
  EXPECT_EQ(a.stats().segment_allocations, 1u);
  a.deallocate(whole, kMiB);
  a.empty_cache();
  EXPECT_EQ(live, 0u);
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
  EXPECT_EQ(a.stats().segment_frees, 1u);
}

TEST(CachingAllocator, FreedBlocksAreReusedOnTheirStreamOnly) {
  size_t live = 0;
  CachingAllocator a(kDev, std::make_unique<FakeMemory>(256 * kMiB, &live));
  void* p = a.allocate(30 * kMiB, /*stream=*/1);
  a.deallocate(p, 30 * kMiB);
  void* q = a.allocate(30 * kMiB, /*stream=*/2);  // another stream: a new segment
  EXPECT_NE(q, p);
  EXPECT_EQ(a.stats().segment_allocations, 2u);
  void* r = a.allocate(29 * kMiB, /*stream=*/1);  // its own stream: the freed block
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.stats().segment_allocations, 2u);
  a.deallocate(q, 30 * kMiB);
  a.deallocate(r, 29 * kMiB);
  EXPECT_EQ(a.stats().peak_allocated_bytes, 60 * kMiB);  // the 30 MiB block whole: 1 MiB is not worth a split
}

TEST(CachingAllocator, LargeSegmentsSplitOnlyWhatIsWorthKeeping) {
  size_t live = 0;
  CachingAllocator a(kDev, std::make_unique<FakeMemory>(256 * kMiB, &live));
  void* p = a.allocate(2 * kMiB);  // a 20 MiB segment; 18 MiB stay free
  void* q = a.allocate(4 * kMiB);  // from the rest
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), static_cast<ptrdiff_t>(2 * kMiB));
  EXPECT_EQ(a.stats().segment_allocations, 1u);
  a.deallocate(p, 2 * kMiB);
  a.deallocate(q, 4 * kMiB);
  a.empty_cache();
  EXPECT_EQ(live, 0u);
}

TEST(CachingAllocator, OutOfMemoryEmptiesTheCacheThenSaysWhatWasAsked) {
  size_t live = 0;
  CachingAllocator a(kDev, std::make_unique<FakeMemory>(40 * kMiB, &live));
  void* p = a.allocate(30 * kMiB);
  a.deallocate(p, 30 * kMiB);     // cached: 30 MiB held
  void* small = a.allocate(100);  // a 2 MiB small segment
  // 32 MiB of 40 held; 36 MiB fits only once the cached segment goes back.
  void* big = a.allocate(36 * kMiB);
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(a.stats().out_of_memory_retries, 1u);
  try {
    (void)a.allocate(8 * kMiB);
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuda:0: out of memory: tried to allocate 8388608 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("the fake device holds"), std::string::npos) << m;
  }
  a.deallocate(big, 36 * kMiB);
  a.deallocate(small, 100);
  a.empty_cache();
  EXPECT_EQ(live, 0u);
}

TEST(CachingAllocator, FreeingForeignMemoryIsAnError) {
  size_t live = 0;
  CachingAllocator a(kDev, std::make_unique<FakeMemory>(4 * kMiB, &live));
  int x = 0;
  EXPECT_THROW(a.deallocate(&x, 4), Error);
}

}  // namespace
}  // namespace kiln::cuda
