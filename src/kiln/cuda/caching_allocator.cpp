#include "kiln/cuda/caching_allocator.h"

#include <tuple>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::cuda {

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

CachingAllocator::CachingAllocator(Device device, std::unique_ptr<RawMemory> raw)
    : device_(device), raw_(std::move(raw)) {}

CachingAllocator::~CachingAllocator() {
  // Blocks still handed out keep their segments (their storages may outlive the allocator at exit).
  std::lock_guard lock(mu_);
  release_free_segments();
}

size_t CachingAllocator::round_size(size_t nbytes) {
  if (nbytes <= kMinBlock) return kMinBlock;
  return (nbytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t CachingAllocator::segment_size(size_t size) {
  if (size <= kSmallRequest) return kSmallSegment;
  if (size < (size_t{10} << 20)) return kLargeSegment;
  constexpr size_t kRound = size_t{2} << 20;
  return (size + kRound - 1) / kRound * kRound;
}

// The smallest free block of the pool on `stream` that holds `size`, split when what is left is
// worth keeping (a block of the small pool; over 1 MiB in the large one), or nullptr.
CachingAllocator::Block* CachingAllocator::take_free(size_t size, uintptr_t stream, bool small) {
  FreeSet& free = pool(small);
  Block key{nullptr, size, stream, small};
  auto it = free.lower_bound(&key);
  if (it == free.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  free.erase(it);
  size_t rest = b->size - size;
  if (small ? rest >= kMinBlock : rest > kSmallRequest) {
    auto* tail = new Block{b->ptr + size, rest, stream, small};
    tail->prev = b;
    tail->next = b->next;
    if (b->next) b->next->prev = tail;
    b->next = tail;
    b->size = size;
    free.insert(tail);
  }
  return b;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, uintptr_t stream, bool small) {
  size_t bytes = segment_size(size);
  void* p = raw_->allocate(bytes);
  if (!p) return nullptr;
  ++stats_.segment_allocations;
  stats_.reserved_bytes += bytes;
  auto* b = new Block{static_cast<char*>(p), bytes, stream, small};
  pool(small).insert(b);
  return take_free(size, stream, small);
}

void* CachingAllocator::allocate(size_t nbytes, uintptr_t stream) {
  if (nbytes == 0) return nullptr;
  size_t size = round_size(nbytes);
  bool small = size <= kSmallRequest;
  std::lock_guard lock(mu_);
  Block* b = take_free(size, stream, small);
  if (!b) b = new_segment(size, stream, small);
  if (!b) {
    ++stats_.out_of_memory_retries;
    release_free_segments();
    b = new_segment(size, stream, small);
  }
  if (!b) {
    std::string info = raw_->memory_info();
    KILN_FAIL(ErrorKind::Value,
              "{}: out of memory: tried to allocate {} bytes; kiln holds {} bytes in tensors and {} reserved "
              "(returned what it cached){}{}",
              device_, nbytes, stats_.allocated_bytes, stats_.reserved_bytes, info.empty() ? "" : "; ", info);
  }
  b->allocated = true;
  allocated_.emplace(b->ptr, b);
  stats_.allocated_bytes += b->size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  ++stats_.allocations;
  return b->ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t) {
  if (!ptr) return;
  std::lock_guard lock(mu_);
  auto it = allocated_.find(static_cast<char*>(ptr));
  KILN_CHECK_KIND(it != allocated_.end(), ErrorKind::Internal, "{}: freeing memory this allocator did not hand out",
                  device_);
  Block* b = it->second;
  allocated_.erase(it);
  b->allocated = false;
  stats_.allocated_bytes -= b->size;
  FreeSet& free = pool(b->small);
  // Merge with free neighbours of the same segment (they are on the same stream: a segment serves one).
  for (Block* n : {b->prev, b->next}) {
    if (!n || n->allocated) continue;
    free.erase(n);
    if (n == b->prev) {
      n->size += b->size;
      n->next = b->next;
      if (b->next) b->next->prev = n;
      delete b;
      b = n;
    } else {
      b->size += n->size;
      b->next = n->next;
      if (n->next) n->next->prev = b;
      delete n;
    }
  }
  free.insert(b);
}

// Returns the segments that are one free block (caller holds mu_).
void CachingAllocator::release_free_segments() {
  for (FreeSet* free : {&small_free_, &large_free_}) {
    std::vector<Block*> whole;
    for (Block* b : *free) {
      if (!b->prev && !b->next) whole.push_back(b);
    }
    for (Block* b : whole) {
      free->erase(b);
      raw_->free(b->ptr);
      stats_.reserved_bytes -= b->size;
      ++stats_.segment_frees;
      delete b;
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mu_);
  release_free_segments();
}

CachingStats CachingAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace kiln::cuda
