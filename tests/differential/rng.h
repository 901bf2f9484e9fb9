// splitmix64: a tiny random generator whose stream depends only on its seed, in every build, so a
// seed names the same program and the same input bytes everywhere.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::difftest {

struct Rng {
  // The stream for `seed`: the seed is scrambled first, so nearby seeds give unrelated streams.
  static Rng from_seed(uint64_t seed) {
    Rng r{seed ^ 0x6a09e667f3bcc909ULL};
    return Rng{r.next()};
  }
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  // Uniform integer in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }
};

}  // namespace kiln::difftest
