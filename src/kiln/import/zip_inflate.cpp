#include "kiln/import/zip_inflate.h"

#include <algorithm>
#include <climits>

#include <zlib.h>

#include "kiln/import/zip.h"
#include "kiln/support/error.h"

namespace kiln {

uint32_t zip_crc32(std::span<const std::byte> bytes) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

namespace detail {

namespace {

// Ends the inflate stream however zip_inflate leaves.
struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};

}  // namespace

std::vector<std::byte> zip_inflate(std::span<const std::byte> compressed, uint64_t expected_size,
                                   std::string_view what) {
  std::vector<std::byte> out(static_cast<size_t>(expected_size));
  z_stream zs{};
  // Negative window bits: a raw DEFLATE stream, no zlib header or trailer (zip stores it so).
  KILN_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK, "{}: zlib's inflateInit2 failed", what);
  InflateGuard guard{&zs};
  size_t in_pos = 0, out_pos = 0;
  // zlib counts in uInt (32 bits): feed input and output in chunks.
  constexpr size_t kChunk = UINT_MAX;
  for (;;) {
    if (zs.avail_in == 0 && in_pos < compressed.size()) {
      size_t n = std::min(kChunk, compressed.size() - in_pos);
      zs.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(compressed.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (zs.avail_out == 0 && out_pos < out.size()) {
      size_t n = std::min(kChunk, out.size() - out_pos);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
      zs.avail_out = static_cast<uInt>(n);
      out_pos += n;
    }
    // With no room left, inflate into a scratch byte to learn whether the stream holds more.
    Bytef scratch;
    bool probing = zs.avail_out == 0;
    if (probing) {
      zs.next_out = &scratch;
      zs.avail_out = 1;
    }
    int ret = inflate(&zs, Z_NO_FLUSH);
    if (probing && zs.avail_out == 0) {
      KILN_FAIL(ErrorKind::Value, "{}: inflates to more than the declared {} bytes", what, expected_size);
    }
    if (probing) zs.avail_out = 0;
    if (ret == Z_STREAM_END) break;
    if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == compressed.size()) {
      KILN_FAIL(ErrorKind::Value, "{}: compressed data ({} bytes) ends before the deflate stream does", what,
                compressed.size());
    }
    KILN_CHECK(ret == Z_OK || ret == Z_BUF_ERROR, "{}: corrupt deflate data: {}", what,
               zs.msg ? zs.msg : "zlib error " + std::to_string(ret));
  }
  KILN_CHECK(zs.total_out == expected_size, "{}: inflates to {} bytes, the central directory says {}", what,
             static_cast<uint64_t>(zs.total_out), expected_size);
  return out;
}

}  // namespace detail
}  // namespace kiln
