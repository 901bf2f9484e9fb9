#include "kiln/cuda/cublaslt.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/cuda/driver.h"
#include "kiln/cuda/hooks.h"
#include "kiln/cuda/load_once.h"
#include "kiln/cuda/profile.h"
#include "kiln/support/error.h"
#include "kiln/support/log.h"

namespace kiln::cuda {
namespace {

using Status = int;
using Handle = struct cublasLtContext*;
using Desc = void*;  // cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t: opaque pointers
struct Algo {
  uint64_t data[8];
};
struct Heuristic {
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves;
  int reserved[4];
};

// Enum values of cublasLt.h and cublas_api.h.
constexpr int kComputeFloat32 = 68, kComputeFloat32Tf32 = 77, kComputeFloat64 = 70;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8, kDescBiasType = 26;
constexpr int kLayoutBatchCount = 5, kLayoutBatchOffset = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueBias = 4;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLAS's recommendation for Hopper

struct Api {
  std::string path;
  Status (*create)(Handle*) = nullptr;
  Status (*desc_create)(Desc*, int compute, int scale) = nullptr;
  Status (*desc_destroy)(Desc) = nullptr;
  Status (*desc_set)(Desc, int attr, const void*, size_t) = nullptr;
  Status (*layout_create)(Desc*, int type, uint64_t rows, uint64_t cols, int64_t ld) = nullptr;
  Status (*layout_destroy)(Desc) = nullptr;
  Status (*layout_set)(Desc, int attr, const void*, size_t) = nullptr;
  Status (*pref_create)(Desc*) = nullptr;
  Status (*pref_destroy)(Desc) = nullptr;
  Status (*pref_set)(Desc, int attr, const void*, size_t) = nullptr;
  Status (*heuristic)(Handle, Desc, Desc, Desc, Desc, Desc, Desc, int, Heuristic*, int*) = nullptr;
  Status (*matmul)(Handle, Desc, const void*, const void*, Desc, const void*, Desc, const void*, const void*, Desc,
                   void*, Desc, const Algo*, void*, size_t, void* stream) = nullptr;
};

template <class F>
void resolve(void* lib, F& fn, const char* name, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  KILN_CHECK_KIND(fn != nullptr, ErrorKind::NotImplemented, "cuBLASLt: {} has no {}", path, name);
}

Api load() {
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("KILN_CUDA_HOME"); home && *home) {
    dirs.push_back(std::string(home) + "/lib64/");
    dirs.push_back(std::string(home) + "/lib/");
  }
  dirs.push_back("");
  dirs.push_back("/usr/local/cuda/lib64/");
  std::string tried;
  for (const auto& dir : dirs) {
    for (const char* soname : {"libcublasLt.so.13", "libcublasLt.so.12"}) {
      std::string path = dir + soname;
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* why = dlerror();
        tried += fmt::format("\n  {}", why ? std::string(why) : path);
        continue;
      }
      Api a;
      a.path = path;
      resolve(lib, a.create, "cublasLtCreate", path);
      resolve(lib, a.desc_create, "cublasLtMatmulDescCreate", path);
      resolve(lib, a.desc_destroy, "cublasLtMatmulDescDestroy", path);
      resolve(lib, a.desc_set, "cublasLtMatmulDescSetAttribute", path);
      resolve(lib, a.layout_create, "cublasLtMatrixLayoutCreate", path);
      resolve(lib, a.layout_destroy, "cublasLtMatrixLayoutDestroy", path);
      resolve(lib, a.layout_set, "cublasLtMatrixLayoutSetAttribute", path);
      resolve(lib, a.pref_create, "cublasLtMatmulPreferenceCreate", path);
      resolve(lib, a.pref_destroy, "cublasLtMatmulPreferenceDestroy", path);
      resolve(lib, a.pref_set, "cublasLtMatmulPreferenceSetAttribute", path);
      resolve(lib, a.heuristic, "cublasLtMatmulAlgoGetHeuristic", path);
      resolve(lib, a.matmul, "cublasLtMatmul", path);
      return a;
    }
  }
  KILN_FAIL(ErrorKind::NotImplemented, "cuBLASLt was not found (set KILN_CUDA_HOME to a CUDA toolkit); tried:{}",
            tried);
}

const Api& api() {
  return load_once<Api>([] { return load(); });
}

std::atomic<bool> tf32{false};

// One handle and one workspace per device, made at its first GEMM and kept for the process (GEMMs
// run on the device's default stream, so they never use the workspace at once).
struct PerDevice {
  Handle handle = nullptr;
  void* workspace = nullptr;
};

