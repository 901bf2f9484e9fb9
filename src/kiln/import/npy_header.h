// The header of a NumPy `.npy` file: magic, format version, and the Python dict literal that gives
// the element type (`descr`), the layout (`fortran_order`) and the shape. Parsed strictly: exactly
// those three keys, a descr kiln has a dtype for, non-negative dims whose byte count fits in 64
// bits; anything else is a kiln::Error naming the file. Format: numpy/lib/format.py's docstring
// ("NPY format", versions 1.0, 2.0, 3.0). npy.h reads and writes whole arrays on top of this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kiln/core/dtype.h"
#include "kiln/core/int_array.h"

namespace kiln {

// How to read descrs that are not a kiln dtype on their own.
struct NpyReadOptions {
  // kiln has no uint16, and PyTorch users save a bfloat16 tensor as t.view(torch.uint16).numpy()
  // (numpy has no bfloat16): with this set, '<u2' / '>u2' arrays are read as bfloat16 bits;
  // without it they are refused with an error that names this option.
  bool uint16_as_bfloat16 = false;
};

struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::Float32;
  std::string descr;        // as written, e.g. "<f4"
  bool big_endian = false;  // the data's bytes need swapping (never for one-byte types)
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;  // the data's first byte: after magic, version, length and dict
  size_t data_bytes = 0;   // numel * element size
};

// Parses the header at the start of `bytes`; `name` (the path) prefixes every error.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, std::string_view name, const NpyReadOptions& options = {});

// The descr kiln writes for `dtype`: "<f4", "|b1", ...; bfloat16 is "<V2" (npy.h says why).
std::string_view npy_descr(DType dtype);

// A complete C-order header (magic through the dict's '\n'), padded with spaces so the data starts
// on a 64-byte boundary, as numpy writes it: version 1.0, or 2.0 when the dict exceeds 65535 bytes.
std::string format_npy_header(DType dtype, IntArrayRef shape);

}  // namespace kiln
