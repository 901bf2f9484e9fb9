// Memory planning: each intermediate buffer a kernel writes (and a later step reads) lives from
// the step that writes it to the last step that reads it; buffers whose lives do not overlap share
// a slot (best fit by size). A kernel that reads a buffer for the last time, each element only where
// it writes the same element of its output, writes in place over it. Buffers kept inside a kernel
// get no memory at all; outputs are fresh tensors the caller owns; inputs and extern results bring
// their own.
//
// Extern results may be views of their arguments (the op schema's alias annotations say which:
// `as_strided(Tensor(a) self, ...) -> Tensor(a)`). Such a result's memory is its base's, so the
// base lives as long as the result (and any view of it) is read; a base that an output views is
// allocated fresh like an output, since the caller keeps it after run() returns; and no kernel
// writes in place over a buffer while it reads a view of that buffer.
#pragma once

#include <string>
#include <vector>

#include "kiln/compiler/schedule/fuse.h"

namespace kiln::compiler {

struct MemoryPlan {
  std::vector<int> slot;     // per buffer: its slot, or -1 (input, output, extern result, kept in a kernel)
  std::vector<bool> output;  // per buffer: a graph output (or its base), allocated fresh on each call
  std::vector<int64_t> slot_bytes;
  int64_t planned_bytes = 0;    // sum of the slots: the intermediates' peak
  int64_t unplanned_bytes = 0;  // what one allocation per intermediate would take
  int kept_in_kernels = 0;      // buffers that never touch memory
  int in_place = 0;             // buffers written over a buffer their kernel reads for the last time
  std::string str() const;
};

MemoryPlan plan_memory(const loopir::Program& p, const Schedule& s);

// The views among an extern call's arguments that its result `result` may share memory with: those
// whose schema argument is in the result's alias set (all of them where the schema cannot say).
std::vector<loopir::BufferView> aliased_arguments(const loopir::ExternCall& call, size_t result);

// Per buffer, the buffers whose memory it may be (itself included): an extern result that views its
// arguments is its arguments' buffers, transitively; every other buffer is only itself.
std::vector<std::vector<int>> memory_bases(const loopir::Program& p);

}  // namespace kiln::compiler
