// The kiln side of the compiled CPU suite (bench/run_compiled.py drives it): workloads of
// shared/reference/torch_baseline.py, on inputs PyTorch wrote (bench/raw_tensors.h), in kiln eager
// and through kiln::compile (the inductor backend). One process measures every workload it is given
// (--dir, repeated), in order:
//   1. the first compile in the process, of the first workload: the wall time of its first call
//      (trace, lower, fuse, generate, g++, load, one run) with an empty cache, including one-time
//      start-up (the toolchain probe); nothing is subtracted;
//   then for each workload:
//   2. a later cold compile: the same with a new, empty KILN_CACHE_DIR (for the first workload its
//      second compile; for the others their first, in a process that has compiled before);
//   3. the warm start: the first call of a new kiln::compile object whose code is in the cache;
//   (after each cold compile, 1 and 2, a wait for the background build it started, the precompiled
//   prelude of codegen/build.h, so that no later measurement shares the CPU with it, and a sync, so
//   that the flusher threads do not write its files back during a later measurement; --no-sync
//   leaves them to the flushers);
//   (then a pause of --settle-ms, default 0: the host's slow windows follow compiles, bench/README.md);
//   4. kiln eager: WARMUP calls, then REPS timed calls, and more while they add up to less than
//      --min-ms (default 0; at most kMaxCalls), so that a short row's median spans more than a few ms;
//   5. kiln compiled: the same;
//   and last, 6. the copy bandwidth: a parallel memcpy of 512 MiB (read + write counted).
// Every result (each first call, and eager's first call) is compared with the expected outputs in
// the manifest before any time is taken; on a mismatch the process prints why on stderr, reports the
// comparisons made (JSON, with check_failed), skips the workloads after it and exits 3.
// --check-only compiles (one cache for the process) and checks each workload's compiled and eager
// results, timing nothing. At the end, one JSON object per workload measured on stdout; the
// process's first compile is in the first one, its copy bandwidth in every one. Steps 4 and 5 also
// report the minor page faults and CPU allocator cache misses per timed call (near 0 when large
// memory is reused, whatever the malloc policy), and per timed call the process's involuntary
// context switches and the machine's steal time (what a hypervisor took from its vCPUs): the
// measurements a slow call is read against; and, after the compiled calls, the CPU each OpenMP
// thread is on and the process's memory in transparent huge pages (where a slow process is looked for).
// --write-outputs OUT writes each checked result to OUT as a raw file named after it (to study a failure).
//   kiln_compiled_bench --dir DIR [--dir DIR ...] [--reps N] [--min-ms MS] [--warmup N] [--check-only]
//                       [--copy-mib M] [--write-outputs OUT] [--no-sync] [--settle-ms MS]
#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "kiln/api/compile.h"
#include "kiln/core/allocator.h"
#include "kiln/ops/api.h"
#include "raw_tensors.h"
#include "suite_workloads.h"

namespace {

using bench::Inputs;
using bench::Workload;
using bench::workloads;
using kiln::Tensor;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> timed_reps(const std::function<void()>& run, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    run();
    t.push_back(seconds_since(start));
  }
  return t;
}

// What the timed calls took from the system: the process's minor page faults (all threads) and the
// CPU allocator's cache misses, each per call (steady-state calls should have neither); and, call by
// call, the process's involuntary context switches (its threads preempted by other work on this
// machine), the machine's steal time in ms summed over its CPUs (/proc/stat; time a hypervisor ran
// something else while a vCPU wanted to run; /proc/stat counts it in clock ticks, 10 ms, so a
// call's figure is 0 or a multiple of 10), the KiB the machine wrote back to storage (the flusher
// threads that do it run beside the calls), and the process's threads' CPU time and time waiting
// for a CPU (/proc/self/task/*/schedstat), summed over the threads, and the most one thread waited.
// The waits are exact (charged in ns when a thread gets its CPU); the CPU time of a thread that is
// running when it is read lags by up to one scheduler tick (4 ms on the GPU machine's host).
// Reading them takes about 0.3 ms between calls (outside the timed region; 16 threads, this repo's
// 2-core development VM).
// After the timed calls, where the slow mode (issue 10: a process whose calls all run several times
// slower) is looked for: the CPU each OpenMP thread is on (two on one CPU would halve a team) and
// the process's anonymous memory in transparent huge pages (/proc/self/smaps_rollup), in KiB.
struct SystemCost {
  double faults = NAN, cache_misses = NAN;
  std::vector<double> preempted, steal_ms, written_kib;
  std::vector<double> threads_run_ms, threads_queued_ms, max_queued_ms;
  std::vector<double> thread_cpus;
  double huge_kib = NAN;
};

