// NVRTC, CUDA's runtime compiler, loaded at run time with dlopen (as the driver is, driver.h): it
// turns generated CUDA C++ into a cubin for one GPU architecture, and needs no GPU to do so, so the
// tests compile every generated kernel kind on machines without one. Only the entry points kiln
// calls are declared here (NVRTC's C ABI, CUDA 12 and 13).
#pragma once

#include <string>
#include <vector>

namespace kiln::cuda {

struct Nvrtc {
  std::string path;          // the libnvrtc.so that was loaded
  int major = 0, minor = 0;  // nvrtcVersion: 13, 0
};

// NVRTC, loaded at the first call (thread-safe). It is searched in $KILN_CUDA_HOME's lib64/ and
// lib/, then by the dynamic loader's path, then in CUDA's default install location, then where the
// build found it (the pinned nvidia-cuda-nvrtc wheel in the project's .venv, KILN_NVRTC_DIR). Its
// builtins library (libnvrtc-builtins), which NVRTC opens by name, is loaded first from the same
// directory. Throws kiln::Error "NVRTC was not found: ..." naming what was tried, at every call.
const Nvrtc& nvrtc();
// Whether nvrtc() loads, without throwing.
bool nvrtc_available();

// A header a compiled source includes by name ("kiln/cuda_support.cuh"), with its text.
struct SourceHeader {
  std::string name, text;
};

// Compiles `source` (named `name` in messages) to a cubin for `arch` ("sm_90") with `options`
// added; the headers it includes are given, not looked up. Throws kiln::Error with NVRTC's log
// when it does not compile.
std::string compile_cubin(const std::string& source, const std::string& name, const std::string& arch,
                          const std::vector<SourceHeader>& headers, const std::vector<std::string>& options);

}  // namespace kiln::cuda
