// ZipArchive against archives written by Python: zipfile (stored, deflated, forced ZIP64, with a
// comment), torch.save, torch.export.save, and a torch.save checkpoint re-zipped with deflate. The
// venv's Python lists every entry (name, CRC-32, method, SHA-256 of its bytes); kiln must agree on
// each. Skipped, saying why, without the venv (tests/python_ref.h).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/import/import_test_util.h"
#include "kiln/import/zip.h"
#include "kiln/support/sha256.h"
#include "python_ref.h"

namespace kiln {
namespace {

struct ManifestRow {
  std::string name;
  uint32_t crc;
  int method;
  std::string sha256;
};

std::vector<ManifestRow> read_manifest(const std::string& path) {
  std::ifstream in(path);
  std::vector<ManifestRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    ManifestRow r;
    std::string crc, method;
    std::getline(fields, r.name, '\t');
    std::getline(fields, crc, '\t');
    std::getline(fields, method, '\t');
    std::getline(fields, r.sha256, '\t');
    r.crc = static_cast<uint32_t>(std::stoul(crc));
    r.method = std::stoi(method);
    rows.push_back(r);
  }
  return rows;
}

// Python writing the archives into DIR and a manifest beside each (no single quotes: run_python).
constexpr const char* kWriter = R"PY(
import hashlib, zipfile, torch
d = "DIR"
with zipfile.ZipFile(d + "/py.zip", "w") as z:
    z.writestr("py/stored.txt", "hello " * 100, compress_type=zipfile.ZIP_STORED)
    z.writestr("py/deflated.bin", bytes(range(256)) * 50, compress_type=zipfile.ZIP_DEFLATED)
    z.writestr("py/empty", b"")
    with z.open("py/zip64.bin", "w", force_zip64=True) as f:
        f.write(b"forced zip64 " * 10)
    z.comment = b"an archive comment"
torch.manual_seed(0)
torch.save({"w": torch.randn(3, 4), "b": torch.arange(5), "h": torch.ones(7, dtype=torch.float16)}, d + "/ckpt.pt")
with zipfile.ZipFile(d + "/ckpt.pt") as src, zipfile.ZipFile(d + "/rezipped.zip", "w", zipfile.ZIP_DEFLATED) as dst:
    for i in src.infolist():
        dst.writestr(i.filename, src.read(i))
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)
    def forward(self, x):
        return torch.relu(self.lin(x))
ep = torch.export.export(M(), (torch.randn(2, 3),))
torch.export.save(ep, d + "/tiny_model.pt2")
for f in ["py.zip", "ckpt.pt", "rezipped.zip", "tiny_model.pt2"]:
    with zipfile.ZipFile(d + "/" + f) as z, open(d + "/" + f + ".manifest", "w") as out:
        for i in z.infolist():
            out.write("%s\t%d\t%d\t%s\n" % (i.filename, i.CRC, i.compress_type, hashlib.sha256(z.read(i)).hexdigest()))
print("ok")
)PY";

class ZipPython : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string python = testing::reference_python();
    if (python.empty()) return;
    dir_ = new testing::ScratchDir("zip_python");
    std::string code = kWriter;
    code.replace(code.find("DIR"), 3, dir_->path().string());
    auto run = testing::run_python(python, code);
    ASSERT_EQ(run.status, 0) << run.out;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // Checks every entry of `file` against Python's manifest; returns the archive.
  static ZipArchive check_against_manifest(const std::string& file) {
    ZipArchive z = ZipArchive::open(dir_->file(file));
    auto rows = read_manifest(dir_->file(file + ".manifest"));
    EXPECT_FALSE(rows.empty());
    EXPECT_EQ(z.entries().size(), rows.size());
    for (size_t i = 0; i < rows.size() && i < z.entries().size(); ++i) {
      const ZipEntry& e = z.entries()[i];
      EXPECT_EQ(e.name, rows[i].name);
      EXPECT_EQ(e.crc32, rows[i].crc) << e.name;
      EXPECT_EQ(e.method, rows[i].method) << e.name;
      EXPECT_EQ(sha256_hex(z.read(e).text()), rows[i].sha256) << e.name;
      EXPECT_NO_THROW(z.check_crc(e)) << e.name;
    }
    std::string first = rows.empty() ? "" : rows[0].name;
    EXPECT_EQ(z.root(), first.substr(0, first.find('/')));
    return z;
  }

  static testing::ScratchDir* dir_;
};
testing::ScratchDir* ZipPython::dir_ = nullptr;

#define KILN_REQUIRE_ZIP_FIXTURES() \
  KILN_REQUIRE_PYTHON(python_path); \
  ASSERT_NE(dir_, nullptr)

TEST_F(ZipPython, ZipfileStoredDeflatedZip64AndComment) {
  KILN_REQUIRE_ZIP_FIXTURES();
  ZipArchive z = check_against_manifest("py.zip");
  EXPECT_EQ(z.entry("py/deflated.bin").method, kZipDeflated);
  EXPECT_EQ(z.read("py/stored.txt").text().substr(0, 12), "hello hello ");
}

// PyTorch's own writer: every record stored, ZIP64, data on 64-byte boundaries.
void expect_pytorch_layout(const ZipArchive& z) {
  for (const ZipEntry& e : z.entries()) {
    EXPECT_EQ(e.method, kZipStored) << e.name;
    EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
  }
}

TEST_F(ZipPython, TorchSave) {
  KILN_REQUIRE_ZIP_FIXTURES();
  ZipArchive z = check_against_manifest("ckpt.pt");
  expect_pytorch_layout(z);
  EXPECT_EQ(z.root(), "ckpt");
  EXPECT_NE(z.find("ckpt/data.pkl"), nullptr);
  EXPECT_EQ(z.entry("ckpt/data/0").uncompressed_size, 3u * 4u * 4u);
}

TEST_F(ZipPython, TorchExportSave) {
  KILN_REQUIRE_ZIP_FIXTURES();
  ZipArchive z = check_against_manifest("tiny_model.pt2");
  expect_pytorch_layout(z);
  EXPECT_EQ(z.read(z.root() + "/archive_format").text(), "pt2");
  EXPECT_NE(z.find(z.root() + "/models/model.json"), nullptr);
}

TEST_F(ZipPython, TorchCheckpointRezippedWithDeflate) {
  KILN_REQUIRE_ZIP_FIXTURES();
  ZipArchive z = check_against_manifest("rezipped.zip");
  EXPECT_EQ(z.entry("ckpt/data/0").method, kZipDeflated);
}

}  // namespace
}  // namespace kiln