// The CPU each thread of an OpenMP team is on now, in thread order.
std::vector<double> thread_cpus() {
  std::vector<double> cpus(static_cast<size_t>(omp_get_max_threads()), -1);
#pragma omp parallel
  cpus[static_cast<size_t>(omp_get_thread_num())] = sched_getcpu();
  return cpus;
}

// The number that `format` (one %lf) reads from the first line of `path` it matches, or NaN.
double proc_field(const char* path, const char* format) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return NAN;
  char line[256];
  double value = NAN;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, format, &value) == 1) break;
  }
  std::fclose(f);
  return value;
}

// AnonHugePages of /proc/self/smaps_rollup, KiB (NaN where it cannot be read).
double anon_huge_kib() { return proc_field("/proc/self/smaps_rollup", "AnonHugePages: %lf kB"); }

rusage usage_now() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

// The machine's steal time so far, in ms (NaN where /proc/stat cannot be read).
double steal_ms() {
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return NAN;
  unsigned long long v[8] = {};
  int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                        &v[6], &v[7]);
  std::fclose(f);
  return got == 8 ? 1000.0 * static_cast<double>(v[7]) / static_cast<double>(sysconf(_SC_CLK_TCK)) : NAN;
}

// KiB the machine has written back to storage so far (/proc/vmstat nr_written; NaN where unreadable).
double written_kib() {
  return proc_field("/proc/vmstat", "nr_written %lf") * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1024.0;
}

// Each thread's time on a CPU and time runnable but waiting for one, in ns, by thread id
// (/proc/self/task/*/schedstat; empty where it cannot be read).
std::map<int, std::pair<double, double>> thread_sched() {
  std::map<int, std::pair<double, double>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    FILE* f = std::fopen((e.path() / "schedstat").c_str(), "r");
    if (f == nullptr) continue;
    double run = 0, wait = 0;
    if (std::fscanf(f, "%lf %lf", &run, &wait) == 2) out[std::atoi(e.path().filename().c_str())] = {run, wait};
    std::fclose(f);
  }
  return out;
}

// Between two thread_sched() readings: the threads' CPU time and their time waiting for a CPU, in
// ms summed over the threads, and the most one thread waited. NaN where either reading is empty, or
// where every count is 0 (a kernel that keeps none: without delay accounting, it prints zeros).
struct ThreadTimes {
  double run_ms = 0, queued_ms = 0, max_queued_ms = 0;
};
ThreadTimes thread_times(const std::map<int, std::pair<double, double>>& before,
                         const std::map<int, std::pair<double, double>>& after) {
  bool counted = std::any_of(after.begin(), after.end(), [](const auto& e) { return e.second.first > 0; });
  if (before.empty() || after.empty() || !counted) return {NAN, NAN, NAN};
  ThreadTimes t;
  for (const auto& [tid, now] : after) {
    auto was = before.find(tid);
    std::pair<double, double> base = was == before.end() ? std::pair<double, double>{0, 0} : was->second;
    t.run_ms += (now.first - base.first) / 1e6;
    double queued = (now.second - base.second) / 1e6;
    t.queued_ms += queued;
    t.max_queued_ms = std::max(t.max_queued_ms, queued);
  }
  return t;
}

