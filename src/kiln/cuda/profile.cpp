#include "kiln/cuda/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

namespace kiln::cuda {
namespace {

struct Record {
  std::string name;
  CUevent start, end;
};

// The launches timed so far; reported (and their events destroyed) at exit, after every other
// exit handler registered later, before the driver's own (registered at cuInit, earlier).
struct Profile {
  std::mutex mutex;
  std::vector<Record> records;
};

Profile& profile() {
  static Profile* p = new Profile;  // never destroyed: the exit handler reads it
  return *p;
}

void report() {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  const Driver& d = driver();
  struct Total {
    int calls = 0;
    double ms = 0;
  };
  std::map<std::string, Total> by_name;
  double all = 0;
  for (const Record& r : p.records) {
    float ms = 0;
    if (d.cuEventSynchronize(r.end) == kSuccess && d.cuEventElapsedTime(&ms, r.start, r.end) == kSuccess) {
      by_name[r.name].calls++;
      by_name[r.name].ms += ms;
      all += ms;
    }
    d.cuEventDestroy(r.start);
    d.cuEventDestroy(r.end);
  }
  std::vector<std::pair<std::string, Total>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  std::fprintf(stderr, "KILN_CUDA_PROFILE: %zu launches, %.3f ms of device time\n", p.records.size(), all);
  std::fprintf(stderr, "%10s %8s %12s %7s  %s\n", "total ms", "calls", "mean us", "share", "kernel");
  for (const auto& [name, t] : rows) {
    std::fprintf(stderr, "%10.3f %8d %12.2f %6.1f%%  %s\n", t.ms, t.calls, 1000 * t.ms / t.calls,
                 all > 0 ? 100 * t.ms / all : 0.0, name.c_str());
  }
}

CUevent record_event() {
  const Driver& d = driver();
  CUevent e = nullptr;
  d.check(d.cuEventCreate(&e, 0), "cuEventCreate");
  d.check(d.cuEventRecord(e, nullptr), "cuEventRecord");
  return e;
}

}  // namespace

bool profiling() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_CUDA_PROFILE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

KernelTiming::KernelTiming(const std::string& name) {
  if (!profiling()) return;
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(report); });
  name_ = name;
  start_ = record_event();
}

KernelTiming::~KernelTiming() {
  if (start_ == nullptr) return;
  CUevent end = nullptr;
  try {
    end = record_event();
  } catch (...) {  // nothing to report from a destructor: the launch's own error says more
    driver().cuEventDestroy(start_);
    return;
  }
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.records.push_back({name_, start_, end});
}

std::string kernel_name(CUfunction f) {
  const char* name = nullptr;
  const Driver& d = driver();
  if (d.cuFuncGetName != nullptr && d.cuFuncGetName(&name, f) == kSuccess && name != nullptr) return name;
  return fmt::format("kernel {}", static_cast<const void*>(f));
}

}  // namespace kiln::cuda
