// MappedFile: the bytes of a file, memory-mapped privately (copy-on-write: writing a page copies it,
// the file never changes), or of a buffer handed over in memory, owned through a std::shared_ptr. Whatever points into
// the bytes (a zip entry, a tensor's storage over a weight) holds that pointer, so the mapping stays alive as long as
// anything views it and no byte is copied.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln {

class MappedFile {
 public:
  // Maps `path` read-only; throws kiln::Error naming the path and the system's reason.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  // Takes `bytes` over; `name` stands for the path in error messages.
  static std::shared_ptr<const MappedFile> from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  // The file's path, or the name given to from_bytes.
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // the mmap'd region (null for buffers and empty files)
  std::vector<std::byte> owned_;
};

}  // namespace kiln
