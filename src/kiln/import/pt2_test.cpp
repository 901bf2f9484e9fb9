#include "kiln/import/pt2.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "kiln/import/zip.h"
#include "kiln/import/zip_builder_for_tests.h"

namespace kiln::import {
namespace {

// The committed MLP fixture (tests/models/fixtures, exported by PyTorch 2.13) as records, so a test
// can change one and write the archive again as PyTorch lays it out (stored, 64-byte aligned).
using Records = std::vector<std::pair<std::string, std::string>>;

Records fixture_records(const std::string& file = "mlp.pt2") {
  ZipArchive zip = ZipArchive::open(std::string(KILN_TEST_DATA) + "/../models/fixtures/" + file);
  Records r;
  for (const auto& e : zip.entries()) r.emplace_back(e.name, std::string(zip.read(e).text()));
  return r;
}

std::string& record(Records& r, const std::string& suffix) {
  for (auto& [name, data] : r) {
    if (name.ends_with(suffix)) return data;
  }
  throw std::runtime_error("no record " + suffix);
}

void replace(std::string& text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

std::vector<std::byte> archive(const Records& r) {
  std::vector<testing::ZipBuildEntry> entries;
  for (const auto& [name, data] : r) entries.push_back({name, data, false});
  return testing::build_zip(entries, {.zip64 = true, .align = 64}).bytes;
}

// The message of the kiln::Error loading `r` throws ("" when it loads).
std::string load_error(const Records& r) {
  try {
    load_pt2_bytes(archive(r), "m.pt2");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_HAS(records, text)                                         \
  do {                                                                          \
    std::string message = load_error(records);                                  \
    EXPECT_NE(message.find(text), std::string::npos) << "message: " << message; \
  } while (0)

TEST(Pt2, LoadsTheFixtureRebuiltRecordByRecord) {
  Records r = fixture_records();
  Pt2Archive a = load_pt2_bytes(archive(r), "m.pt2");
  EXPECT_EQ(a.format, "pt2");
  EXPECT_EQ(a.program.dialect, "ATEN");
  ASSERT_TRUE(a.state.count("fc1.weight"));
  EXPECT_EQ(a.state.at("fc1.weight").sizes().shape(), (Shape{32, 16}));
  EXPECT_EQ(a.state.at("fc1.weight").dtype(), DType::Float32);
}

TEST(Pt2, WeightsPointIntoTheMappedArchiveWithoutCopies) {
  std::string path = std::string(KILN_TEST_DATA) + "/../models/fixtures/mlp.pt2";
  Pt2Archive a = load_pt2(path);
  ZipArchive zip = ZipArchive::open(path);
  std::span<const std::byte> w = zip.stored_bytes(zip.entry(zip.root() + "/data/weights/weight_0"));
  // Another mapping of the same file: compare contents, and that the tensor is not a heap copy
  // (its storage is exactly the record's size).
  const Tensor& t = a.state.at("fc1.weight");
  EXPECT_EQ(t.storage()->nbytes(), w.size());
  EXPECT_EQ(std::memcmp(t.storage()->data(), w.data(), w.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.storage()->data()) % 64, 0u);
}

TEST(Pt2, AnArchiveThatIsNotAnExportIsNamed) {
  Records r = {{"x/readme.txt", "hello"}};
  EXPECT_ERROR_HAS(r, "m.pt2: not a torch.export archive");
}

TEST(Pt2, UnknownArchiveFormatAndByteOrderAreRefused) {
  Records r = fixture_records();
  record(r, "/archive_format") = "zip";
  EXPECT_ERROR_HAS(r, "archive_format is 'zip', expected 'pt2'");
  r = fixture_records();
  record(r, "/byteorder") = "big";
  EXPECT_ERROR_HAS(r, "byte order is 'big'");
}

TEST(Pt2, AMissingModelListsTheArchivesModels) {
  Records r = fixture_records();
  for (auto& [name, data] : r) {
    if (name.ends_with("models/model.json")) name.replace(name.find("model.json"), 10, "other.json");
  }
  EXPECT_ERROR_HAS(r,
                   "no model 'model' (mlp/models/model.json is missing; the archive's models: mlp/models/other.json)");
}

TEST(Pt2, UnknownSchemaMajorVersionIsRefused) {
  Records r = fixture_records();
  replace(record(r, "models/model.json"), "\"major\": 8", "\"major\": 9");
  EXPECT_ERROR_HAS(r, "schema version 9.");
}

TEST(Pt2, MalformedJsonNamesTheRecordAndPosition) {
  Records r = fixture_records();
  std::string& json = record(r, "models/model.json");
  json.resize(json.size() / 2);
  EXPECT_ERROR_HAS(r, "m.pt2:mlp/models/model.json: malformed JSON at line ");
}

TEST(Pt2, UnknownOperatorNamesTheNode) {
  Records r = fixture_records();
  replace(record(r, "models/model.json"), "torch.ops.aten.relu.default", "torch.ops.aten.relux.default");
  EXPECT_ERROR_HAS(r, "node 'relu': unknown operator aten::relux");
}

TEST(Pt2, AGraphOutsideItsDialectFailsTheVerifier) {
  Records r = fixture_records();
  replace(record(r, "models/model.json"), "torch.ops.aten.relu.default", "torch.ops.aten.relu_.default");
  EXPECT_ERROR_HAS(r, "the ATEN dialect's graph is not functional");
  EXPECT_ERROR_HAS(r, "aten::relu_, which mutates an argument");
}

// PyTorch's run_decompositions() leaves some functional ATen ops that are not Core ATen
// (linalg_vector_norm, var_mean.correction): the ATEN dialect loads with them.
TEST(Pt2, TheAtenDialectMayHoldNonCoreFunctionalOps) {
  Records r = fixture_records();
  replace(record(r, "models/model.json"), "torch.ops.aten.relu.default", "torch.ops.aten.relu6.default");
  EXPECT_EQ(load_error(r), "");
}

TEST(Pt2, AWeightShorterThanItsMetadataIsNamed) {
  Records r = fixture_records();
  record(r, "data/weights/weight_0").resize(32 * 16 * 4 - 4);
  EXPECT_ERROR_HAS(r, "tensor 'fc1.weight' (record mlp/data/weights/weight_0): the record holds 511 elements");
  r = fixture_records();
  record(r, "data/weights/weight_0").resize(32 * 16 * 4 - 1);
  EXPECT_ERROR_HAS(r, "2047 bytes are not a whole number of float32 elements");
}

TEST(Pt2, AMissingWeightRecordIsNamed) {
  Records r = fixture_records();
  std::erase_if(r, [](const auto& e) { return e.first.ends_with("data/weights/weight_0"); });
  EXPECT_ERROR_HAS(r, "mlp/data/weights/weight_0");
}

TEST(Pt2, SymbolicSizesInWeightMetadataAreRefused) {
  Records r = fixture_records();
  replace(record(r, "model_weights_config.json"), "\"sizes\": [{\"as_int\": 32}",
          "\"sizes\": [{\"as_expr\": {\"expr_str\": \"s0\", \"hint\": null}}");
  EXPECT_ERROR_HAS(r, "static shapes only");
}

}  // namespace
}  // namespace kiln::import
