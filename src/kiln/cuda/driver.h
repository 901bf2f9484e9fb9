// The CUDA driver API, loaded at run time with dlopen: kiln links no CUDA library, so one build runs
// on machines with and without a GPU. Only the types and entry points kiln calls are declared here
// (their ABI is the driver's, CUDA 12 and 13); `driver()` finds libcuda.so.1, resolves them and
// initializes the driver once, or says why it cannot.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kErrorInvalidValue = 1;
inline constexpr CUresult kErrorOutOfMemory = 2;
inline constexpr CUresult kErrorNotSupported = 801;

// Device attributes kiln reads (CUdevice_attribute values).
enum class Attribute : int {
  MaxThreadsPerBlock = 1,
  WarpSize = 10,
  MultiprocessorCount = 16,
  ComputeCapabilityMajor = 75,
  ComputeCapabilityMinor = 76,
  MaxSharedMemoryPerBlockOptin = 97,
};

// cuLaunchKernelEx's configuration, as far as kiln fills it: one attribute at most, of CUDA's
// CUlaunchAttribute layout (an enum id, padding to 8 bytes, a 64-byte value union).
struct LaunchAttribute {
  int id = 0;
  int pad = 0;
  union alignas(8) {
    char bytes[64];
    int flag;
  } value{};
};
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the kernel may start while the previous
// kernel of its stream finishes; it waits for that kernel itself (griddepcontrol.wait, sm_90).
inline constexpr int kLaunchAttributeProgrammaticStreamSerialization = 6;
struct LaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1, block_x = 1, block_y = 1, block_z = 1, shared_bytes = 0;
  CUstream stream = nullptr;
  LaunchAttribute* attributes = nullptr;
  unsigned attribute_count = 0;
};

static_assert(sizeof(LaunchAttribute) == 72 && offsetof(LaunchAttribute, value) == 8 && sizeof(LaunchConfig) == 56 &&
                  offsetof(LaunchConfig, stream) == 32 && offsetof(LaunchConfig, attributes) == 40,
              "CUDA's CUlaunchAttribute, CUlaunchConfig");

struct Driver {
  std::string path;  // the libcuda.so.1 that was loaded
  int version = 0;   // cuDriverGetVersion: 13000 for CUDA 13.0

  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char** name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char** text) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total) = nullptr;
  CUresult (*cuMemcpy)(CUdeviceptr dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyPeer)(CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
                           size_t bytes) = nullptr;
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned value, size_t count) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                             unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream, void** params,
                             void** extra) = nullptr;
  // Events, for KILN_CUDA_PROFILE (cuda/profile.h).
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  // A kernel's name (CUDA 12.3 and later; nullptr where the driver has none).
  CUresult (*cuFuncGetName)(const char** name, CUfunction f) = nullptr;
  // CUDA 12 and later; null where the driver has none (launches are then plain).
  CUresult (*cuLaunchKernelEx)(const LaunchConfig* config, CUfunction f, void** params, void** extra) = nullptr;

  // Throws kiln::Error "`what`: CUDA error NAME (text)" unless `r` is success.
  void check(CUresult r, std::string_view what) const;
  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for `r`.
  std::string error_text(CUresult r) const;
};

// The driver, loaded and initialized at the first call (thread-safe). It is searched in
// $KILN_CUDA_HOME's lib64/ and lib/, then by the dynamic loader's path, then in the usual driver
// locations. Throws kiln::Error "no CUDA device: ..." saying what was tried when none loads or
// cuInit fails (no GPU, no driver); the same error at every later call.
const Driver& driver();

}  // namespace kiln::cuda
