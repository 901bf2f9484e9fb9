#include "kiln/import/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>

#include "kiln/import/mapped_file.h"
#include "kiln/support/error.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

namespace {

// Reverses the bytes of each `unit`-byte word (a complex number swaps its two parts separately).
void byte_swap(std::byte* data, size_t nbytes, size_t unit) {
  for (size_t i = 0; i + unit <= nbytes; i += unit) std::reverse(data + i, data + i + unit);
}

// Column-major strides: the first dim varies fastest.
Shape fortran_strides(IntArrayRef sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

void check_cpu(const TensorBase& t) {
  KILN_CHECK(t.defined(), "write_npy: the tensor is undefined");
  KILN_CHECK(t.device().is_cpu(), "write_npy: {} is not on the CPU; move it there first", t.describe());
}

// Appends `t`'s elements in C order to `out`.
void append_c_order(const TensorBase& t, std::vector<std::byte>& out) {
  size_t esize = t.element_size();
  size_t start = out.size();
  out.resize(start + t.nbytes());
  if (t.numel() == 0) return;
  const auto* base = static_cast<const std::byte*>(t.data_ptr());
  std::byte* dst = out.data() + start;
  if (t.is_contiguous()) {
    std::memcpy(dst, base, t.nbytes());
    return;
  }
  // An odometer over the indices, last dim fastest; `offset` is the element offset of the index.
  int64_t ndim = t.dim();
  Shape index(static_cast<size_t>(ndim), 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < t.numel(); ++n) {
    std::memcpy(dst, base + offset * static_cast<int64_t>(esize), esize);
    dst += esize;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) {
        offset += t.stride(d);
        break;
      }
      offset -= (index[d] - 1) * t.stride(d);
      index[d] = 0;
    }
  }
}

}  // namespace

Tensor parse_npy(std::span<const std::byte> bytes, std::string_view name, const NpyReadOptions& options) {
  NpyHeader h = parse_npy_header(bytes, name, options);
  size_t have = bytes.size() - h.data_offset;
  KILN_CHECK(have >= h.data_bytes,
             "{}: truncated .npy data: shape {} of {} needs {} bytes, the file has {} after its header", name,
             fmt::format("({})", fmt::join(h.shape, ", ")), h.dtype, h.data_bytes, have);
  KILN_CHECK(have == h.data_bytes,
             "{}: .npy shape/data size mismatch: shape {} of {} needs {} bytes, the file has {} after its header", name,
             fmt::format("({})", fmt::join(h.shape, ", ")), h.dtype, h.data_bytes, have);
  auto storage = StorageImpl::allocate(h.data_bytes, kCPU);
  auto* data = static_cast<std::byte*>(storage->data());
  if (h.data_bytes) std::memcpy(data, bytes.data() + h.data_offset, h.data_bytes);
  if (h.big_endian)
    byte_swap(data, h.data_bytes, is_complex(h.dtype) ? element_size(h.dtype) / 2 : element_size(h.dtype));
  if (h.dtype == DType::Bool) {
    // numpy stores bool as one byte and treats any nonzero byte as True; kiln's bool must be 0 or 1.
    for (size_t i = 0; i < h.data_bytes; ++i) data[i] = data[i] != std::byte{0} ? std::byte{1} : std::byte{0};
  }
  Shape strides = h.fortran_order ? fortran_strides(h.shape) : contiguous_strides(h.shape);
  return make_tensor(std::move(storage), h.shape, strides, 0, h.dtype);
}

Tensor read_npy(const std::string& path, const NpyReadOptions& options) {
  auto file = MappedFile::open(path);
  return parse_npy(file->bytes(), path, options);
}

std::vector<std::byte> npy_bytes(const TensorBase& t) {
  check_cpu(t);
  std::string header = format_npy_header(t.dtype(), t.sizes());
  std::vector<std::byte> out(header.size());
  std::memcpy(out.data(), header.data(), header.size());
  append_c_order(t, out);
  return out;
}

void write_npy(const std::string& path, const TensorBase& t) {
  check_cpu(t);
  std::string header = format_npy_header(t.dtype(), t.sizes());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(out.good(), "write_npy: cannot open {} for writing: {}", path, std::strerror(errno));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (t.is_contiguous() && t.numel() > 0) {
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  } else {
    std::vector<std::byte> data;
    append_c_order(t, data);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  out.close();
  KILN_CHECK(!out.fail(), "write_npy: writing {} bytes to {} failed", header.size() + t.nbytes(), path);
}

}  // namespace kiln
