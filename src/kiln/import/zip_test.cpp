// ZipArchive on archives written by hand (zip_builder_for_tests.h): every layout PyTorch and
// Python write, and each kind of damage, which must end in a kiln::Error that names the file, the
// entry and the numbers, never in a crash or a read outside the bytes.
#include "kiln/import/zip.h"

#include <gtest/gtest.h>

#include "kiln/import/import_test_util.h"
#include "kiln/import/zip_builder_for_tests.h"

namespace kiln {
namespace {

using testing::build_zip;
using testing::BuiltZip;
using testing::set;
using testing::ZipBuildEntry;
using testing::ZipBuildOptions;

std::string as_string(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

const std::vector<ZipBuildEntry> kEntries = {
    {"model/version", "6\n"},
    {"model/data/0", std::string(1000, 'x') + "tail"},
    {"model/empty", ""},
};

void expect_entries(const ZipArchive& z, const std::vector<ZipBuildEntry>& want) {
  ASSERT_EQ(z.entries().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const ZipEntry& e = z.entries()[i];
    EXPECT_EQ(e.name, want[i].name);
    EXPECT_EQ(e.uncompressed_size, want[i].data.size());
    EXPECT_EQ(z.find(want[i].name), &e);
    EXPECT_EQ(as_string(z.read(e).bytes), want[i].data) << e.name;
    EXPECT_NO_THROW(z.check_crc(e));
  }
}

TEST(Zip, StoredEntriesAreViewsIntoTheFile) {
  auto z = ZipArchive::from_bytes(build_zip(kEntries).bytes);
  expect_entries(z, kEntries);
  EXPECT_EQ(z.root(), "model");
  EXPECT_EQ(z.path(), "<memory>");
  const ZipEntry& e = z.entry("model/data/0");
  EXPECT_EQ(e.method, kZipStored);
  auto view = z.stored_bytes(e);
  EXPECT_EQ(view.data(), z.file()->bytes().data() + e.data_offset);
  EXPECT_EQ(z.find("model/missing"), nullptr);
  EXPECT_KILN_ERROR(z.entry("model/missing"), "<memory>", "no entry 'model/missing'");
}

TEST(Zip, Zip64WithPyTorchAlignmentPadding) {
  BuiltZip built = build_zip(kEntries, {.zip64 = true, .align = 64});
  auto z = ZipArchive::from_bytes(built.bytes);
  expect_entries(z, kEntries);
  for (size_t i = 0; i < kEntries.size(); ++i) {
    EXPECT_EQ(z.entries()[i].data_offset % 64, 0u);
    EXPECT_EQ(z.entries()[i].data_offset, built.data_offsets[i]);
    EXPECT_EQ(z.entries()[i].local_header_offset, built.local_offsets[i]);
  }
}

TEST(Zip, CommentAndUnknownExtraFields) {
  auto z = ZipArchive::from_bytes(
      build_zip(kEntries, {.zip64 = true, .comment = std::string(300, 'c'), .central_extra_field = "unknown"}).bytes);
  expect_entries(z, kEntries);
}

TEST(Zip, RootIsEmptyWithoutAFolderAndForNoEntries) {
  EXPECT_EQ(ZipArchive::from_bytes(build_zip({{"flat", "1"}, {"a/b", "2"}}).bytes).root(), "");
  auto empty = ZipArchive::from_bytes(build_zip({}).bytes);
  EXPECT_TRUE(empty.entries().empty());
  EXPECT_EQ(empty.root(), "");
}

TEST(Zip, DeflatedEntriesAreInflatedAndChecked) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "line " + std::to_string(i) + "\n";
  std::vector<ZipBuildEntry> entries = {{"a/text", text, true}, {"a/none", "", true}};
  BuiltZip built = build_zip(entries);
  auto z = ZipArchive::from_bytes(built.bytes);
  expect_entries(z, entries);
  EXPECT_EQ(z.entries()[0].method, kZipDeflated);
  EXPECT_LT(z.entries()[0].compressed_size, text.size());
  EXPECT_KILN_ERROR(z.stored_bytes(z.entries()[0]), "'a/text'", "compressed (method 8, deflate)");

  // A wrong CRC in the directory is caught on every read of an inflated entry.
  set(built.bytes, built.central_offsets[0] + 16, 0x12345678, 4);
  auto bad = ZipArchive::from_bytes(built.bytes);
  EXPECT_KILN_ERROR(bad.read(bad.entries()[0]), "'a/text'", "CRC-32 mismatch", "0x12345678");
}

TEST(Zip, CorruptDeflateStreams) {
  std::string text(5000, 'q');
  BuiltZip built = build_zip({{"d", text, true}});
  // Declared uncompressed size too small / too large for what the stream holds.
  for (uint64_t declared : {uint64_t{4999}, uint64_t{5001}}) {
    auto b = built.bytes;
    set(b, built.central_offsets[0] + 24, declared, 4);
    auto z = ZipArchive::from_bytes(b);
    EXPECT_KILN_ERROR(z.read(z.entries()[0]), "<memory>", "'d'", std::to_string(declared));
  }
  // Garbage in the stream (block type 3 is invalid).
  auto b = built.bytes;
  b[built.data_offsets[0]] = std::byte{0xff};
  auto z = ZipArchive::from_bytes(b);
  EXPECT_KILN_ERROR(z.read(z.entries()[0]), "'d'", "deflate");
}

TEST(Zip, StoredCrcIsCheckedOnRequest) {
  BuiltZip built = build_zip(kEntries);
  built.bytes[built.data_offsets[1] + 3] = std::byte{'y'};
  auto z = ZipArchive::from_bytes(built.bytes);
  EXPECT_NO_THROW(z.read(z.entries()[1]));
  EXPECT_KILN_ERROR(z.check_crc(z.entries()[1]), "<memory>", "'model/data/0'", "CRC-32 mismatch");
}

TEST(Zip, OtherMethodsAndEncryptionAreRefused) {
  BuiltZip built = build_zip(kEntries);
  set(built.bytes, built.central_offsets[1] + 10, 12, 2);  // bzip2
  set(built.bytes, built.central_offsets[2] + 8, 1, 2);    // encrypted
  auto z = ZipArchive::from_bytes(built.bytes);
  EXPECT_EQ(z.entries()[1].method, 12);
  EXPECT_KILN_ERROR(z.read(z.entries()[1]), "'model/data/0'", "method 12 (bzip2)");
  EXPECT_KILN_ERROR(z.read(z.entries()[2]), "'model/empty'", "encrypted");
}

TEST(Zip, NotAZip) {
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(testing::to_bytes("PK"), "tiny.zip"), "tiny.zip", "2 bytes");
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(testing::to_bytes(std::string(100, 'a')), "text.zip"), "text.zip",
                    "no end-of-central-directory record");
}

