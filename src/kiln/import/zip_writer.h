// ZipWriter: writes the zip archives kiln produces (`.kiln` packages) the way PyTorch writes `.pt2`
// files, so ZipArchive reads them back with zero-copy views: every record stored (uncompressed),
// its data on a 64-byte boundary (padding in an "FB" extra field of the local header), ZIP64 records
// and fields throughout (no size limit), CRC-32 of every record. The file is written under a
// temporary name and renamed into place when finish() succeeds, so a failed write leaves no archive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace kiln {

class ZipWriter {
 public:
  // Opens `path` for writing (through `path` + ".tmp"); throws kiln::Error naming it on failure.
  explicit ZipWriter(std::string path);
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // Appends a record; names must be unique.
  void add(const std::string& name, std::span<const std::byte> data);
  void add(const std::string& name, std::string_view text);
  // Writes the central directory and end records and renames the file into place.
  void finish();

 private:
  struct Record {
    std::string name;
    uint64_t local_offset, size;
    uint32_t crc;
  };
  void write(const void* data, size_t n);
  void put(uint64_t value, int bytes);

  std::string path_, temp_;
  std::FILE* file_ = nullptr;
  uint64_t offset_ = 0;
  std::vector<Record> records_;
  bool finished_ = false;
};

}  // namespace kiln
