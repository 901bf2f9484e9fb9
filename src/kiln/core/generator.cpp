#include "kiln/core/generator.h"

namespace kiln {

void Generator::set_seed(uint64_t seed) {
  std::lock_guard lock(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::reserve(uint64_t blocks) {
  std::lock_guard lock(mu_);
  uint64_t first = offset_;
  offset_ += blocks;
  return first;
}

Generator::State Generator::state() {
  std::lock_guard lock(mu_);
  return {seed_, offset_};
}

void Generator::set_state(State s) {
  std::lock_guard lock(mu_);
  seed_ = s.seed;
  offset_ = s.offset;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().set_seed(seed); }

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{kM0} * c0;
    uint64_t p1 = uint64_t{kM1} * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = static_cast<uint32_t>(p1);
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

}  // namespace kiln