TEST(Zip, EndRecordPointingOutsideTheFile) {
  BuiltZip built = build_zip(kEntries);
  auto b = built.bytes;
  set(b, built.eocd_offset + 16, 0x7fffff00, 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "<memory>", "central directory", std::to_string(0x7fffff00),
                    "runs past");
  b = built.bytes;
  set(b, built.eocd_offset + 10, 500, 2);
  set(b, built.eocd_offset + 8, 500, 2);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "claims 500 entries");
  b = built.bytes;
  set(b, built.eocd_offset + 4, 1, 2);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "multi-disk");
}

TEST(Zip, Zip64RecordsOutOfRangeOrOverflowing) {
  BuiltZip built = build_zip(kEntries, {.zip64 = true, .align = 64});
  auto b = built.bytes;
  set(b, built.zip64_locator_offset + 8, built.zip64_locator_offset - 10, 8);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "ZIP64 end-of-central-directory record", "runs past its locator");
  b = built.bytes;
  set(b, built.zip64_eocd_offset + 48, ~uint64_t{0} - 8, 8);  // directory offset + size overflows
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "central directory", std::to_string(~uint64_t{0} - 8), "runs past");
  b = built.bytes;
  set(b, built.zip64_eocd_offset, 0x12345678, 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "no ZIP64 end-of-central-directory record");
  // An entry's 64-bit compressed size that overflows data_offset + size.
  b = built.bytes;
  set(b, built.central_offsets[1] + 46 + kEntries[1].name.size() + 12, ~uint64_t{0} - 100, 8);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/data/0'", "data at offset", "runs past the end of the file");
  // A ZIP64 extra field shorter than the saturated fields need.
  b = built.bytes;
  set(b, built.central_offsets[0] + 46 + kEntries[0].name.size() + 2, 8, 2);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/version'", "ZIP64 extra field has 8 bytes");
}

TEST(Zip, CentralEntryRunningPastTheDirectory) {
  BuiltZip built = build_zip(kEntries, {.central_extra_field = "xyz"});
  size_t last = built.central_offsets.back();
  auto b = built.bytes;
  set(b, last + 28, 0xffff, 2);  // name length
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "<memory>", "central directory entry 2", "65535-byte name",
                    "past the directory's end at offset");
  b = built.bytes;
  set(b, last + 30, 0x1000, 2);  // extra field length
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "4096-byte extra field");
  b = built.bytes;
  // The unknown extra field's own length says more than the extra data holds.
  set(b, last + 46 + kEntries[2].name.size() + 2, 200, 2);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/empty'", "extra field 0xcafe (200 bytes");
  b = built.bytes;
  set(b, last, 0x02014b51, 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "no central directory entry 2");
}

