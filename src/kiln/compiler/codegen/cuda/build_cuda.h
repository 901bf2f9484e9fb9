// Building generated CUDA source: NVRTC (cuda/nvrtc.h) compiles it to a cubin for one architecture
// (no PTX left for the driver to compile at load time), with the same content-addressed cache as
// generated C++ (build.h): the key hashes the source, the bytes of the kiln headers it includes,
// the options, the architecture and NVRTC's version.
#pragma once

#include <string>
#include <vector>

namespace kiln::compiler {

struct CudaBuild {
  std::string cubin;
  bool from_cache = false;
};

// Throws kiln::Error with NVRTC's log when the source does not compile, and "NVRTC was not found"
// when NVRTC does not load.
CudaBuild compile_cuda(const std::string& source, const std::string& arch);

// The options every generated CUDA source is compiled with: C++17, and no contraction of a product
// and a sum into one rounding (eager rounds each, as generated C++ does with -ffp-contract=off).
const std::vector<std::string>& cuda_compile_options();

}  // namespace kiln::compiler
