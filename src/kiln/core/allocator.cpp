#include "kiln/core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "kiln/core/device_hooks.h"
#include "kiln/support/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif

namespace kiln {
namespace {

// Blocks at least this large are cached on free; smaller ones go straight back to malloc, which
// already recycles them without system calls.
constexpr size_t kCacheMinBytes = size_t{1} << 20;
// By default the cache never holds more than this (set_cpu_cache_limit changes it).
constexpr size_t kDefaultCacheMaxBytes = size_t{2} << 30;

size_t round_up(size_t n) { return (n + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment; }

// Freed blocks are kept by exact (rounded) size. When caching a block would pass the limit, the
// blocks freed longest ago are returned to the system to make room: the block just freed is the one
// the running code is about to ask for again. (Returning the new block instead let blocks of sizes
// no longer used, say those of an earlier workload, fill the cache for good, so every large block of
// a new shape went back to malloc; above glibc's mmap threshold, at most 32 MiB, that is an munmap
// on each free and a fresh mmap, page faults included, on each allocation.)
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    size_t size = round_up(nbytes);
    if (caching() && size >= kCacheMinBytes) {
      std::lock_guard lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second.back().ptr;  // the most recently freed: the likeliest still in cache
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        stats_.cached_bytes -= size;
        ++stats_.hits;
        return p;
      }
      ++stats_.misses;
    }
    void* p = std::aligned_alloc(kCpuAlignment, size);
    if (!p) {
      cpu_cache_release();
      p = std::aligned_alloc(kCpuAlignment, size);
    }
    KILN_CHECK(p != nullptr, "CPU allocator: out of memory allocating {} bytes", nbytes);
    return p;
  }

  void deallocate(void* ptr, size_t nbytes) override {
    if (!ptr) return;
    size_t size = round_up(nbytes);
    if (caching() && size >= kCacheMinBytes) {
      std::vector<void*> evicted;
      {
        std::lock_guard lock(mu_);
        if (size <= limit_) {
          evict_locked(limit_ - size, evicted);
          free_[size].push_back({ptr, ++clock_});
          stats_.cached_bytes += size;
          ptr = nullptr;
        }
      }
      for (void* p : evicted) std::free(p);  // outside the lock: an munmap can take a while
      if (!ptr) return;
    }
    std::free(ptr);
  }

  Device device() const override { return kCPU; }

  // Under AddressSanitizer every block goes back to the system, so use-after-free is caught.
  static bool caching();

  CpuCacheStats stats() {
    std::lock_guard lock(mu_);
    return stats_;
  }

  size_t set_limit(size_t bytes) {
    std::vector<void*> evicted;
    size_t previous;
    {
      std::lock_guard lock(mu_);
      previous = limit_;
      limit_ = bytes;
      evict_locked(bytes, evicted);
    }
    for (void* p : evicted) std::free(p);
    return previous;
  }

  void release() {
    std::lock_guard lock(mu_);
    for (auto& [size, blocks] : free_) {
      for (const Cached& b : blocks) std::free(b.ptr);
    }
    free_.clear();
    stats_.cached_bytes = 0;
  }

 private:
  struct Cached {
    void* ptr;
    uint64_t freed_at;  // clock_ when it was cached: within a size, blocks are in this order
  };

  // Takes the blocks freed longest ago out of the cache until it holds at most `keep` bytes; the
  // caller frees them after unlocking. There are few distinct sizes, so a scan finds the oldest.
  void evict_locked(size_t keep, std::vector<void*>& evicted) {
    while (stats_.cached_bytes > keep) {
      auto oldest = free_.begin();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second.front().freed_at < oldest->second.front().freed_at) oldest = it;
      }
      evicted.push_back(oldest->second.front().ptr);
      oldest->second.pop_front();
      stats_.cached_bytes -= oldest->first;
      ++stats_.evictions;
      if (oldest->second.empty()) free_.erase(oldest);
    }
  }

  std::mutex mu_;
  std::map<size_t, std::deque<Cached>> free_;  // by size; never holds an empty deque
  uint64_t clock_ = 0;
  size_t limit_ = kDefaultCacheMaxBytes;
  CpuCacheStats stats_;
};

class MetaAllocator final : public Allocator {
 public:
  void* allocate(size_t) override { return nullptr; }
  void deallocate(void*, size_t) override {}
  Device device() const override { return kMeta; }
};

bool CpuAllocator::caching() {
#ifdef KILN_ASAN
  return false;
#else
  static const bool enabled = std::getenv("KILN_CPU_CACHE") == nullptr ||
                              std::string_view(std::getenv("KILN_CPU_CACHE")) != "0";
  return enabled;
#endif
}

CpuAllocator& cpu_instance() {
  // Never destroyed: storages freed during static destruction still find their allocator.
  static auto* instance = new CpuAllocator();
  return *instance;
}

}  // namespace

Allocator* cpu_allocator() { return &cpu_instance(); }

Allocator* meta_allocator() {
  static MetaAllocator instance;
  return &instance;
}

Allocator* allocator_for(Device device) {
  switch (device.type) {
    case DeviceType::CPU: return cpu_allocator();
    case DeviceType::Meta: return meta_allocator();
    case DeviceType::CUDA: {
      Device d = resolve_device(device, "allocate");
      return device_hooks(d.type, "allocate").allocator(d.index);
    }
  }
  KILN_FAIL(ErrorKind::Internal, "no allocator for device {}", device);
}

CpuCacheStats cpu_cache_stats() { return cpu_instance().stats(); }
bool cpu_cache_enabled() { return CpuAllocator::caching(); }
void cpu_cache_release() { cpu_instance().release(); }
size_t set_cpu_cache_limit(size_t bytes) { return cpu_instance().set_limit(bytes); }

}  // namespace kiln
