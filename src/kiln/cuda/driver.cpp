#include "kiln/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

#include "kiln/cuda/load_once.h"
#include "kiln/support/error.h"

namespace kiln::cuda {
namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* home = std::getenv("KILN_CUDA_HOME"); home && *home) {
    out.push_back(std::string(home) + "/lib64/libcuda.so.1");
    out.push_back(std::string(home) + "/lib/libcuda.so.1");
  }
  out.push_back("libcuda.so.1");  // the loader's path and cache
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib",
                          "/usr/local/cuda/compat"}) {
    out.push_back(std::string(dir) + "/libcuda.so.1");
  }
  return out;
}

template <class F>
void resolve(void* lib, F& fn, const char* name, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  KILN_CHECK_KIND(fn != nullptr, ErrorKind::NotImplemented,
                  "no CUDA device: {} has no {} (a driver older than CUDA 12?)", path, name);
}

Driver load() {
  std::string tried;
  void* lib = nullptr;
  std::string path;
  for (const auto& c : candidates()) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      path = c;
      break;
    }
    const char* why = dlerror();  // names the file already
    tried += fmt::format("\n  {}", why ? std::string(why) : c + ": not found");
  }
  KILN_CHECK_KIND(lib != nullptr, ErrorKind::NotImplemented,
                  "no CUDA device: the CUDA driver (libcuda.so.1) was not found (set KILN_CUDA_HOME to its "
                  "directory's parent); tried:{}",
                  tried);
  Driver d;
  d.path = path;
  resolve(lib, d.cuInit, "cuInit", path);
  resolve(lib, d.cuDriverGetVersion, "cuDriverGetVersion", path);
  resolve(lib, d.cuGetErrorName, "cuGetErrorName", path);
  resolve(lib, d.cuGetErrorString, "cuGetErrorString", path);
  resolve(lib, d.cuDeviceGetCount, "cuDeviceGetCount", path);
  resolve(lib, d.cuDeviceGet, "cuDeviceGet", path);
  resolve(lib, d.cuDeviceGetName, "cuDeviceGetName", path);
  resolve(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", path);
  resolve(lib, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2", path);
  resolve(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", path);
  resolve(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent", path);
  resolve(lib, d.cuCtxSynchronize, "cuCtxSynchronize", path);
  resolve(lib, d.cuMemAlloc, "cuMemAlloc_v2", path);
  resolve(lib, d.cuMemFree, "cuMemFree_v2", path);
  resolve(lib, d.cuMemGetInfo, "cuMemGetInfo_v2", path);
  resolve(lib, d.cuMemcpy, "cuMemcpy", path);
  resolve(lib, d.cuMemcpyPeer, "cuMemcpyPeer", path);
  resolve(lib, d.cuMemsetD32, "cuMemsetD32_v2", path);
  resolve(lib, d.cuModuleLoadData, "cuModuleLoadData", path);
  resolve(lib, d.cuModuleUnload, "cuModuleUnload", path);
  resolve(lib, d.cuModuleGetFunction, "cuModuleGetFunction", path);
  resolve(lib, d.cuLaunchKernel, "cuLaunchKernel", path);
  resolve(lib, d.cuEventCreate, "cuEventCreate", path);
  resolve(lib, d.cuEventRecord, "cuEventRecord", path);
  resolve(lib, d.cuEventSynchronize, "cuEventSynchronize", path);
  resolve(lib, d.cuEventElapsedTime, "cuEventElapsedTime", path);
  resolve(lib, d.cuEventDestroy, "cuEventDestroy_v2", path);
  d.cuFuncGetName = reinterpret_cast<decltype(d.cuFuncGetName)>(dlsym(lib, "cuFuncGetName"));
  d.cuLaunchKernelEx = reinterpret_cast<decltype(d.cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  CUresult r = d.cuInit(0);
  KILN_CHECK_KIND(r == kSuccess, ErrorKind::NotImplemented, "no CUDA device: cuInit failed with {} (driver {})",
                  d.error_text(r), path);
  d.check(d.cuDriverGetVersion(&d.version), "cuDriverGetVersion");
  return d;
}

}  // namespace

std::string Driver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("error {}", r), text ? text : "no description");
}

void Driver::check(CUresult r, std::string_view what) const {
  if (r != kSuccess) KILN_FAIL(ErrorKind::Value, "{}: CUDA error {}", what, error_text(r));
}

const Driver& driver() {
  return load_once<Driver>([] { return load(); });
}

}  // namespace kiln::cuda
