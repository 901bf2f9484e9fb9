#include "kiln/import/zip.h"

#include <cstdint>

#include "kiln/import/zip_inflate.h"
#include "kiln/support/error.h"

namespace kiln {

namespace {

// Record signatures and fixed sizes (APPNOTE 4.3.7, 4.3.12, 4.3.14-4.3.16).
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalSize = 30;
constexpr uint64_t kCentralSize = 46;
constexpr uint64_t kEocdSize = 22;
constexpr uint64_t kZip64EocdSize = 56;
constexpr uint64_t kZip64LocatorSize = 20;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
// DEFLATE expands at most ~1032:1 (a 258-byte match in one or two bits); a larger declared size
// is a lie meant to make the reader allocate, so it is refused before allocating.
constexpr uint64_t kMaxDeflateRatio = 1032;

// Little-endian loads; callers check the range first.
uint16_t le16(const std::byte* p) { return static_cast<uint16_t>(uint16_t(p[0]) | uint16_t(p[1]) << 8); }
uint32_t le32(const std::byte* p) { return uint32_t(le16(p)) | uint32_t(le16(p + 2)) << 16; }
uint64_t le64(const std::byte* p) { return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32; }

std::string_view method_name(uint16_t method) {
  switch (method) {
    case 0: return "stored";
    case 1: return "shrunk";
    case 6: return "imploded";
    case 8: return "deflate";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    case 99: return "AES-encrypted";
    default: return "unknown";
  }
}

// The archive's bytes with the file's name, for range-checked reads and errors.
struct Source {
  std::span<const std::byte> bytes;
  const std::string& path;