constexpr int kMaxCalls = 2000;  // the most timed calls --min-ms adds up to

// timed_reps, going on past `reps` calls while they add up to less than `min_ms` (at most kMaxCalls
// calls), and counting what the timed calls (not the warm-up) took from the system.
std::vector<double> timed_reps(const std::function<void()>& run, int warmup, int reps, double min_ms,
                               SystemCost* cost) {
  timed_reps(run, warmup, 0);
  long faults = usage_now().ru_minflt;
  size_t misses = kiln::cpu_cache_stats().misses;
  std::vector<double> t;
  double total_ms = 0;
  for (int i = 0; i < reps || (total_ms < min_ms && i < kMaxCalls); ++i) {
    long switches = usage_now().ru_nivcsw;
    double steal = steal_ms();
    double written = written_kib();
    auto sched = thread_sched();
    t.push_back(timed_reps(run, 0, 1)[0]);
    total_ms += t.back() * 1e3;
    ThreadTimes threads = thread_times(sched, thread_sched());
    cost->threads_run_ms.push_back(threads.run_ms);
    cost->threads_queued_ms.push_back(threads.queued_ms);
    cost->max_queued_ms.push_back(threads.max_queued_ms);
    cost->preempted.push_back(static_cast<double>(usage_now().ru_nivcsw - switches));
    cost->steal_ms.push_back(steal_ms() - steal);
    cost->written_kib.push_back(written_kib() - written);
  }
  double calls = static_cast<double>(std::max<size_t>(t.size(), 1));
  cost->faults = static_cast<double>(usage_now().ru_minflt - faults) / calls;
  cost->cache_misses = static_cast<double>(kiln::cpu_cache_stats().misses - misses) / calls;
  cost->thread_cpus = thread_cpus();
  cost->huge_kib = anon_huge_kib();
  return t;
}

// Thrown when a result is outside its tolerance: the message says which and by how much.
struct CheckFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Checker {
  const bench::Manifest& manifest;
  std::vector<Tensor> expected;
  std::string json;       // the comparisons made so far, as JSON objects separated by commas
  std::string write_dir;  // where to write each checked result (--write-outputs), or empty

  // Compares `got` (the outputs of `result`, e.g. "kiln compiled (first compile)") with the expected
  // outputs; throws CheckFailure on the first one outside its tolerance.
  void check(const std::string& result, const Inputs& got) {
    if (got.size() != expected.size()) {
      throw CheckFailure(fmt::format("{} (scale {}): {} returned {} outputs, {} expected", manifest.workload,
                                     manifest.scale, result, got.size(), expected.size()));
    }
    for (size_t i = 0; i < got.size(); ++i) {
      const bench::ExpectedOutput& want = manifest.outputs[i];
      if (!write_dir.empty()) {
        std::string file = result;
        for (char& ch : file) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
        bench::write_raw_tensor(fmt::format("{}/{}.{}.{}.bin", write_dir, file, i, kiln::dtype_name(got[i].dtype())),
                                got[i]);
      }
      bench::Comparison c = bench::compare(got[i], want, expected[i]);
      if (!json.empty()) json += ", ";
      json += fmt::format(
          R"({{"result": "{}", "output": {}, "ok": {}, "max_abs_err": {:.6g}, "max_rel_err": {:.6g}, "rmse": {:.6g}}})",
          result, i, c.ok, c.max_abs, c.max_rel, c.rmse);
      if (!c.ok) {
        throw CheckFailure(fmt::format(
            "{} (scale {}): {}, output {} ({}): max abs err {:.3g}, max rel err {:.3g}, RMSE {:.3g}; "
            "tolerance atol {:.3g} rtol {:.3g}{} against {}; {}",
            manifest.workload, manifest.scale, result, i, got[i].describe(), c.max_abs, c.max_rel, c.rmse, want.atol,
            want.rtol, want.max_rmse >= 0 ? fmt::format(" RMSE {:.3g}", want.max_rmse) : "", want.basis, c.problem));
      }
    }
  }
};

