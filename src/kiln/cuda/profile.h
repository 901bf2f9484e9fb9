// KILN_CUDA_PROFILE=1: the device time of every kernel kiln launches (generated kernels, the flash
// attention kernel, cuBLASLt's GEMMs), measured by CUDA events recorded around each launch, and
// printed to stderr at exit: per kernel name, its calls, total and mean time and share of the whole.
// For tuning (`bench/gpu.md`); off, it costs one flag test a launch.
#pragma once

#include <string>

#include "kiln/cuda/driver.h"

namespace kiln::cuda {

// Whether KILN_CUDA_PROFILE is set (and not "0"), read once.
bool profiling();

// Times what is launched on the default stream between its construction and its destruction, under
// `name`, when profiling; nothing otherwise.
class KernelTiming {
 public:
  explicit KernelTiming(const std::string& name);
  ~KernelTiming();
  KernelTiming(const KernelTiming&) = delete;
  KernelTiming& operator=(const KernelTiming&) = delete;

 private:
  CUevent start_ = nullptr;
  std::string name_;
};

// A kernel's name for the profile: the driver's (cuFuncGetName), else its address.
std::string kernel_name(CUfunction f);

}  // namespace kiln::cuda