PerDevice& per_device(int device) {
  static std::mutex mutex;
  static std::map<int, PerDevice> devices;
  std::lock_guard<std::mutex> lock(mutex);
  PerDevice& p = devices[device];
  if (!p.handle) {
    KILN_CHECK(api().create(&p.handle) == 0, "cuBLASLt: cublasLtCreate failed on cuda:{}", device);
    p.workspace = device_allocator(device).allocate(kWorkspaceBytes);
  }
  return p;
}

// The algorithm of each GEMM configuration (types, transposes, sizes, leading dimensions, batch
// strides, epilogue, beta, the operands' alignment), chosen at its first run for the process: of
// cuBLASLt's first `candidates()` heuristic answers, the fastest (each run once, then timed over
// kTimedRuns runs back to back on the device; a few milliseconds once per configuration).
// KILN_CUBLASLT_CANDIDATES=1 takes the heuristic's first answer, untimed.
constexpr int kTimedRuns = 3;

int candidates() {
  static const int n = [] {
    const char* e = std::getenv("KILN_CUBLASLT_CANDIDATES");
    return e && std::atoi(e) > 0 ? std::min(std::atoi(e), 16) : 4;
  }();
  return n;
}

// The largest power of two (up to 256) dividing every address: what cuBLASLt's kernels may assume.
int alignment(const Gemm& g) {
  const uint64_t bits = reinterpret_cast<uint64_t>(g.a.data) | reinterpret_cast<uint64_t>(g.b.data) |
                        reinterpret_cast<uint64_t>(g.d) | reinterpret_cast<uint64_t>(g.bias) | uint64_t{256};
  return static_cast<int>(bits & (~bits + 1));
}

std::string choice_key(const Gemm& g, int compute) {
  return fmt::format("{} {} {} {} {}{} {} {} {} {} {} {} {} {} {} {} {} {} {}", g.device, static_cast<int>(g.type),
                     static_cast<int>(g.out_type), compute, g.a.transposed ? 'T' : 'N', g.b.transposed ? 'T' : 'N', g.m,
                     g.n, g.k, g.batch, g.a.ld, g.b.ld, g.ldd, g.a.batch_stride, g.b.batch_stride, g.d_batch_stride,
                     g.bias != nullptr, g.beta != 0, alignment(g));
}

std::mutex choices_mutex;
std::map<std::string, Algo>& choices() {
  static std::map<std::string, Algo> m;
  return m;
}

std::optional<Algo> chosen(const std::string& key) {
  std::lock_guard<std::mutex> lock(choices_mutex);
  auto it = choices().find(key);
  return it == choices().end() ? std::nullopt : std::optional<Algo>(it->second);
}

void remember(const std::string& key, const Algo& algo) {
  std::lock_guard<std::mutex> lock(choices_mutex);
  choices()[key] = algo;
}

// The fastest of the heuristic's answers that run (the first, if no timing can be had).
template <class Launch>
Algo fastest(const std::vector<Heuristic>& found, const Launch& launch) {
  const Driver& d = driver();
  CUevent start = nullptr, end = nullptr;
  if (d.cuEventCreate(&start, 0) != kSuccess || d.cuEventCreate(&end, 0) != kSuccess) return found.front().algo;
  Algo best = found.front().algo;
  float best_ms = -1;
  for (const Heuristic& h : found) {
    if (launch(h.algo) != 0) continue;  // an answer that does not run here is passed over
    float ms = 0;
    bool timed = d.cuEventRecord(start, nullptr) == kSuccess;
    for (int r = 0; r < kTimedRuns && timed; ++r) timed = launch(h.algo) == 0;
    timed = timed && d.cuEventRecord(end, nullptr) == kSuccess && d.cuEventSynchronize(end) == kSuccess &&
            d.cuEventElapsedTime(&ms, start, end) == kSuccess;
    if (timed && (best_ms < 0 || ms < best_ms)) {
      best_ms = ms;
      best = h.algo;
    }
  }
  d.cuEventDestroy(start);
  d.cuEventDestroy(end);
  return best;
}

void check(Status s, const char* what, const Gemm& g) {
  KILN_CHECK(s == 0, "cuBLASLt: {} failed with status {} (m={}, n={}, k={}, batch={}, type {})", what, s, g.m, g.n, g.k,
             g.batch, static_cast<int>(g.type));
}

// Destroys a descriptor when the GEMM is done with it.
struct Owned {
  Desc d = nullptr;
  Status (*destroy)(Desc) = nullptr;
  ~Owned() {
    if (d) destroy(d);
  }
};

}  // namespace

void set_allow_tf32(bool allow) { tf32 = allow; }
bool allow_tf32() { return tf32; }

std::string cublaslt_path() {
  try {
    return api().path;
  } catch (const Error&) {
    return "";
  }
}

