// The kiln side of the GPU suite (bench/run_gpu.py drives it on the GPU machine): workloads of
// shared/reference/torch_baseline.py compiled by kiln::compile for CUDA, on inputs PyTorch wrote
// (bench/raw_tensors.h) and moved to the device. For each workload given (--dir, repeated), in order:
//   1. cold compile: the wall time of the first call (trace, lower, fuse, generate CUDA, NVRTC,
//      module load, one run) with a new, empty KILN_CACHE_DIR;
//   2. its result, checked against the manifest's expected outputs before anything is timed (a
//      mismatch: why on stderr, the workload not timed, and exit status 3 at the end);
//   3. WARMUP calls, then REPS timed batches of kBatch calls back to back, the device synchronized
//      after each batch: a call's time is its batch's wall time over kBatch (kiln_ms; the device's
//      time per call while the host keeps it busy, as PyTorch's CUDA events time it). Then REPS
//      single calls, each until the device is done (kiln_call_ms: with the launch and the sync).
// One JSON object per workload on stdout.
//   kiln_gpu_bench --dir DIR [--dir DIR ...] [--reps N] [--warmup N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/api/compile.h"
#include "kiln/core/device_hooks.h"
#include "kiln/ops/api.h"
#include "raw_tensors.h"
#include "suite_workloads.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::Tensor;

constexpr int kBatch = 10;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const std::vector<std::string>& dirs, int reps, int warmup) {
  const kiln::Device cuda(kiln::DeviceType::CUDA, 0);
  int status = 0;
  for (const auto& dir : dirs) {
    bench::Manifest m = bench::read_manifest(dir);
    auto found = bench::workloads().find(m.workload);
    if (found == bench::workloads().end()) {
      std::fprintf(stderr, "%s: no kiln workload %s\n", dir.c_str(), m.workload.c_str());
      return 2;
    }
    std::vector<Tensor> inputs;
    for (const auto& spec : m.inputs) inputs.push_back(bench::read_raw_tensor(dir, spec).to(cuda));
    std::vector<Tensor> expected;
    for (const auto& out : m.outputs) expected.push_back(bench::read_raw_tensor(dir, out.tensor));
    std::string cache =
        (std::filesystem::temp_directory_path() / fmt::format("kiln-gpu-bench-{}", m.workload)).string();
    std::filesystem::remove_all(cache);
    setenv("KILN_CACHE_DIR", cache.c_str(), 1);
    auto fn = kiln::compile(found->second);
    auto start = Clock::now();
    std::vector<Tensor> got = fn(inputs);
    double compile_s = ms_since(start) / 1e3;
    std::string checks;
    bool failed = false;
    for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
      bench::Comparison c = bench::compare(got[i].cpu(), m.outputs[i], expected[i]);
      checks += fmt::format("{}{{\"output\": {}, \"ok\": {}, \"max_abs\": {:.3g}, \"rmse\": {:.3g}}}", i ? ", " : "", i,
                            c.ok, c.max_abs, c.rmse);
      if (!c.ok) std::fprintf(stderr, "%s: kiln compiled output %zu: %s\n", m.workload.c_str(), i, c.problem.c_str());
      failed = failed || !c.ok;
    }
    if (got.size() != expected.size()) {
      std::fprintf(stderr, "%s: %zu outputs, %zu expected\n", m.workload.c_str(), got.size(), expected.size());
      failed = true;
    }
    if (failed) {  // not timed; the next workload is measured all the same
      std::printf("{\"workload\": \"%s\", \"check_failed\": true, \"checks\": [%s]}\n", m.workload.c_str(),
                  checks.c_str());
      status = 3;
      continue;
    }
    for (int i = 0; i < warmup; ++i) fn(inputs);
    kiln::synchronize_device(cuda);
    std::vector<double> times, single;
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      for (int j = 0; j < kBatch; ++j) fn(inputs);
      kiln::synchronize_device(cuda);
      times.push_back(ms_since(t) / kBatch);
    }
    for (int i = 0; i < reps; ++i) {
      auto t = Clock::now();
      fn(inputs);
      kiln::synchronize_device(cuda);
      single.push_back(ms_since(t));
    }
    std::printf(
        "{\"workload\": \"%s\", \"kiln_cold_compile_s\": %.3f, \"kiln_ms\": %.4f, \"kiln_min_ms\": %.4f, "
        "\"kiln_call_ms\": %.4f, \"checks\": [%s]}\n",
        m.workload.c_str(), compile_s, median(times), *std::min_element(times.begin(), times.end()), median(single),
        checks.c_str());
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  int reps = 50, warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--dir") dirs.push_back(argv[i + 1]);
    else if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    else if (flag == "--warmup") warmup = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "kiln_gpu_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    return run(dirs, std::max(reps, 1), warmup);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_gpu_bench: %s\n", e.what());
    return 1;
  }
}
