// Ahead-of-time packages: a model compiled once, then loaded and run with no tracing and no C++
// compiler on the machine.
//   kiln::compile_package(kiln::load("model.pt2"), "model.kiln");   // `kiln compile`
//   kiln::Package p = kiln::load_package("model.kiln");             // `kiln run model.kiln`
//   auto out = p.run({x});
// A package is a zip (stored records, 64-byte aligned, as `.pt2` archives are) holding:
//   kiln/manifest.json  the format version, the kiln build and the machine it was compiled for, the
//                       SHA-256 of the generated C++, and each input's and output's spec;
//   kiln/graph.txt      the prims-level graph (graph IR text) the kernels were generated from;
//   kiln/kernels.so     the compiled kernels;
//   kiln/storage/<i>    the bound tensors' bytes (weights, buffers, constants), one record per storage
//                       (tied weights stay tied), read in place from the mapped package.
// Loading parses the graph and reruns the compiler's passes up to code generation — fast, and what
// rebuilds the kernel schedule and memory plan the kernels were compiled against — but never the C++
// compiler: the generated source must hash to the manifest's, and the kernels are loaded from the
// package. A package made by another kiln build, or for a CPU whose instruction set or last-level
// cache differs (code generation depends on both), is refused with an error saying which.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/api/model.h"

namespace kiln {

struct PackageOptions {
  CompileOptions compile;  // the backend must be "inductor"
  // Called with a line per stage (tracing, generating and compiling, kernels compiled of how many,
  // writing).
  std::function<void(const std::string&)> progress;
};

// Compiles `model` for this machine and writes the package to `path`.
void compile_package(const Model& model, const std::string& path, const PackageOptions& options = {});

class Package {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const ModelSignature& signature() const;
  std::vector<std::string> input_names() const { return signature().input_names(); }
  size_t num_outputs() const { return signature().num_outputs(); }
  // How many compiled kernels the package holds.
  size_t kernel_count() const;

 private:
  friend Package load_package(const std::string& path);
  struct State;
  std::shared_ptr<const State> state_;
};

// Loads a package written by compile_package; throws kiln::Error naming the file and the reason it
// cannot run here (format, kiln build, machine, a record missing or inconsistent).
Package load_package(const std::string& path);

// What a package records of the build and machine it was made on, and checks on load.
std::string kiln_build_id();
std::string machine_isa();  // the CPU's instruction set extensions (/proc/cpuinfo flags), sorted

}  // namespace kiln
