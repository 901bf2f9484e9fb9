#include "kiln/import/zip_writer.h"

#include <cerrno>
#include <cstring>

#include "kiln/import/zip.h"
#include "kiln/support/error.h"

namespace kiln {
namespace {

constexpr uint64_t kAlignment = 64;
constexpr uint32_t kSaturated = 0xFFFFFFFFu;

}  // namespace

ZipWriter::ZipWriter(std::string path) : path_(std::move(path)), temp_(path_ + ".tmp") {
  file_ = std::fopen(temp_.c_str(), "wb");
  KILN_CHECK(file_ != nullptr, "{}: cannot write: {}", temp_, std::strerror(errno));
}

ZipWriter::~ZipWriter() {
  if (file_) std::fclose(file_);
  if (!finished_) std::remove(temp_.c_str());
}

void ZipWriter::write(const void* data, size_t n) {
  KILN_CHECK(n == 0 || std::fwrite(data, 1, n, file_) == n, "{}: write failed: {}", temp_, std::strerror(errno));
  offset_ += n;
}

void ZipWriter::put(uint64_t value, int bytes) {
  unsigned char b[8];
  for (int i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(value >> (8 * i));
  write(b, static_cast<size_t>(bytes));
}

void ZipWriter::add(const std::string& name, std::string_view text) {
  add(name, std::span<const std::byte>(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

void ZipWriter::add(const std::string& name, std::span<const std::byte> data) {
  KILN_CHECK(!finished_, "{}: add after finish", path_);
  KILN_CHECK(name.size() < 0xFFFF, "{}: record name of {} bytes", path_, name.size());
  for (const auto& r : records_) KILN_CHECK(r.name != name, "{}: record {} is written twice", path_, name);
  Record r{name, offset_, data.size(), zip_crc32(data)};
  // Local header, then a ZIP64 extra field (sizes) and an "FB" field padding the data to 64 bytes.
  uint64_t fixed = 30 + name.size() + 20;
  uint64_t pad = (kAlignment - (offset_ + fixed + 4) % kAlignment) % kAlignment;
  put(0x04034b50, 4);
  put(45, 2);  // version needed: ZIP64
  put(0, 2);   // flags
  put(0, 2);   // stored
  put(0, 4);   // time, date
  put(r.crc, 4);
  put(kSaturated, 4);
  put(kSaturated, 4);
  put(name.size(), 2);
  put(20 + 4 + pad, 2);
  write(name.data(), name.size());
  put(0x0001, 2);
  put(16, 2);
  put(r.size, 8);
  put(r.size, 8);
  put(0x4246, 2);  // "FB"
  put(pad, 2);
  std::vector<char> zeros(pad, 'Z');
  write(zeros.data(), zeros.size());
  write(data.data(), data.size());
  records_.push_back(std::move(r));
}

void ZipWriter::finish() {
  uint64_t directory = offset_;
  for (const auto& r : records_) {
    put(0x02014b50, 4);
    put(45, 2);
    put(45, 2);
    put(0, 2);
    put(0, 2);
    put(0, 4);
    put(r.crc, 4);
    put(kSaturated, 4);
    put(kSaturated, 4);
    put(r.name.size(), 2);
    put(28, 2);  // ZIP64 extra field: sizes and local header offset
    put(0, 2);   // comment
    put(0, 2);   // disk
    put(0, 2);   // internal attributes
    put(0, 4);   // external attributes
    put(kSaturated, 4);
    write(r.name.data(), r.name.size());
    put(0x0001, 2);
    put(24, 2);
    put(r.size, 8);
    put(r.size, 8);
    put(r.local_offset, 8);
  }
  uint64_t directory_size = offset_ - directory;
  uint64_t zip64_end = offset_;
  put(0x06064b50, 4);  // ZIP64 end of central directory record
  put(44, 8);
  put(45, 2);
  put(45, 2);
  put(0, 4);
  put(0, 4);
  put(records_.size(), 8);
  put(records_.size(), 8);
  put(directory_size, 8);
  put(directory, 8);
  put(0x07064b50, 4);  // its locator
  put(0, 4);
  put(zip64_end, 8);
  put(1, 4);
  put(0x06054b50, 4);  // end of central directory, saturated
  put(0, 2);
  put(0, 2);
  put(0xFFFF, 2);
  put(0xFFFF, 2);
  put(kSaturated, 4);
  put(kSaturated, 4);
  put(0, 2);
  KILN_CHECK(std::fclose(file_) == 0, "{}: cannot close: {}", temp_, std::strerror(errno));
  file_ = nullptr;
  KILN_CHECK(std::rename(temp_.c_str(), path_.c_str()) == 0, "{}: cannot rename {} into place: {}", path_, temp_,
             std::strerror(errno));
  finished_ = true;
}

}  // namespace kiln
