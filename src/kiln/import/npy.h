// Reading and writing NumPy `.npy` files as kiln tensors: the format `kiln run` takes inputs in and
// writes outputs to, and that PyTorch users produce with np.save(t.numpy()).
//
// Read: format versions 1.0, 2.0 and 3.0; every kiln dtype (bool, uint8, int8, int16, int32,
// int64, float16, bfloat16, float32, float64, complex64, complex128); little- and big-endian data
// (big-endian is byte-swapped into a little-endian tensor); 0-d and empty shapes. A C-order array
// becomes a contiguous tensor; a Fortran-order array becomes a tensor over the same bytes with
// column-major strides (stride 1 on the first dim), as torch.from_numpy does, not a copy — call
// contiguous() when row-major is needed. The data is copied into a fresh CPU storage.
// Write: version 1.0 (2.0 when the header needs it), little-endian, C order; a non-contiguous
// tensor is written in C order of its elements.
//
// bfloat16: numpy has no bfloat16. np.save of an ml_dtypes.bfloat16 array (JAX's and
// TensorFlow's numpy type) writes descr '<V2' — two raw bytes per element, the little-endian
// bfloat16 bits — because numpy's dtype_to_descr uses dtype.str for a legacy user dtype, and
// ml_dtypes registers bfloat16 with kind 'V' (checked with numpy 2.3 and ml_dtypes 0.6). kiln
// reads '<V2' (and '|V2') as bfloat16 and writes bfloat16 as '<V2'; np.load gives a void array, and
// a.view(ml_dtypes.bfloat16), or torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16), gives the
// values back. PyTorch cannot call .numpy() on a bfloat16 tensor, so its users write
// t.view(torch.uint16).numpy() ('<u2'), which NpyReadOptions::uint16_as_bfloat16 reads as bfloat16;
// without the option kiln refuses '<u2' (it has no uint16) rather than guess.
//
// Errors (kiln::Error naming the file, or `name` for bytes in memory): bad magic, an unsupported
// version, a truncated or malformed header dict, a missing or unknown key, an unknown descr
// (structured, object, string or unsigned wider than one byte), a shape whose byte count
// overflows, data shorter than the shape needs (truncated) or longer (size mismatch).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/import/npy_header.h"
#include "kiln/ops/tensor.h"

namespace kiln {

// Reads the .npy file at `path` into a new CPU tensor.
Tensor read_npy(const std::string& path, const NpyReadOptions& options = {});
// Reads a whole .npy file held in memory; `name` stands for the path in errors.
Tensor parse_npy(std::span<const std::byte> bytes, std::string_view name = "<memory>",
                 const NpyReadOptions& options = {});

// The bytes of a .npy file holding `t` (a CPU tensor), in C order.
std::vector<std::byte> npy_bytes(const TensorBase& t);
// Writes `t` (a CPU tensor) to `path` as a .npy file; throws kiln::Error when the file cannot be written.
void write_npy(const std::string& path, const TensorBase& t);

}  // namespace kiln