// Bytes per second of a parallel memcpy of `mib` MiB (read + write counted), median of `reps`.
double copy_bandwidth(size_t mib, int reps, std::vector<double>* times) {
  size_t n = mib << 20;
  char* src = static_cast<char*>(std::aligned_alloc(4096, n));
  char* dst = static_cast<char*>(std::aligned_alloc(4096, n));
  if (!src || !dst) throw std::runtime_error(fmt::format("cannot allocate 2 x {} MiB for the copy", mib));
  auto parallel = [n](const std::function<void(size_t, size_t)>& part) {
#pragma omp parallel
    {
      size_t t = static_cast<size_t>(omp_get_thread_num()), nt = static_cast<size_t>(omp_get_num_threads());
      size_t lo = n * t / nt / 4096 * 4096, hi = t + 1 == nt ? n : n * (t + 1) / nt / 4096 * 4096;
      part(lo, hi);
    }
  };
  // First touch by the threads that copy, as a tensor filled by a parallel kernel would be.
  parallel([&](size_t lo, size_t hi) {
    std::memset(src + lo, 1, hi - lo);
    std::memset(dst + lo, 0, hi - lo);
  });
  *times =
      timed_reps([&] { parallel([&](size_t lo, size_t hi) { std::memcpy(dst + lo, src + lo, hi - lo); }); }, 2, reps);
  std::free(src);
  std::free(dst);
  return 2.0 * static_cast<double>(n) / median(*times);
}

std::string num(double v) { return std::isnan(v) ? std::string("null") : fmt::format("{:.6g}", v); }

std::string json_list(const std::vector<double>& v) {
  std::vector<std::string> items;
  for (double x : v) items.push_back(num(x));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

// A new empty directory for a kiln cache.
std::string fresh_cache_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-bench-cache-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a cache directory under " + pattern);
  return pattern;
}

// The first call of a new kiln::compile object (cache as KILN_CACHE_DIR says), timed and checked.
kiln::CompiledFunction first_call(const Workload& fn, const Inputs& inputs, Checker& checker, const std::string& what,
                                  double* seconds) {
  auto compiled = kiln::compile(fn);
  auto start = Clock::now();
  Inputs got = compiled(inputs);
  *seconds = seconds_since(start);
  checker.check(what, got);
  return compiled;
}

struct Options {
  std::vector<std::string> dirs;
  int reps = 10, warmup = 2;
  double min_ms = 0;  // --min-ms: timed calls go on past --reps while they add up to less
  bool check_only = false;
  size_t copy_mib = 512;
  int settle_ms = 0;       // --settle-ms: a pause after the workload's compiles, before its warm-up calls
  bool sync_after = true;  // --no-sync: leave the builds' files to the flusher threads (to see what they cost)
  std::string write_outputs;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dir") o.dirs.push_back(value());
    else if (a == "--reps") o.reps = std::stoi(value());
    else if (a == "--min-ms") o.min_ms = std::stod(value());
    else if (a == "--warmup") o.warmup = std::stoi(value());
    else if (a == "--copy-mib") o.copy_mib = std::stoul(value());
    else if (a == "--check-only") o.check_only = true;
    else if (a == "--no-sync") o.sync_after = false;
    else if (a == "--settle-ms") o.settle_ms = std::stoi(value());
    else if (a == "--write-outputs") o.write_outputs = value();
    else throw std::runtime_error("unknown argument " + a);
  }
  if (o.dirs.empty()) {
    throw std::runtime_error(
        "usage: kiln_compiled_bench --dir DIR [--dir DIR ...] [--reps N] [--min-ms MS] [--warmup N] [--check-only] "
        "[--copy-mib M] [--write-outputs OUT] [--no-sync] [--settle-ms MS] (each DIR as bench/torch_suite.py prepare writes it)");
  }
  return o;
}

