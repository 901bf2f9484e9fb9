#include "kiln/cuda/module.h"

#include <atomic>

#include "kiln/cuda/hooks.h"
#include "kiln/cuda/profile.h"
#include "kiln/support/error.h"

namespace kiln::cuda {

Module::Module(int device, const std::string& image) : device_(device) {
  const Driver& d = driver();
  make_current(device);
  d.check(d.cuModuleLoadData(&module_, image.data()), fmt::format("loading a CUDA module on cuda:{}", device));
}

Module::~Module() {
  if (!module_) return;
  make_current(device_);
  driver().cuModuleUnload(module_);  // nothing to report from a destructor
}

CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  driver().check(driver().cuModuleGetFunction(&f, module_, name.c_str()), fmt::format("CUDA kernel {}", name));
  return f;
}

void Module::launch(CUfunction f, int64_t grid, int block, void** params, bool dependent) const {
  KILN_CHECK_KIND(grid > 0 && grid < (int64_t{1} << 31) && block > 0, ErrorKind::Internal,
                  "CUDA launch: {} blocks of {} threads", grid, block);
  make_current(device_);
  KernelTiming timing(profiling() ? kernel_name(f) : std::string());
  const Driver& d = driver();
  // Set when the driver refuses the dependent launch's attribute: later launches are plain.
  static std::atomic<bool> refused{false};
  if (dependent && d.cuLaunchKernelEx && !refused.load(std::memory_order_relaxed)) {
    LaunchAttribute serialization;
    serialization.id = kLaunchAttributeProgrammaticStreamSerialization;
    serialization.value.flag = 1;
    LaunchConfig config;
    config.grid_x = static_cast<unsigned>(grid);
    config.block_x = static_cast<unsigned>(block);
    config.attributes = &serialization;
    config.attribute_count = 1;
    const CUresult r = d.cuLaunchKernelEx(&config, f, params, nullptr);
    if (r == kSuccess) return;
    // The attribute refused: plain launches from now on. Any other error is the plain launch's too.
    if (r == kErrorNotSupported || r == kErrorInvalidValue) refused.store(true, std::memory_order_relaxed);
  }
  d.check(d.cuLaunchKernel(f, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, 0, nullptr, params,
                           nullptr),
          "cuLaunchKernel");
}

}  // namespace kiln::cuda
