// Allocators own device memory. Each device type has one; a Storage remembers which allocator
// made its memory and returns it there. The CPU allocator aligns to 64 bytes (a cache line, one
// AVX-512 register) and keeps freed large blocks for reuse, so steady-state eager execution does
// not pay the kernel's page faults for every new output.
#pragma once

#include <cstddef>

#include "kiln/core/device.h"

namespace kiln {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for `nbytes` (nullptr when nbytes is 0); throws kiln::Error when out of memory.
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual Device device() const = 0;
};

inline constexpr size_t kCpuAlignment = 64;

Allocator* cpu_allocator();
// Hands out no memory: meta tensors have sizes and strides but no data.
Allocator* meta_allocator();
// The allocator for a device (a CUDA one through its device hooks, "cuda" meaning the current
// device); throws kiln::Error for a device kiln cannot allocate on (no driver, no such device).
Allocator* allocator_for(Device device);

// Statistics of the CPU allocator's cache of freed blocks (for tests and `kiln` diagnostics).
struct CpuCacheStats {
  size_t cached_bytes = 0;  // held for reuse now
  size_t hits = 0;          // allocations served from the cache
  size_t misses = 0;        // allocations that went to the system
  size_t evictions = 0;     // cached blocks returned to the system to keep under the limit
};
CpuCacheStats cpu_cache_stats();
// False under AddressSanitizer (so use-after-free is caught) and when KILN_CPU_CACHE=0.
bool cpu_cache_enabled();
// Returns all cached blocks to the system.
void cpu_cache_release();
// Sets the most the cache may hold (2 GiB unless set; 0 caches nothing) and returns the previous
// limit. Over it, the blocks freed longest ago go back to the system first.
size_t set_cpu_cache_limit(size_t bytes);

}  // namespace kiln