// New empty cache directories, removed when the process ends.
struct CacheDirs {
  std::vector<std::string> dirs;
  const std::string& fresh() { return dirs.emplace_back(fresh_cache_dir()); }
  ~CacheDirs() {
    std::error_code ec;
    for (auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};

// What one process measured of one workload.
struct Row {
  std::string workload;
  int64_t scale = 0;
  double cold_compile = NAN, warm_start = NAN;
  std::vector<double> eager_times, compiled_times;
  SystemCost eager_memory, compiled_memory;
  std::string checks, failure;
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

void print_row(const Row& r, bool first, double first_compile, double copy, const std::vector<double>& copy_times) {
  std::printf(
      "{\"side\": \"kiln\", \"workload\": \"%s\", \"scale\": %lld, \"threads\": %d, \"first_in_process\": %s, "
      "\"first_compile_s\": %s, \"cold_compile_s\": %s, \"warm_start_s\": %s, \"eager_s\": %s, \"compiled_s\": %s, "
      "\"eager_times_s\": %s, \"compiled_times_s\": %s, \"copy_GBps\": %s, \"copy_times_s\": %s, \"checks\": [%s], "
      "\"eager_faults_per_call\": %s, \"compiled_faults_per_call\": %s, \"eager_cache_misses_per_call\": %s, "
      "\"compiled_cache_misses_per_call\": %s, \"eager_preempted\": %s, \"compiled_preempted\": %s, "
      "\"eager_steal_ms\": %s, \"compiled_steal_ms\": %s, \"eager_written_kib\": %s, \"compiled_written_kib\": %s, \"eager_threads_run_ms\": %s, "
      "\"compiled_threads_run_ms\": %s, \"eager_threads_queued_ms\": %s, \"compiled_threads_queued_ms\": %s, "
      "\"eager_max_queued_ms\": %s, \"compiled_max_queued_ms\": %s, \"compiled_thread_cpus\": %s, "
      "\"compiled_anon_huge_kib\": %s, \"check_failed\": %s}\n",
      r.workload.c_str(), static_cast<long long>(r.scale), omp_get_max_threads(), first ? "true" : "false",
      num(first ? first_compile : NAN).c_str(), num(r.cold_compile).c_str(), num(r.warm_start).c_str(),
      num(median(r.eager_times)).c_str(), num(median(r.compiled_times)).c_str(), json_list(r.eager_times).c_str(),
      json_list(r.compiled_times).c_str(), num(copy / 1e9).c_str(), json_list(copy_times).c_str(), r.checks.c_str(),
      num(r.eager_memory.faults).c_str(), num(r.compiled_memory.faults).c_str(),
      num(r.eager_memory.cache_misses).c_str(), num(r.compiled_memory.cache_misses).c_str(),
      json_list(r.eager_memory.preempted).c_str(), json_list(r.compiled_memory.preempted).c_str(),
      json_list(r.eager_memory.steal_ms).c_str(), json_list(r.compiled_memory.steal_ms).c_str(),
      json_list(r.eager_memory.written_kib).c_str(), json_list(r.compiled_memory.written_kib).c_str(),
      json_list(r.eager_memory.threads_run_ms).c_str(), json_list(r.compiled_memory.threads_run_ms).c_str(),
      json_list(r.eager_memory.threads_queued_ms).c_str(), json_list(r.compiled_memory.threads_queued_ms).c_str(),
      json_list(r.eager_memory.max_queued_ms).c_str(), json_list(r.compiled_memory.max_queued_ms).c_str(),
      json_list(r.compiled_memory.thread_cpus).c_str(), num(r.compiled_memory.huge_kib).c_str(),
      r.failure.empty() ? "null" : json_string(r.failure).c_str());
}

// Waits (up to two minutes) for the background builds compiles started in the cache directories
// (the precompiled prelude, codegen/build.h), so that none runs beside the timed calls; then, with
// `sync_after`, writes what the builds wrote to storage. Otherwise the kernel's flusher threads
// write it back about 30 s later, in the middle of some later workload's timed calls (up to 0.9 GB
// during gelu_mlp's, measured on the GPU machine's host), taking CPUs an OpenMP team waits for.
void wait_for_background_builds(const std::vector<std::string>& dirs, bool sync_after) {
  auto building = [&] {
    std::error_code ec;
    for (const auto& dir : dirs) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
        if (e.path().extension() == ".building") return true;
      }
    }
    return false;
  };
  for (int i = 0; i < 1200 && building(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (sync_after) sync();
}

// Measures one workload (steps 1-5; step 1 only when `first_compile` is given). Returns false when a
// result failed its check (then nothing of it was timed).
bool measure(const Options& o, const std::string& dir, CacheDirs& caches, double* first_compile, Row& row) {
  bench::Manifest manifest = bench::read_manifest(dir);
  auto found = workloads().find(manifest.workload);
  if (found == workloads().end()) throw std::runtime_error("unknown workload " + manifest.workload);
  const Workload& fn = found->second;
  row.workload = manifest.workload;
  row.scale = manifest.scale;
  Inputs inputs;
  for (const auto& spec : manifest.inputs) inputs.push_back(bench::read_raw_tensor(dir, spec));
  Checker checker{manifest, {}, {}, o.write_outputs};
  if (!o.write_outputs.empty()) std::filesystem::create_directories(o.write_outputs);
  for (const auto& out : manifest.outputs) checker.expected.push_back(bench::read_raw_tensor(dir, out.tensor));
  try {
    std::optional<kiln::CompiledFunction> compiled;
    if (first_compile || o.check_only) {
      double ignored = NAN;
      compiled = first_call(fn, inputs, checker,
                            first_compile ? "kiln compiled (first compile in process)" : "kiln compiled",
                            first_compile ? first_compile : &ignored);
      wait_for_background_builds(caches.dirs, o.sync_after);
    }
    if (!o.check_only) {
      setenv("KILN_CACHE_DIR", caches.fresh().c_str(), 1);
      first_call(fn, inputs, checker, "kiln compiled (later cold compile)", &row.cold_compile);
      wait_for_background_builds(caches.dirs, o.sync_after);
      compiled = first_call(fn, inputs, checker, "kiln compiled (warm start)", &row.warm_start);
      std::this_thread::sleep_for(std::chrono::milliseconds(o.settle_ms));
    }
    checker.check("kiln eager", fn(inputs));
    if (!o.check_only) {
      row.eager_times = timed_reps([&] { fn(inputs); }, o.warmup, o.reps, o.min_ms, &row.eager_memory);
      row.compiled_times = timed_reps([&] { (*compiled)(inputs); }, o.warmup, o.reps, o.min_ms, &row.compiled_memory);
    }
  } catch (const CheckFailure& e) {
    row.failure = e.what();
    std::fprintf(stderr, "CHECK FAILED: %s\n", e.what());
  }
  row.checks = checker.json;
  return row.failure.empty();
}

int run(const Options& o) {
  CacheDirs caches;
  setenv("KILN_CACHE_DIR", caches.fresh().c_str(), 1);
  double first_compile = NAN;
  std::vector<Row> rows;
  for (const std::string& dir : o.dirs) {
    Row& row = rows.emplace_back();
    if (!measure(o, dir, caches, rows.size() == 1 ? &first_compile : nullptr, row)) break;
  }
  double copy = NAN;
  std::vector<double> copy_times;
  if (!o.check_only && rows.back().failure.empty()) copy = copy_bandwidth(o.copy_mib, 10, &copy_times);
  // The comparisons made are reported also for a workload that failed (nothing of it was timed).
  for (size_t i = 0; i < rows.size(); ++i) print_row(rows[i], i == 0, first_compile, copy, copy_times);
  std::fflush(stdout);
  return rows.back().failure.empty() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_compiled_bench: %s\n", e.what());
    return 2;
  }
}
