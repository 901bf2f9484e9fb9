// Software prefetch for row kernels that read a row from memory once and then compute from cache
// in later passes: during those passes they ask for the next row, a chunk at a time, so that
// memory works while they compute (all at once, the requests would not overlap the work).
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Rows of at most this many input bytes prefetch the next row (small next to a 1-2 MiB L2).
inline constexpr int64_t kPrefetchRowBytes = 64 * 1024;
// Elements of a pass between two requests for the next row's matching bytes.
inline constexpr int64_t kPrefetchChunk = 1024;

// Asks for `bytes` from `p` to come into L2, one request per 64-byte line.
inline void prefetch_l2(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off, 0, 2);
}

// The row after row r of a contiguous [*, n] input when the calling thread reads it next (r + 1 <
// end) and it is short enough to prefetch; null otherwise.
template <class T>
const T* next_row(const T* x, int64_t r, int64_t end, int64_t n) {
  return r + 1 < end && n * static_cast<int64_t>(sizeof(T)) <= kPrefetchRowBytes ? x + (r + 1) * n : nullptr;
}

}  // namespace kiln::cpu
