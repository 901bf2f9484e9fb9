// A CUDA module: a cubin (built by NVRTC, codegen/cuda/build_cuda.h) loaded into a device's primary
// context, and launches of its kernels on that context's default stream. Launches are
// asynchronous; errors a kernel meets show at the next synchronizing call.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/cuda/driver.h"

namespace kiln::cuda {

class Module {
 public:
  // Throws kiln::Error when the image does not load (no device, an image for another architecture).
  Module(int device, const std::string& image);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel named `name`; throws kiln::Error naming it when the module has none.
  CUfunction function(const std::string& name) const;
  // Launches `f` with `grid` blocks of `block` threads (grid-stride kernels: grid fits in 2^31 - 1)
  // and the kernel's parameters (pointers to each argument's value). `dependent`: a kernel whose
  // code waits for the previous kernel of the stream before it touches memory (griddepcontrol.wait,
  // sm_90) is launched as a programmatic dependent, so its blocks start while that kernel's last
  // ones finish (the gap between two kernels); where the driver has no cuLaunchKernelEx, or refuses
  // the attribute, it is launched plainly (its wait then returns at once).
  void launch(CUfunction f, int64_t grid, int block, void** params, bool dependent = false) const;
  int device() const { return device_; }

 private:
  int device_;
  CUmodule module_ = nullptr;
};

}  // namespace kiln::cuda
