// A tiny zip writer for tests: emits local headers, a central directory and the end records by
// hand, with or without ZIP64 records and fields and PyTorch's "FB" alignment padding, and records
// where each record landed so a test can corrupt exactly one field. Test-only (zip_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <zlib.h>

namespace kiln::testing {

struct ZipBuildEntry {
  std::string name;
  std::string data;      // uncompressed bytes
  bool deflate = false;  // compress with raw DEFLATE (method 8) instead of storing
};

struct ZipBuildOptions {
  bool zip64 = false;                 // ZIP64 extra fields (sizes and offset saturated) + ZIP64 end records
  size_t align = 0;                   // pad each local header with an "FB" extra field so data starts at a multiple
  std::string comment{};              // the archive comment after the EOCD
  std::string central_extra_field{};  // an unknown extra field (id 0xcafe) in every central entry
};

struct BuiltZip {
  std::vector<std::byte> bytes;
  std::vector<size_t> local_offsets;    // local header of each entry
  std::vector<size_t> central_offsets;  // central directory entry of each entry
  std::vector<size_t> data_offsets;
  size_t cd_offset = 0, cd_size = 0;
  size_t zip64_eocd_offset = 0, zip64_locator_offset = 0;  // 0 without ZIP64
  size_t eocd_offset = 0;
};

inline std::string raw_deflate(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Little-endian field writers; set16/32/64 patch a field in place.
inline void put(std::vector<std::byte>& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}
inline void put_str(std::vector<std::byte>& b, const std::string& s) {
  for (char c : s) b.push_back(static_cast<std::byte>(c));
}
inline void set(std::vector<std::byte>& b, size_t off, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[off + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

inline BuiltZip build_zip(const std::vector<ZipBuildEntry>& entries, const ZipBuildOptions& opt = {}) {
  BuiltZip z;
  auto& b = z.bytes;
  struct Meta {
    uint32_t crc;
    uint64_t csize, usize;
    uint16_t method;
  };
  std::vector<Meta> meta;
  for (const auto& e : entries) {
    std::string payload = e.deflate ? raw_deflate(e.data) : e.data;
    uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(e.data.data()), static_cast<uInt>(e.data.size())));
    meta.push_back({crc, payload.size(), e.data.size(), static_cast<uint16_t>(e.deflate ? 8 : 0)});
    z.local_offsets.push_back(b.size());
    put(b, 0x04034b50, 4);
    put(b, opt.zip64 ? 45 : 20, 2);
    put(b, 0, 2);
    put(b, meta.back().method, 2);
    put(b, 0, 4);  // time, date
    put(b, crc, 4);
    put(b, opt.zip64 ? 0xffffffffu : payload.size(), 4);
    put(b, opt.zip64 ? 0xffffffffu : e.data.size(), 4);
    put(b, e.name.size(), 2);
    size_t extra_len_at = b.size();
    put(b, 0, 2);
    put_str(b, e.name);
    size_t extra_start = b.size();
    if (opt.zip64) {
      put(b, 0x0001, 2);
      put(b, 16, 2);
      put(b, e.data.size(), 8);
      put(b, payload.size(), 8);
    }
    if (opt.align) {
      size_t pos = b.size() + 4;  // after the FB field's own header
      size_t pad = (opt.align - pos % opt.align) % opt.align;
      put_str(b, "FB");
      put(b, pad, 2);
      b.insert(b.end(), pad, std::byte{'Z'});
    }
    set(b, extra_len_at, b.size() - extra_start, 2);
    z.data_offsets.push_back(b.size());
    put_str(b, payload);
  }
  z.cd_offset = b.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const Meta& m = meta[i];
    z.central_offsets.push_back(b.size());
    put(b, 0x02014b50, 4);
    put(b, opt.zip64 ? 45 : 20, 2);
    put(b, opt.zip64 ? 45 : 20, 2);
    put(b, 0, 2);
    put(b, m.method, 2);
    put(b, 0, 4);
    put(b, m.crc, 4);
    put(b, opt.zip64 ? 0xffffffffu : m.csize, 4);
    put(b, opt.zip64 ? 0xffffffffu : m.usize, 4);
    put(b, e.name.size(), 2);
    size_t extra = (opt.zip64 ? 28 : 0) + (opt.central_extra_field.empty() ? 0 : 4 + opt.central_extra_field.size());
    put(b, extra, 2);
    put(b, 0, 2);  // comment
    put(b, 0, 2);  // disk
    put(b, 0, 2);
    put(b, 0, 4);
    put(b, opt.zip64 ? 0xffffffffu : z.local_offsets[i], 4);
    put_str(b, e.name);
    if (opt.zip64) {
      put(b, 0x0001, 2);
      put(b, 24, 2);
      put(b, m.usize, 8);
      put(b, m.csize, 8);
      put(b, z.local_offsets[i], 8);
    }
    if (!opt.central_extra_field.empty()) {
      put(b, 0xcafe, 2);
      put(b, opt.central_extra_field.size(), 2);
      put_str(b, opt.central_extra_field);
    }
  }
  z.cd_size = b.size() - z.cd_offset;
  if (opt.zip64) {
    z.zip64_eocd_offset = b.size();
    put(b, 0x06064b50, 4);
    put(b, 44, 8);
    put(b, 45, 2);
    put(b, 45, 2);
    put(b, 0, 4);
    put(b, 0, 4);
    put(b, entries.size(), 8);
    put(b, entries.size(), 8);
    put(b, z.cd_size, 8);
    put(b, z.cd_offset, 8);
    z.zip64_locator_offset = b.size();
    put(b, 0x07064b50, 4);
    put(b, 0, 4);
    put(b, z.zip64_eocd_offset, 8);
    put(b, 1, 4);
  }
  z.eocd_offset = b.size();
  put(b, 0x06054b50, 4);
  put(b, 0, 2);
  put(b, 0, 2);
  put(b, opt.zip64 ? 0xffff : entries.size(), 2);
  put(b, opt.zip64 ? 0xffff : entries.size(), 2);
  put(b, opt.zip64 ? 0xffffffffu : z.cd_size, 4);
  put(b, opt.zip64 ? 0xffffffffu : z.cd_offset, 4);
  put(b, opt.comment.size(), 2);
  put_str(b, opt.comment);
  return z;
}

}  // namespace kiln::testing
