// The default random generator: counter-based (Philox4x32-10), so a random op's output depends
// only on the seed and on how many numbers earlier calls drew — never on the thread count or the
// order threads run in. Each op reserves a range of counters, then fills elements in parallel.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace kiln {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void set_seed(uint64_t seed);
  uint64_t seed() const { return seed_; }
  // Reserves `blocks` 128-bit counter blocks and returns the first.
  uint64_t reserve(uint64_t blocks);
  // The state a run starts from (torch's get_state / set_state): the seed and the next counter.
  struct State {
    uint64_t seed, offset;
  };
  State state();
  void set_state(State s);

 private:
  std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide generator that rand and randn use.
Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

// Philox4x32 with 10 rounds: four 32-bit random words for (key, counter).
std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);

}  // namespace kiln
