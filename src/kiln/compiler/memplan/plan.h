// Memory planning: each intermediate buffer a kernel writes (and a later step reads) lives from
// the step that writes it to the last step that reads it; buffers whose lives do not overlap share
// a slot (best fit by size). A kernel that reads a buffer for the last time, each element only where
// it writes the same element of its output, writes in place over it. Buffers kept inside a kernel get no memory at all; outputs are fresh
// tensors the caller owns; inputs and extern results bring their own.
#pragma once

#include <string>
#include <vector>

#include "kiln/compiler/schedule/fuse.h"

namespace kiln::compiler {

struct MemoryPlan {
  std::vector<int> slot;             // per buffer: its slot, or -1 (input, output, extern result, kept in a kernel)
  std::vector<bool> output;          // per buffer: a graph output, allocated fresh on each call
  std::vector<int64_t> slot_bytes;
  int64_t planned_bytes = 0;         // sum of the slots: the intermediates' peak
  int64_t unplanned_bytes = 0;       // what one allocation per intermediate would take
  int kept_in_kernels = 0;           // buffers that never touch memory
  int in_place = 0;                  // buffers written over a buffer their kernel reads for the last time
  std::string str() const;
};

MemoryPlan plan_memory(const loopir::Program& p, const Schedule& s);

}  // namespace kiln::compiler
