// The median time of a call, for the hand-built probes of bench/ (reduction_probe.cpp,
// attention_probe.cpp): 3 warm-up calls, then `reps` timed ones.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace kiln::bench {

inline double median_ms(const std::function<void()>& f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace kiln::bench
