#include "kiln/import/zip_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "kiln/import/zip.h"
#include "kiln/support/error.h"
#include "python_ref.h"

namespace kiln {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".zip")).string();
}

TEST(ZipWriter, RecordsReadBackAlignedAndZeroCopy) {
  std::string path = temp_path("kiln_zip_writer");
  std::string big(100000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  {
    ZipWriter w(path);
    w.add("p/a.txt", std::string_view("hello"));
    w.add("p/empty", std::string_view(""));
    w.add("p/big", std::string_view(big));
    EXPECT_THROW(w.add("p/a.txt", std::string_view("again")), Error);
    w.finish();
  }
  ZipArchive z = ZipArchive::open(path);
  EXPECT_EQ(z.root(), "p");
  ASSERT_EQ(z.entries().size(), 3u);
  EXPECT_EQ(z.read("p/a.txt").text(), "hello");
  EXPECT_EQ(z.read("p/empty").text(), "");
  EXPECT_EQ(z.read("p/big").text(), big);
  for (const auto& e : z.entries()) {
    EXPECT_EQ(e.method, kZipStored);
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
    z.check_crc(e);
  }
  // Python's zipfile reads it too, CRCs included.
  if (std::string python = testing::reference_python(); !python.empty()) {
    auto r = testing::run_python(python, "import zipfile\nz = zipfile.ZipFile(\"" + path +
                                             "\")\nassert z.testzip() is None\nprint(sorted(z.namelist()), "
                                             "len(z.read(\"p/big\")))");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "['p/a.txt', 'p/big', 'p/empty'] 100000\n");
  }
  std::filesystem::remove(path);
}

TEST(ZipWriter, AnUnfinishedArchiveLeavesNoFile) {
  std::string path = temp_path("kiln_zip_unfinished");
  {
    ZipWriter w(path);
    w.add("a", std::string_view("x"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_THROW(ZipWriter("/nonexistent-dir/x.zip"), Error);
}

}  // namespace
}  // namespace kiln
