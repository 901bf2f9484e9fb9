// The prebuilds (ops/prebuild.h) of a program's extern calls on its target's device, run on a
// thread of their own while the target builds the program's kernels; joined when the object goes.
#pragma once

#include <thread>

#include "kiln/compiler/loopir/program.h"
#include "kiln/compiler/target.h"
#include "kiln/ops/prebuild.h"

namespace kiln::compiler {

class Prebuilds {
 public:
  // Starts the prebuild of each extern call of `p` whose op has one in `prebuilds` (by default the
  // prebuilds of `target`'s backend), its arguments as meta tensors, one after another on one
  // thread (calls of one kind after the first find their kernel built). A prebuild that throws is
  // logged (KILN_LOG=compile) and forgotten: the call itself reports the problem when it runs.
  Prebuilds(const loopir::Program& p, const Target& target, const OpAttr<Prebuild>* prebuilds = nullptr);
  Prebuilds(const Prebuilds&) = delete;
  Prebuilds& operator=(const Prebuilds&) = delete;
  // How many prebuilds were started.
  size_t started() const { return started_; }

 private:
  size_t started_ = 0;
  std::jthread thread_;  // joins when the object goes, even while its constructor unwinds
};

}  // namespace kiln::compiler