  uint64_t size() const { return bytes.size(); }
  const std::byte* at(uint64_t off) const { return bytes.data() + off; }
  // True when [off, off + len) lies inside the file (no overflow).
  bool holds(uint64_t off, uint64_t len) const { return off <= size() && len <= size() - off; }
};

// Where the end records put the central directory.
struct Directory {
  uint64_t offset;
  uint64_t size;
  uint64_t entries;
  uint64_t end;  // where the directory must stop: the first end record
};

// Finds the end-of-central-directory record: the last signature from which the record and its
// comment fit in the file, searching back at most a maximal comment's length.
uint64_t find_eocd(const Source& src) {
  KILN_CHECK(src.size() >= kEocdSize,
             "{}: not a zip archive: {} bytes, too short for an end-of-central-directory record ({} bytes)", src.path,
             src.size(), kEocdSize);
  uint64_t last = src.size() - kEocdSize;
  uint64_t first = last > kMaxComment ? last - kMaxComment : 0;
  for (uint64_t pos = last + 1; pos-- > first;) {
    if (le32(src.at(pos)) == kEocdSig && le16(src.at(pos + 20)) <= src.size() - pos - kEocdSize) return pos;
  }
  KILN_FAIL(ErrorKind::Value,
            "{}: not a zip archive (or truncated): no end-of-central-directory record in its last {} bytes", src.path,
            src.size() - first);
}

Directory read_end_records(const Source& src) {
  uint64_t eocd = find_eocd(src);
  const std::byte* e = src.at(eocd);
  uint64_t disk = le16(e + 4), cd_disk = le16(e + 6), disk_entries = le16(e + 8);
  Directory dir{le32(e + 16), le32(e + 12), le16(e + 10), eocd};
  // ZIP64: a locator right before the EOCD points at the ZIP64 end record, whose 64-bit counts win.
  if (eocd >= kZip64LocatorSize && le32(src.at(eocd - kZip64LocatorSize)) == kZip64LocatorSig) {
    uint64_t locator = eocd - kZip64LocatorSize;
    uint64_t rec = le64(src.at(locator + 8));
    uint64_t total_disks = le32(src.at(locator + 16));
    KILN_CHECK(rec <= locator && kZip64EocdSize <= locator - rec,
               "{}: the ZIP64 end-of-central-directory record at offset {} ({} bytes) runs past its locator at "
               "offset {}",
               src.path, rec, kZip64EocdSize, locator);
    const std::byte* z = src.at(rec);
    KILN_CHECK(le32(z) == kZip64EocdSig, "{}: no ZIP64 end-of-central-directory record at offset {} (signature {:#x})",
               src.path, rec, le32(z));
    KILN_CHECK(total_disks <= 1, "{}: multi-disk zip archives are not supported ({} disks)", src.path, total_disks);
    disk = le32(z + 16);
    cd_disk = le32(z + 20);
    disk_entries = le64(z + 24);
    dir = Directory{le64(z + 48), le64(z + 40), le64(z + 32), rec};
  }
  KILN_CHECK(disk == 0 && cd_disk == 0 && disk_entries == dir.entries,
             "{}: multi-disk zip archives are not supported (disk {}, directory on disk {}, {} of {} entries here)",
             src.path, disk, cd_disk, disk_entries, dir.entries);
  KILN_CHECK(dir.offset <= dir.end && dir.size <= dir.end - dir.offset,
             "{}: the central directory (offset {}, {} bytes) runs past its end record at offset {} (file size {})",
             src.path, dir.offset, dir.size, dir.end, src.size());
  KILN_CHECK(dir.entries <= dir.size / kCentralSize,
             "{}: the central directory claims {} entries, but its {} bytes hold at most {}", src.path, dir.entries,
             dir.size, dir.size / kCentralSize);
  return dir;
}

// Replaces the 32-bit sizes and offset saturated at 0xffffffff by the ZIP64 extra field's values
// (APPNOTE 4.5.3: present in this order, only those saturated).
void apply_zip64_extra(const Source& src, std::span<const std::byte> extra, ZipEntry& e, uint32_t disk_start) {
  bool need_u = e.uncompressed_size == 0xffffffffu, need_c = e.compressed_size == 0xffffffffu;
  bool need_o = e.local_header_offset == 0xffffffffu, need_d = disk_start == 0xffffu;
  size_t pos = 0;
  while (pos + 4 <= extra.size()) {
    uint16_t id = le16(extra.data() + pos), len = le16(extra.data() + pos + 2);
    KILN_CHECK(len <= extra.size() - pos - 4,
               "{}: zip entry '{}': extra field {:#06x} ({} bytes at byte {} of the extra data) runs past its {} bytes",
               src.path, e.name, id, len, pos, extra.size());
    if (id == kZip64ExtraId) {
      const std::byte* f = extra.data() + pos + 4;
      size_t need = 8 * (need_u + need_c + need_o) + 4 * need_d;
      KILN_CHECK(len >= need, "{}: zip entry '{}': the ZIP64 extra field has {} bytes, its saturated fields need {}",
                 src.path, e.name, len, need);
      if (need_u) e.uncompressed_size = le64(f), f += 8;
      if (need_c) e.compressed_size = le64(f), f += 8;
      if (need_o) e.local_header_offset = le64(f), f += 8;
      return;
    }
    pos += 4 + len;
  }
  KILN_CHECK(!(need_u || need_c || need_o),
             "{}: zip entry '{}': sizes or offset saturated at 0xffffffff but no ZIP64 extra field gives them",
             src.path, e.name);
}

// Reads the local header of `e` (after the directory filled it in) to find where its data starts:
// the local name and extra field lengths may differ from the directory's (PyTorch's "FB" padding).
void read_local_header(const Source& src, ZipEntry& e) {
  uint64_t lho = e.local_header_offset;
  KILN_CHECK(src.holds(lho, kLocalSize),
             "{}: zip entry '{}': local header at offset {} runs past the end of the file ({} bytes)", src.path, e.name,
             lho, src.size());
  const std::byte* h = src.at(lho);
  KILN_CHECK(le32(h) == kLocalSig, "{}: zip entry '{}': no local header at offset {} (signature {:#x})", src.path,
             e.name, lho, le32(h));
  uint64_t name_len = le16(h + 26), extra_len = le16(h + 28);
  KILN_CHECK(src.holds(lho + kLocalSize, name_len + extra_len),
             "{}: zip entry '{}': local header at offset {} with a {}-byte name and {}-byte extra field runs past the "
             "end of the file ({} bytes)",
             src.path, e.name, lho, name_len, extra_len, src.size());
  std::string_view local_name(reinterpret_cast<const char*>(h + kLocalSize), name_len);
  KILN_CHECK(local_name == e.name, "{}: zip entry '{}': its local header at offset {} names '{}'", src.path, e.name,
             lho, local_name);
  e.data_offset = lho + kLocalSize + name_len + extra_len;
  KILN_CHECK(src.holds(e.data_offset, e.compressed_size),
             "{}: zip entry '{}': data at offset {} ({} bytes) runs past the end of the file ({} bytes)", src.path,
             e.name, e.data_offset, e.compressed_size, src.size());
  KILN_CHECK(e.method != kZipStored || e.compressed_size == e.uncompressed_size,
             "{}: zip entry '{}': stored, but its sizes differ ({} bytes in the file, {} uncompressed)", src.path,
             e.name, e.compressed_size, e.uncompressed_size);
}

// Parses the central directory entry at `pos` (inside `dir`); returns the offset of the next.
uint64_t read_central_entry(const Source& src, const Directory& dir, uint64_t index, uint64_t pos, ZipEntry& e) {
  uint64_t dir_end = dir.offset + dir.size;
  KILN_CHECK(kCentralSize <= dir_end - pos,
             "{}: central directory entry {} at offset {} ({} bytes) runs past the directory's end at offset {}",
             src.path, index, pos, kCentralSize, dir_end);
  const std::byte* c = src.at(pos);
  KILN_CHECK(le32(c) == kCentralSig, "{}: no central directory entry {} at offset {} (signature {:#x})", src.path,
             index, pos, le32(c));
  uint64_t name_len = le16(c + 28), extra_len = le16(c + 30), comment_len = le16(c + 32);
  KILN_CHECK(name_len + extra_len + comment_len <= dir_end - pos - kCentralSize,
             "{}: central directory entry {} at offset {}: its {}-byte name, {}-byte extra field and {}-byte comment "
             "run past the directory's end at offset {}",
             src.path, index, pos, name_len, extra_len, comment_len, dir_end);
  e.flags = le16(c + 8);
  e.method = le16(c + 10);
  e.crc32 = le32(c + 16);
  e.compressed_size = le32(c + 20);
  e.uncompressed_size = le32(c + 24);
  e.local_header_offset = le32(c + 42);
  e.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
  apply_zip64_extra(src, {c + kCentralSize + name_len, extra_len}, e, le16(c + 34));
  return pos + kCentralSize + name_len + extra_len + comment_len;
}

}  // namespace

ZipArchive ZipArchive::open(const std::string& path) { return ZipArchive(MappedFile::open(path)); }

ZipArchive ZipArchive::from_bytes(std::vector<std::byte> bytes, std::string name) {
  return ZipArchive(MappedFile::from_bytes(std::move(bytes), std::move(name)));
}

ZipArchive::ZipArchive(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
  KILN_ASSERT(file_);
  Source src{file_->bytes(), file_->path()};
  Directory dir = read_end_records(src);
  entries_.resize(dir.entries);
  uint64_t pos = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    ZipEntry& e = entries_[i];
    pos = read_central_entry(src, dir, i, pos, e);
    read_local_header(src, e);
    auto [it, inserted] = by_name_.emplace(e.name, i);
    KILN_CHECK(inserted, "{}: zip entry '{}' appears twice (entries {} and {})", src.path, e.name, it->second, i);
  }
  if (!entries_.empty()) {
    size_t slash = entries_[0].name.find('/');
    if (slash != std::string::npos) root_ = entries_[0].name.substr(0, slash);
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

const ZipEntry& ZipArchive::entry(std::string_view name) const {
  const ZipEntry* e = find(name);
  KILN_CHECK(e, "{}: no entry '{}' in the zip archive ({} entries)", path(), name, entries_.size());
  return *e;
}

std::span<const std::byte> ZipArchive::stored_bytes(const ZipEntry& e) const {
  KILN_CHECK(!(e.flags & 1), "{}: zip entry '{}' is encrypted, which kiln does not read", path(), e.name);
  KILN_CHECK(e.method == kZipStored,
             "{}: zip entry '{}' is compressed (method {}, {}): it has no zero-copy view; use read()", path(), e.name,
             e.method, method_name(e.method));
  return file_->bytes().subspan(e.data_offset, e.compressed_size);
}

ZipData ZipArchive::read(const ZipEntry& e) const {
  KILN_CHECK(!(e.flags & 1), "{}: zip entry '{}' is encrypted, which kiln does not read", path(), e.name);
  if (e.method == kZipStored) return ZipData{stored_bytes(e), file_};
  KILN_CHECK(e.method == kZipDeflated,
             "{}: zip entry '{}' uses compression method {} ({}); kiln reads stored (0) and deflate (8) entries",
             path(), e.name, e.method, method_name(e.method));
  uint64_t limit = e.compressed_size > (UINT64_MAX - 1024) / kMaxDeflateRatio
                       ? UINT64_MAX
                       : e.compressed_size * kMaxDeflateRatio + 1024;
  KILN_CHECK(e.uncompressed_size <= limit && e.uncompressed_size <= static_cast<uint64_t>(PTRDIFF_MAX),
             "{}: zip entry '{}' is too large: {} bytes declared, from {} compressed bytes (deflate expands at most "
             "{}:1)",
             path(), e.name, e.uncompressed_size, e.compressed_size, kMaxDeflateRatio);
  std::string what = fmt::format("{}: zip entry '{}'", path(), e.name);
  auto data = std::make_shared<std::vector<std::byte>>(
      detail::zip_inflate(file_->bytes().subspan(e.data_offset, e.compressed_size), e.uncompressed_size, what));
  uint32_t crc = zip_crc32(*data);
  KILN_CHECK(crc == e.crc32,
             "{}: CRC-32 mismatch: the central directory says {:#010x}, the inflated data gives {:#010x}", what,
             e.crc32, crc);
  return ZipData{std::span<const std::byte>(*data), data};
}

void ZipArchive::check_crc(const ZipEntry& e) const {
  ZipData d = read(e);  // an inflated entry is checked here already
  uint32_t crc = zip_crc32(d.bytes);
  KILN_CHECK(crc == e.crc32,
             "{}: zip entry '{}': CRC-32 mismatch: the central directory says {:#010x}, the data gives {:#010x}",
             path(), e.name, e.crc32, crc);
}

}  // namespace kiln
