// The caching device allocator: cudaMalloc-class calls cost tens of microseconds and synchronize the
// device, so freed memory is kept and handed out again, as PyTorch's CUDA allocator does. Requests
// are rounded to 512 bytes; those up to 1 MiB come from 2 MiB segments (the small pool), larger ones
// from segments of 20 MiB (requests under 10 MiB) or the request rounded to 2 MiB. A free block
// larger than a request is split, a freed block merges with free neighbours of its segment, and a
// block is reused only on the stream it was freed on (a later stream-ordered free needs no event).
// When the device is full, cached segments are returned and the request tried once more; then it is
// a kiln::Error with the bytes asked and held. The logic knows nothing of CUDA: segments come from a
// RawMemory (cuMemAlloc on a GPU, host memory in tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "kiln/core/allocator.h"

namespace kiln::cuda {

class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // A segment of `bytes`, or nullptr when the device has no room; other failures throw.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  // The device's free and total memory, for out-of-memory messages ("" when unknown).
  virtual std::string memory_info() const { return ""; }
};

struct CachingStats {
  size_t allocated_bytes = 0;        // in blocks handed out now (rounded sizes)
  size_t reserved_bytes = 0;         // in segments held from the device
  size_t peak_allocated_bytes = 0;   // the most allocated_bytes has been
  size_t allocations = 0;            // blocks handed out, ever
  size_t segment_allocations = 0;    // segments asked of the device, ever
  size_t segment_frees = 0;          // segments returned to it, ever
  size_t out_of_memory_retries = 0;  // times the cache was emptied to make room
};

class CachingAllocator final : public Allocator {
 public:
  // Blocks at most this large come from the small pool.
  static constexpr size_t kSmallRequest = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeSegment = size_t{20} << 20;
  static constexpr size_t kMinBlock = 512;

  CachingAllocator(Device device, std::unique_ptr<RawMemory> raw);
  ~CachingAllocator() override;

  void* allocate(size_t nbytes) override { return allocate(nbytes, 0); }
  // On `stream` (an opaque CUstream value; 0 the default stream).
  void* allocate(size_t nbytes, uintptr_t stream);
  void deallocate(void* ptr, size_t nbytes) override;
  Device device() const override { return device_; }

  // Returns every segment none of whose memory is handed out to the device.
  void empty_cache();
  CachingStats stats() const;
  // The size a request of `nbytes` takes (a multiple of kMinBlock).
  static size_t round_size(size_t nbytes);
  // The size of the segment that serves a request of rounded size `size`.
  static size_t segment_size(size_t size);

 private:
  struct Block {
    char* ptr;
    size_t size;
    uintptr_t stream;
    bool small;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment, by address
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, BySize>;

  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  Block* take_free(size_t size, uintptr_t stream, bool small);
  Block* new_segment(size_t size, uintptr_t stream, bool small);
  void release_free_segments();

  Device device_;
  std::unique_ptr<RawMemory> raw_;
  mutable std::mutex mu_;
  FreeSet small_free_, large_free_;
  std::map<char*, Block*> allocated_;  // by address
  CachingStats stats_;
};

}  // namespace kiln::cuda
