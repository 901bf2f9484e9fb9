// Is a buffer's speed a property of its pages? The slow mode of kiln_compiled_bench (one row's calls
// 2-10x slower in some processes, the other rows normal) could have been a buffer's. This probe maps
// `count` buffers of `mib` MiB each, alike except in two things: whether transparent huge pages are
// asked for (madvise), and whether the main thread or all threads touch them first. It then times
// each buffer alone, hot (an in-place multiply-add on all threads, repeated: at 8 MiB the buffer
// stays in the caches, as a 1/8-size workload's data does) and cold (one read per round over all
// buffers). Bimodal times among like buffers of one process would mean the pages decide; on the GPU
// machine's host they did not (bench/README.md, "The slow mode looked for at its source"). Every
// read and update is checked; the run it reports predates the check.
// Not part of the build:
//   g++ -std=c++20 -O3 -march=x86-64-v3 -fopenmp bench/probes/page_probe.cpp -o /tmp/page_probe
//   /tmp/page_probe [count=32] [mib=8]
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "probe_timing.h"

namespace {

struct Buffer {
  float* data = nullptr;
  size_t bytes = 0;
  bool huge = false;      // madvise(MADV_HUGEPAGE) asked for
  bool parallel = false;  // first touched by all threads (else by the main thread)
};

constexpr size_t kHugePage = size_t{2} << 20;

Buffer map_buffer(size_t bytes, bool huge, bool parallel) {
  // Over-map by a huge page and keep the aligned part, so that huge pages can back all of it.
  size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto at = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  bool ok = aligned == at || munmap(raw, aligned - at) == 0;
  // The tail stays mapped but inaccessible, so the kernel cannot merge this mapping with the next.
  ok = ok && mprotect(reinterpret_cast<void*>(aligned + bytes), at + span - aligned - bytes, PROT_NONE) == 0;
  Buffer b{reinterpret_cast<float*>(aligned), bytes, huge, parallel};
  ok = ok && madvise(b.data, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0;
  if (!ok) {
    std::perror("munmap, mprotect or madvise");
    std::exit(1);
  }
  auto n = static_cast<int64_t>(bytes / sizeof(float));
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) b.data[i] = 1.0f;
  } else {
    for (int64_t i = 0; i < n; ++i) b.data[i] = 1.0f;
  }
  return b;
}

// AnonHugePages (KiB) of the mapping that starts at `data`, from /proc/self/smaps.
long huge_kib(const void* data) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      in = lo == reinterpret_cast<uintptr_t>(data);
      continue;
    }
    long kib = 0;
    if (in && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kib) == 1) return kib;
  }
  return -1;
}

void scale(Buffer& b) {
  auto n = static_cast<int64_t>(b.bytes / sizeof(float));
  float* x = b.data;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * 0.9f + 0.2f;
}

double read_sum(const Buffer& b) {
  auto n = static_cast<int64_t>(b.bytes / sizeof(float));
  const float* x = b.data;
  float s = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 32;
  size_t mib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 8;
  if (count < 1 || mib < 1) {
    std::fprintf(stderr, "usage: page_probe [count >= 1] [MiB >= 1]\n");
    return 2;
  }
  std::printf("threads %d, %d buffers of %zu MiB; THP enabled: %s; defrag: %s\n", omp_get_max_threads(), count, mib,
              first_line("/sys/kernel/mm/transparent_hugepage/enabled").c_str(),
              first_line("/sys/kernel/mm/transparent_hugepage/defrag").c_str());
  // The thread pool first: its stacks would otherwise be mapped beside a buffer and merged with it.
#pragma omp parallel
  { (void)omp_get_thread_num(); }
  std::vector<Buffer> buffers;
  for (int i = 0; i < count; ++i) buffers.push_back(map_buffer(mib << 20, i % 2 == 1, (i / 2) % 2 == 1));
  // Cold: rounds over all buffers, each read once per round (the others evict it in between).
  constexpr int kRounds = 5;
  std::vector<std::vector<double>> cold(count);
  // Each result is checked: a read sums n ones (float partials: within 1e-6 of n), and each buffer
  // must hold, after its hot updates, the update applied that many times to 1 in float64.
  const auto n = static_cast<double>((mib << 20) / sizeof(float));
  bool ok = true;
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < count; ++i) {
      auto t = std::chrono::steady_clock::now();
      double sum = read_sum(buffers[i]);
      cold[i].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
      ok = ok && std::fabs(sum - n) <= 1e-6 * n;
    }
  }
  std::printf("%4s %5s %8s %9s %12s %12s\n", "buf", "huge", "touch", "huge_KiB", "hot_GBps", "cold_GBps");
  for (int i = 0; i < count; ++i) {
    Buffer& b = buffers[i];
    constexpr int kHotReps = 21;
    double hot_ms = kiln::bench::median_ms([&] { scale(b); }, kHotReps);
    double expected = 1.0;
    for (int k = 0; k < kHotReps + 3; ++k) expected = expected * 0.9f + 0.2f;  // median_ms: 3 warm-ups
    for (size_t k = 0; k < b.bytes / sizeof(float); ++k) ok = ok && std::fabs(b.data[k] - expected) <= 1e-5;
    std::sort(cold[i].begin(), cold[i].end());
    double gb = static_cast<double>(b.bytes) / 1e9;
    std::printf("%4d %5s %8s %9ld %12.1f %12.1f\n", i, b.huge ? "yes" : "no", b.parallel ? "threads" : "main",
                huge_kib(b.data), 2 * gb / hot_ms * 1e3, gb / cold[i][kRounds / 2] * 1e3);
  }
  std::printf("results checked: %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