void run_gemm(const Gemm& g) {
  const Api& a = api();
  make_current(g.device);
  PerDevice& dev = per_device(g.device);
  const bool f64 = g.type == GemmType::Float64;
  const int compute = f64 ? kComputeFloat64
                          : (g.type == GemmType::Float32 && tf32 ? kComputeFloat32Tf32 : kComputeFloat32);
  const int scale_type = static_cast<int>(f64 ? GemmType::Float64 : GemmType::Float32);
  Owned desc{nullptr, a.desc_destroy};
  check(a.desc_create(&desc.d, compute, scale_type), "cublasLtMatmulDescCreate", g);
  int32_t trans_a = g.a.transposed ? kOpT : kOpN, trans_b = g.b.transposed ? kOpT : kOpN;
  check(a.desc_set(desc.d, kDescTransA, &trans_a, sizeof trans_a), "setting TRANSA", g);
  check(a.desc_set(desc.d, kDescTransB, &trans_b, sizeof trans_b), "setting TRANSB", g);
  uint32_t epilogue = g.bias ? kEpilogueBias : kEpilogueDefault;
  check(a.desc_set(desc.d, kDescEpilogue, &epilogue, sizeof epilogue), "setting the epilogue", g);
  if (g.bias) {
    int32_t bias_type = static_cast<int32_t>(g.out_type);
    check(a.desc_set(desc.d, kDescBiasPointer, &g.bias, sizeof g.bias), "setting the bias", g);
    check(a.desc_set(desc.d, kDescBiasType, &bias_type, sizeof bias_type), "setting the bias type", g);
  }
  auto layout = [&](GemmType type, int64_t rows, int64_t cols, int64_t ld, int64_t batch_stride, Owned& out) {
    out.destroy = a.layout_destroy;
    check(a.layout_create(&out.d, static_cast<int>(type), static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
          "cublasLtMatrixLayoutCreate", g);
    if (g.batch > 1) {
      int32_t count = static_cast<int32_t>(g.batch);
      check(a.layout_set(out.d, kLayoutBatchCount, &count, sizeof count), "setting the batch count", g);
      check(a.layout_set(out.d, kLayoutBatchOffset, &batch_stride, sizeof batch_stride), "setting the batch stride", g);
    }
  };
  Owned la, lb, ld;
  layout(g.type, g.a.rows, g.a.cols, g.a.ld, g.a.batch_stride, la);
  layout(g.type, g.b.rows, g.b.cols, g.b.ld, g.b.batch_stride, lb);
  layout(g.out_type, g.m, g.n, g.ldd, g.d_batch_stride, ld);
  float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = f64 ? static_cast<const void*>(&g.alpha) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&g.beta) : &beta32;
  auto launch = [&](const Algo& algo) {
    return a.matmul(dev.handle, desc.d, alpha, g.a.data, la.d, g.b.data, lb.d, beta, g.d, ld.d, g.d, ld.d, &algo,
                    dev.workspace, kWorkspaceBytes, nullptr);
  };
  const std::string key = choice_key(g, compute);
  std::optional<Algo> algo = chosen(key);
  if (!algo) {
    const auto start = std::chrono::steady_clock::now();
    Owned pref{nullptr, a.pref_destroy};
    check(a.pref_create(&pref.d), "cublasLtMatmulPreferenceCreate", g);
    uint64_t workspace = kWorkspaceBytes;
    check(a.pref_set(pref.d, kPrefMaxWorkspace, &workspace, sizeof workspace), "setting the workspace", g);
    std::vector<Heuristic> found(static_cast<size_t>(candidates()));
    int count = 0;
    check(a.heuristic(dev.handle, desc.d, la.d, lb.d, ld.d, ld.d, pref.d, static_cast<int>(found.size()), found.data(),
                      &count),
          "choosing an algorithm", g);
    KILN_CHECK(count > 0, "cuBLASLt: no algorithm for m={}, n={}, k={}, batch={}", g.m, g.n, g.k, g.batch);
    found.resize(static_cast<size_t>(count));
    // Timing runs write D again and again: only where D is not also an input (beta == 0).
    algo = count > 1 && g.beta == 0 ? fastest(found, launch) : found.front().algo;
    remember(key, *algo);
    KILN_LOG("compile", "cuBLASLt: m={} n={} k={} batch={}: chose among {} algorithms in {:.1f} ms", g.m, g.n, g.k,
             g.batch, count,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  KernelTiming timing(profiling() ? fmt::format("cublasLt gemm m={} n={} k={} batch={}", g.m, g.n, g.k, g.batch)
                                  : std::string());
  check(launch(*algo), "cublasLtMatmul", g);
}

}  // namespace kiln::cuda
