// Hash combination for composite keys (kernel caches, primitive caches, CSE later on).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace kiln {

inline size_t hash_combine(size_t seed, size_t value) {
  // The 64-bit golden-ratio mix: spreads each input over all bits before combining.
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

template <class... Ts>
size_t hash_values(const Ts&... values) {
  size_t seed = 0;
  ((seed = hash_combine(seed, std::hash<Ts>{}(values))), ...);
  return seed;
}

}  // namespace kiln
