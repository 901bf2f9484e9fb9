// The CUDA device hooks (core/device_hooks.h): kiln's CUDA devices through the driver (driver.h),
// each with its primary context and a caching allocator. Registered as the CUDA loader when libkiln
// loads; nothing touches the driver until a CUDA device is first used.
#pragma once

#include <string>

#include "kiln/cuda/caching_allocator.h"

namespace kiln::cuda {

// The caching allocator of device `index` (statistics, empty_cache); a kiln::Error without CUDA.
CachingAllocator& device_allocator(int index);

// A GPU's properties, as a target reads them.
struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability: 9.0 for an H100
  int multiprocessors = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;  // with opt-in
  size_t total_memory = 0;
};
const DeviceProperties& device_properties(int index);

// Makes device `index`'s primary context current on this thread (what driver calls on it need).
void make_current(int index);

}  // namespace kiln::cuda
