#include "kiln/compiler/target.h"

#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "kiln/compiler/codegen/cuda/build_cuda.h"
#include "kiln/compiler/codegen/cuda/cuda.h"
#include "kiln/core/device_hooks.h"
#include "kiln/cuda/hooks.h"
#include "kiln/support/error.h"

namespace kiln::compiler {
namespace {

BuiltCode build_cpp(const GeneratedSource& source, const Target&, const BuildPlan& plan) {
  BuiltCode b;
  b.library = compile_cpp(source.code, plan);
  b.from_cache = b.library->from_cache();
  return b;
}

// NVRTC compiles the source in parts, one per hardware thread at most, at once (a kernel takes it
// about 0.1 s, the prelude little), each cached on its own.
BuiltCode build_cuda(const GeneratedSource& source, const Target& target, const BuildPlan& plan) {
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<SourcePart> parts = split_source(source.code, plan.kernel_offsets, threads);
  std::vector<CudaBuild> built(parts.size());
  std::vector<std::exception_ptr> failed(parts.size());
  std::vector<std::thread> workers;
  auto compile_part = [&](size_t i) {
    try {
      built[i] = compile_cuda(parts[i].source, target.arch);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  for (size_t i = 1; i < parts.size(); ++i) {
    try {
      workers.emplace_back(compile_part, i);
    } catch (const std::system_error&) {  // no thread to be had: this one compiles it
      compile_part(i);
    }
  }
  compile_part(0);
  for (auto& w : workers) w.join();
  for (const auto& f : failed) {
    if (f) std::rethrow_exception(f);
  }
  BuiltCode b;
  b.from_cache = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    b.cubins.push_back(std::move(built[i].cubin));
    b.cubin_kernels.push_back(parts[i].kernels);
    b.from_cache = b.from_cache && built[i].from_cache;
  }
  return b;
}

Target make_cuda_target(Device device, const std::string& arch, int multiprocessors, int max_threads) {
  Target t;
  t.device = device;
  t.arch = arch;
  t.multiprocessors = multiprocessors;
  t.max_threads_per_block = max_threads;
  // A row kernel's column sums: partial sums in each thread's registers (codegen/cuda/cuda.h).
  t.fusion.column_sums_up_to = cuda_column_sums_up_to(max_threads);
  // cuBLASLt's bias epilogue, with a bfloat16 product rounded once after it; activations and
  // residuals run in a generated kernel after the GEMM (cuBLASLt's GELU is tanh's approximation).
  t.gemm_epilogue = GemmEpilogueSupport{.activations = false, .residual = false, .rounded_output = true};
  // The flash kernel of kernels/cuda/flash_attention.cu: 16-bit queries on tensor cores (a float32
  // attention stays GEMMs, without TF32 unless allowed, and a softmax kernel).
  t.attention =
      AttentionSupport{.dtypes = {DType::BFloat16, DType::Float16}, .max_head_size = 128, .head_size_multiple = 16};
  // Launch knobs, for tuning: a positive value replaces the default.
  for (auto [name, knob] : {std::pair<const char*, int*>{"KILN_CUDA_ROW_ELEMENTS", &t.row_elements_per_thread},
                            {"KILN_CUDA_COLUMN_THREADS", &t.column_sum_threads},
                            {"KILN_CUDA_POINTWISE_GROUPS", &t.pointwise_groups}}) {
    if (const char* e = std::getenv(name); e && std::atoi(e) > 0) *knob = std::atoi(e);
  }
  if (const char* e = std::getenv("KILN_CUDA_FLOAT_PARTIALS"); e && *e) t.float_partials = std::atoi(e) != 0;
  if (const char* e = std::getenv("KILN_CUDA_ROW_PREFETCH"); e && *e) t.row_prefetch = std::atoi(e);
  // griddepcontrol is sm_90's ("sm_90", "sm_100", ...).
  t.dependent_launch = arch.size() > 3 && std::atoi(arch.c_str() + 3) >= 90;
  if (const char* e = std::getenv("KILN_CUDA_DEPENDENT_LAUNCH"); e && *e)
    t.dependent_launch = t.dependent_launch && std::atoi(e) != 0;
  t.dialect = &cuda_dialect();
  t.generate = generate_cuda;
  t.build = build_cuda;
  return t;
}

}  // namespace

const Target& cpu_target() {
  static const Target t = [] {
    Target c;
    c.device = Device(DeviceType::CPU);
    c.description = "cpu";
    c.dialect = &cpp_dialect();
    c.generate = [](const loopir::Program& p, const Schedule& s, const Target&) { return generate_cpp(p, s); };
    c.build = build_cpp;
    return c;
  }();
  return t;
}

Target cuda_target_for_arch(const std::string& arch, int multiprocessors) {
  Target t = make_cuda_target(Device(DeviceType::CUDA, 0), arch, multiprocessors, 1024);
  t.description = fmt::format("cuda {} (no device)", arch);
  return t;
}

const Target& target_for(Device d) {
  if (d.type == DeviceType::CPU) return cpu_target();
  KILN_CHECK_KIND(d.type == DeviceType::CUDA, ErrorKind::NotImplemented, "compile: no compiler target for device {}",
                  d);
  Device device = resolve_device(d, "compile");
  static std::mutex mutex;
  static std::map<int, Target> targets;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = targets.find(device.index);
  if (it != targets.end()) return it->second;
  const cuda::DeviceProperties& props = cuda::device_properties(device.index);
  KILN_CHECK_KIND(props.major >= 8, ErrorKind::NotImplemented,
                  "compile: {} ({}) has compute capability {}.{}; kiln's CUDA target needs 8.0 or later", device,
                  props.name, props.major, props.minor);
  Target t = make_cuda_target(device, fmt::format("sm_{}{}", props.major, props.minor), props.multiprocessors,
                              props.max_threads_per_block);
  t.description = fmt::format("{} {} ({}, {} SMs)", device, t.arch, props.name, props.multiprocessors);
  return targets.emplace(device.index, std::move(t)).first->second;
}

}  // namespace kiln::compiler