TEST(Zip, LocalHeaderProblems) {
  BuiltZip built = build_zip(kEntries);
  auto b = built.bytes;
  set(b, built.central_offsets[1] + 42, b.size() - 10, 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/data/0'",
                    "local header at offset " + std::to_string(b.size() - 10), "runs past the end");
  b = built.bytes;
  set(b, built.central_offsets[1] + 42, built.local_offsets[0], 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/data/0'", "names 'model/version'");
  b = built.bytes;
  set(b, built.local_offsets[2], 0, 4);
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/empty'", "no local header");
  b = built.bytes;
  set(b, built.local_offsets[2] + 28, 0xfff0, 2);  // local extra field past the end
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/empty'", "65520-byte extra field", "runs past the end");
  b = built.bytes;
  set(b, built.central_offsets[1] + 20, 500, 4);  // stored sizes disagree
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(b), "'model/data/0'", "sizes differ",
                    "500 bytes in the file, 1004 uncompressed");
}

TEST(Zip, DuplicateNames) {
  EXPECT_KILN_ERROR(ZipArchive::from_bytes(build_zip({{"a/x", "1"}, {"a/y", "2"}, {"a/x", "3"}}).bytes, "dup.zip"),
                    "dup.zip", "'a/x' appears twice (entries 0 and 2)");
}

TEST(Zip, DeflatedEntryDeclaringAnAbsurdSize) {
  BuiltZip built = build_zip({{"big", "small", true}}, {.zip64 = true});
  set(built.bytes, built.central_offsets[0] + 46 + 3 + 4, uint64_t{1} << 40, 8);
  auto z = ZipArchive::from_bytes(built.bytes);
  EXPECT_KILN_ERROR(z.read(z.entries()[0]), "'big'", "too large", std::to_string(uint64_t{1} << 40));
}

// Every prefix of an archive, and every single-byte change of it, parses and reads to the end or
// throws kiln::Error: nothing crashes or reads out of bounds (the sanitizer build checks the latter).
TEST(Zip, TruncationsAndByteFlipsNeverCrash) {
  std::vector<ZipBuildEntry> entries = {{"r/a", "alpha", false}, {"r/b", std::string(200, 'b'), true}};
  for (const ZipBuildOptions& opt : {ZipBuildOptions{}, ZipBuildOptions{.zip64 = true, .align = 64}}) {
    BuiltZip built = build_zip(entries, opt);
    auto read_all = [](std::vector<std::byte> bytes) {
      auto z = ZipArchive::from_bytes(std::move(bytes));
      for (const auto& e : z.entries()) z.check_crc(e);
    };
    for (size_t n = 0; n < built.bytes.size(); ++n) {
      EXPECT_THROW(read_all({built.bytes.begin(), built.bytes.begin() + static_cast<ptrdiff_t>(n)}), Error) << n;
    }
    for (size_t i = 0; i < built.bytes.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        auto b = built.bytes;
        b[i] ^= std::byte{flip};
        try {
          read_all(std::move(b));
        } catch (const Error&) {
        }
      }
    }
  }
}

TEST(Zip, OpensFilesByMappingAndKeepsTheMappingAlive) {
  testing::ScratchDir dir("zip_open");
  std::string path = dir.file("archive.zip");
  testing::write_file_bytes(path, build_zip(kEntries, {.zip64 = true, .align = 64}).bytes);
  ZipData data;
  {
    auto z = ZipArchive::open(path);
    EXPECT_EQ(z.path(), path);
    expect_entries(z, kEntries);
    data = z.read("model/version");
  }
  EXPECT_EQ(data.text(), "6\n");  // the archive is gone; `owner` keeps the mapping
  EXPECT_KILN_ERROR(ZipArchive::open(dir.file("missing.zip")), dir.file("missing.zip"), "cannot open");
  testing::write_file_bytes(dir.file("empty.zip"), {});
  EXPECT_KILN_ERROR(ZipArchive::open(dir.file("empty.zip")), dir.file("empty.zip"), "0 bytes");
  EXPECT_KILN_ERROR(ZipArchive::open(dir.path().string()), "not a regular file");
}

TEST(Zip, Crc32KnownValue) {
  // The check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(zip_crc32(testing::to_bytes("123456789")), 0xcbf43926u);
  EXPECT_EQ(zip_crc32({}), 0u);
}

}  // namespace
}  // namespace kiln
