// Input tensors of a differential program. Their bytes come from the InputSpec's fill and seed
// (deterministic), and each lives in its own mapping: the storage ends exactly where a PROT_NONE
// page begins (another one sits before the first page), and the data pages are read-only while
// the tensor lives. A compiled kernel that reads one element past an input, or writes to an
// input, gets SIGSEGV instead of reading garbage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "program.h"

namespace kiln::difftest {

// The bytes of the input's whole storage (storage_elements() elements of its dtype).
std::vector<uint8_t> input_bytes(const InputSpec& spec);

// The input as a tensor over guarded, read-only memory (see the file comment).
Tensor guarded_input(const InputSpec& spec);

// A float copy of a floating input in float64 (other dtypes unchanged): the float64 reference's input.
Tensor widened(const Tensor& t);

// Writes each input's storage bytes to `dir`/<name>.bin (what torch_ref.py reads).
void write_input_files(const Program& p, const std::string& dir);

}  // namespace kiln::difftest
