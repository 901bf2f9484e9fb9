#include "kiln/core/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

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
// The cache never holds more than this; a free that would exceed it returns the block instead.
constexpr size_t kCacheMaxBytes = size_t{2} << 30;

size_t round_up(size_t n) { return (n + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment; }

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    size_t size = round_up(nbytes);
    if (caching() && size >= kCacheMinBytes) {
      std::lock_guard lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
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
      std::lock_guard lock(mu_);
      if (stats_.cached_bytes + size <= kCacheMaxBytes) {
        free_[size].push_back(ptr);
        stats_.cached_bytes += size;
        return;
      }
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

  void release() {
    std::lock_guard lock(mu_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
    }
    free_.clear();
    stats_.cached_bytes = 0;
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
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
    case DeviceType::CUDA: break;
  }
  KILN_FAIL(ErrorKind::NotImplemented, "no allocator for device {} in this build", device);
}

CpuCacheStats cpu_cache_stats() { return cpu_instance().stats(); }
bool cpu_cache_enabled() { return CpuAllocator::caching(); }
void cpu_cache_release() { cpu_instance().release(); }

}  // namespace kiln
