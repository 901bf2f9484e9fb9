// ZipArchive: a read-only reader for zip archives, the container of PyTorch's `.pt2` and
// `torch.save` files. It parses the end-of-central-directory record (past an archive comment), the
// ZIP64 records and extra fields PyTorch writes, the central directory and each local header, and
// hands out entries' bytes: STORED entries as zero-copy views into the memory-mapped file (PyTorch
// stores everything, each record on a 64-byte boundary), DEFLATE entries inflated into an owned
// buffer (an archive re-zipped by Python's zipfile). Anything malformed — truncation, offsets or
// sizes outside the file, overflowing sizes, duplicate names, multi-disk or encrypted archives,
// other compression methods — throws kiln::Error naming the file, the entry and the numbers; no
// input makes it read outside the file. Format reference: PKWARE's APPNOTE.TXT, sections 4.3-4.5.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/import/mapped_file.h"

namespace kiln {

// Compression methods (APPNOTE 4.4.5) kiln reads; the number of any other is kept in ZipEntry.
inline constexpr uint16_t kZipStored = 0;
inline constexpr uint16_t kZipDeflated = 8;

// One file of the archive, as its central directory and local header describe it.
struct ZipEntry {
  std::string name;
  uint16_t method = 0;             // kZipStored, kZipDeflated, or another (read() refuses it)
  uint16_t flags = 0;              // general purpose bits; bit 0 = encrypted (read() refuses it)
  uint32_t crc32 = 0;              // of the uncompressed bytes
  uint64_t compressed_size = 0;    // bytes in the file
  uint64_t uncompressed_size = 0;  // bytes once inflated (== compressed_size when stored)
  uint64_t local_header_offset = 0;
  uint64_t data_offset = 0;  // first data byte: after the local header's own name and extra field
};

// An entry's bytes and what keeps them alive: the archive's mapping for a stored entry (no copy),
// an owned buffer for an inflated one. Hold `owner` as long as `bytes` is used.
struct ZipData {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;

  std::string_view text() const { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }
};

class ZipArchive {
 public:
  // Memory-maps and parses the archive at `path`.
  static ZipArchive open(const std::string& path);
  // Parses an archive held in memory; errors name `name` as the file.
  static ZipArchive from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");
  // Parses an already mapped file.
  explicit ZipArchive(std::shared_ptr<const MappedFile> file);

  // The file's path (or the in-memory name), as errors quote it.
  const std::string& path() const { return file_->path(); }
  // Entries in central-directory order.
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry called `name`, or null.
  const ZipEntry* find(std::string_view name) const;
  // The entry called `name`; throws kiln::Error naming the archive when there is none.
  const ZipEntry& entry(std::string_view name) const;
  // The text before the first '/' of the first entry's name ("" when it has none): torch writes
  // every record as `<archive_name>/<record>`, with archive_name taken from the file name.
  const std::string& root() const { return root_; }

  // A stored entry's bytes, a view into the mapping (zero-copy); throws for any other method.
  std::span<const std::byte> stored_bytes(const ZipEntry& e) const;
  // Any entry's bytes: stored -> a view; deflate -> inflated and CRC-checked; else kiln::Error.
  ZipData read(const ZipEntry& e) const;
  ZipData read(std::string_view name) const { return read(entry(name)); }
  // Recomputes the CRC-32 of an entry's bytes; throws kiln::Error when it differs from the
  // central directory's. (read() checks inflated entries always, stored ones only through this.)
  void check_crc(const ZipEntry& e) const;

  // Owner of the mapping: anything that points into stored_bytes() holds it.
  const std::shared_ptr<const MappedFile>& file() const { return file_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::string root_;
};

// The CRC-32 (ISO-HDLC, zip's) of `bytes`.
uint32_t zip_crc32(std::span<const std::byte> bytes);

}  // namespace kiln
