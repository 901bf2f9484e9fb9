// parallel_for: splits [begin, end) into one contiguous chunk per OpenMP thread when the range is
// larger than `grain`. An exception thrown in a chunk is carried out of the parallel region and
// rethrown on the calling thread (OpenMP would otherwise terminate the process).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>

#include <omp.h>

namespace kiln::cpu {

// Elements below which a pointwise loop runs on one thread.
inline constexpr int64_t kGrainSize = 32768;

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  int64_t chunks = std::min<int64_t>(max_threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    f(begin, end);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mu;
#pragma omp parallel num_threads(static_cast <int>(chunks))
  {
    int64_t nt = omp_get_num_threads();
    int64_t tid = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = begin + tid * chunk;
    int64_t e = std::min(end, b + chunk);
    if (b < e) {
      try {
        f(b, e);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace kiln::cpu
