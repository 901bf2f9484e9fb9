// The prebuilds (ops/prebuild.h) of a program's extern calls on its target's device, run on threads
// of their own while the target builds the program's kernels; joined when the object goes.
#pragma once

#include <thread>
#include <vector>

#include "kiln/compiler/loopir/program.h"
#include "kiln/compiler/target.h"

namespace kiln::compiler {

class Prebuilds {
 public:
  // Starts the prebuild of each extern call of `p` whose op has one for `target`'s device (its
  // arguments as meta tensors). A prebuild that throws is logged (KILN_LOG=compile) and forgotten:
  // the call itself reports the problem when it runs.
  Prebuilds(const loopir::Program& p, const Target& target);
  ~Prebuilds();
  Prebuilds(const Prebuilds&) = delete;
  Prebuilds& operator=(const Prebuilds&) = delete;
  size_t started() const { return threads_.size(); }

 private:
  std::vector<std::thread> threads_;
};

}  // namespace kiln::compiler
