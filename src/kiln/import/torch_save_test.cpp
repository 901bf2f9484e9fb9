// torch.save archives: real ones written by the venv's PyTorch (tests/tools/torch_save_fixtures.py,
// unpacked into a folder, every value, stride and offset compared), and hand-written pickles for what
// must be refused (missing or short records, out-of-bounds tensors, overflowing sizes).
#include "kiln/import/torch_save.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "kiln/import/pickle_writer_test_util.h"
#include "python_ref.h"

namespace kiln::torch_save {
namespace {

namespace fs = std::filesystem;
using testing::PickleWriter;
using Kind = PickleValue::Kind;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Storage records held in memory, 64-byte aligned as in a .pt2 archive (or deliberately not), handed
// out by wrapping: the test checks tensors point into these very bytes.
class Records {
 public:
  void add(const std::string& key, const std::string& bytes, size_t misalign = 0) {
    auto* p = static_cast<char*>(std::aligned_alloc(64, (bytes.size() + misalign + 63) / 64 * 64 + 64));
    std::memcpy(p + misalign, bytes.data(), bytes.size());
    buffers_[key] = {p, misalign, bytes.size()};
  }
  StorageSource source() {
    return [this](const StorageRequest& r) -> Ref<StorageImpl> {
      requests.push_back(std::string(r.key));
      auto it = buffers_.find(std::string(r.key));
      if (it == buffers_.end()) return {};
      return StorageImpl::wrap(it->second.base + it->second.offset, it->second.size, kCPU, {});
    };
  }
  const char* address(const std::string& key) const {
    const Buffer& b = buffers_.at(key);
    return b.base + b.offset;
  }
  ~Records() {
    for (auto& [k, b] : buffers_) std::free(b.base);
  }
  std::vector<std::string> requests;

 private:
  struct Buffer {
    char* base;
    size_t offset;
    size_t size;
  };
  std::map<std::string, Buffer> buffers_;
};

// A fixture folder: data.pkl, byteorder, data/<key>.
struct Unpacked {
  explicit Unpacked(const fs::path& dir) {
    pickle = read_file(dir / "data.pkl");
    if (fs::exists(dir / "byteorder")) byteorder = read_file(dir / "byteorder");
    for (const auto& f : fs::directory_iterator(dir / "data")) records.add(f.path().filename(), read_file(f.path()));
  }
  Archive archive() { return Archive{testing::as_bytes(pickle), records.source(), byteorder, "fixture"}; }
  std::string pickle;
  std::optional<std::string> byteorder;
  Records records;
};

// The leaves of a value by path, as the fixture script names them.
void leaves(const std::string& path, const PickleValue& v, std::map<std::string, const PickleValue*>& out) {
  bool container = v.is(Kind::Tuple) || v.is(Kind::List) || v.is(Kind::Dict);
  if (!container || (v.is(Kind::Dict) ? v.as_dict().empty() : v.as_sequence().empty())) {
    out[path] = &v;
  } else if (v.is(Kind::Dict)) {
    for (const PickleItem& item : v.as_dict()) {
      std::string key = item.key.is(Kind::String) ? item.key.as_string() : item.key.describe();
      leaves(path + "/" + key, item.value, out);
    }
  } else {
    for (size_t i = 0; i < v.as_sequence().size(); ++i) leaves(path + "/" + std::to_string(i), v.as_sequence()[i], out);
  }
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) parts.push_back(cur);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

std::string join(IntArrayRef xs) { return fmt::format("{}", fmt::join(xs.begin(), xs.end(), ",")); }

// The tensor's elements in row-major order, read through its strides and offset.
std::string gather(const Tensor& t) {
  size_t es = t.element_size();
  std::string out;
  const char* base = static_cast<const char*>(t.storage()->data()) + t.storage_offset() * static_cast<int64_t>(es);
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
    out.append(base + off * static_cast<int64_t>(es), es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

class TorchSaveFixtures : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string python = kiln::testing::reference_python();
    if (python.empty()) return;
    dir_ = fs::temp_directory_path() / ("kiln_torch_save_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    std::string script = fs::path(KILN_TEST_DATA).parent_path() / "tools" / "torch_save_fixtures.py";
    auto r = kiln::testing::run_python(python, "import runpy, sys; sys.argv = [\"x\", \"" + dir_.string() +
                                                   "\"]; runpy.run_path(\"" + script + "\", run_name=\"__main__\")");
    ok_ = r.status == 0;
    log_ = r.out;
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (kiln::testing::reference_python().empty()) GTEST_SKIP() << "no Python with PyTorch (tests/python_ref.h)";
    ASSERT_TRUE(ok_) << log_;
  }

  // Loads a case and compares every leaf with expected.txt.
  static void check_case(const std::string& name) {
    SCOPED_TRACE(name);
    fs::path dir = dir_ / name;
    Unpacked u(dir);
    PickleValue v = load(u.archive());
    std::map<std::string, const PickleValue*> got;
    if (v.is(Kind::Dict)) {
      for (const PickleItem& item : v.as_dict()) {
        std::string key = item.key.is(Kind::String) ? item.key.as_string() : item.key.describe();
        leaves(key, item.value, got);
      }
    } else {
      leaves("", v, got);
    }
    std::istringstream lines(read_file(dir / "expected.txt"));
    std::string line;
    size_t count = 0;
    std::map<std::string, const StorageImpl*> groups;
    while (std::getline(lines, line)) {
      auto f = split(line, '\t');
      ASSERT_GE(f.size(), 3u) << line;
      SCOPED_TRACE(f[0]);
      ++count;
      ASSERT_TRUE(got.count(f[0])) << "no leaf " << f[0];
      const PickleValue& leaf = *got[f[0]];
      if (f[1] == "value") {
        EXPECT_EQ(leaf.describe(100), f[2]);
        continue;
      }
      ASSERT_EQ(f.size(), 8u) << line;
      ASSERT_TRUE(leaf.is(Kind::Tensor)) << leaf.describe();
      const Tensor& t = leaf.as_tensor();
      EXPECT_EQ(dtype_name(t.dtype()), f[2]);
      EXPECT_EQ(join(t.sizes()), f[3]);
      EXPECT_EQ(join(t.strides()), f[4]);
      EXPECT_EQ(std::to_string(t.storage_offset()), f[5]);
      EXPECT_TRUE(gather(t) == read_file(dir / f[7])) << "values differ";
      // Tensors of one storage group share one storage, and only they.
      auto [it, inserted] = groups.try_emplace(f[6], t.storage().get());
      EXPECT_EQ(it->second, t.storage().get()) << "storage group " << f[6];
      for (const auto& [g, s] : groups) {
        if (g != f[6]) {
          EXPECT_NE(s, t.storage().get()) << "groups " << g << " and " << f[6];
        }
      }
      // No copy: an aligned little-endian record is the tensor's memory.
      if (t.storage()->nbytes() > 0) {
        bool in_a_record = false;
        for (const auto& key : u.records.requests) in_a_record |= u.records.address(key) == t.storage()->data();
        EXPECT_TRUE(in_a_record) << "the storage was copied";
      }
    }
    EXPECT_EQ(count, got.size()) << "leaves kiln found that PyTorch did not write";
  }

  static inline fs::path dir_;
  static inline bool ok_ = false;
  static inline std::string log_;
};

TEST_F(TorchSaveFixtures, EveryDTypeAsParametersAndBuffers) { check_case("dtypes"); }
TEST_F(TorchSaveFixtures, ViewsSharingAStorageZeroDimAndEmpty) { check_case("views"); }
TEST_F(TorchSaveFixtures, NestedContainersOfExampleInputs) { check_case("nested"); }
TEST_F(TorchSaveFixtures, ExportedProgramStateDictOfSerializedArtifact) { check_case("ep_state_dict"); }
TEST_F(TorchSaveFixtures, ExportedProgramConstantsOfSerializedArtifact) { check_case("ep_constants"); }
TEST_F(TorchSaveFixtures, ExportedProgramExampleInputsOfSerializedArtifact) { check_case("ep_example_inputs"); }
TEST_F(TorchSaveFixtures, ABareTensor) { check_case("bare_tensor"); }

TEST_F(TorchSaveFixtures, StateDictInOrder) {
  Unpacked u(dir_ / "dtypes");
  auto sd = load_state_dict(u.archive());
  ASSERT_EQ(sd.size(), 24u);
  EXPECT_EQ(sd[0].first, "param_bool");
  EXPECT_EQ(sd[1].first, "buffer_bool");
  EXPECT_EQ(sd[23].first, "buffer_complex128");
  EXPECT_EQ(sd[23].second.dtype(), DType::ComplexDouble);

  Unpacked nested(dir_ / "nested");
  EXPECT_THROW(load_state_dict(nested.archive()), Error);
}

TEST_F(TorchSaveFixtures, RefusesWhatKilnCannotRepresent) {
  for (const char* name : {"uint16", "conj", "module"}) {
    SCOPED_TRACE(name);
    Unpacked u(dir_ / name);
    std::string want = read_file(dir_ / name / "error.txt");
    try {
      load(u.archive());
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_PRED_FORMAT2(::testing::IsSubstring, want, e.what());
    }
  }
}

// Every prefix, and random byte changes, of a real torch.save pickle (views sharing storages) load or
// are kiln::Errors, never a crash (this test runs under the sanitizers too).
TEST_F(TorchSaveFixtures, TruncatedAndMutatedPicklesNeverCrash) {
  Unpacked u(dir_ / "views");
  const std::string good = u.pickle;
  ASSERT_NO_THROW(load(u.archive()));
  for (size_t n = 0; n < good.size(); ++n) {
    Archive a = u.archive();
    a.pickle = testing::as_bytes(std::string_view(good).substr(0, n));
    EXPECT_THROW(load(a), Error) << n;
  }
  std::mt19937 rng(99);
  int errors = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string bad = good;
    int changes = 1 + static_cast<int>(rng() % 3);
    for (int c = 0; c < changes; ++c) bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    Archive a = u.archive();
    a.pickle = testing::as_bytes(bad);
    try {
      load(a);
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);
}

// --- hand-written archives ---

std::string floats(std::initializer_list<float> xs) {
  std::string s;
  for (float x : xs) s.append(reinterpret_cast<const char*>(&x), sizeof x);
  return s;
}

std::string error_of(const PickleWriter& w, Records& r, std::optional<std::string> byteorder = std::nullopt) {
  try {
    load(Archive{w.span(), r.source(), std::move(byteorder), "a.pt"});
    return "no error";
  } catch (const Error& e) {
    return e.message();
  }
}

#define EXPECT_ERROR(w, r, text) EXPECT_PRED_FORMAT2(::testing::IsSubstring, text, error_of(w, r))

TEST(TorchSave, HandWrittenTensor) {
  PickleWriter w;
  w.proto(2).tensor_v2("FloatStorage", "0", 6, 1, {2, 2}, {3, 1}).stop();
  Records r;
  r.add("0", floats({0, 1, 2, 3, 4, 5}));
  PickleValue v = load(Archive{w.span(), r.source(), std::nullopt, "a.pt"});
  const Tensor& t = v.as_tensor();
  EXPECT_EQ(t.describe(), "float32[2, 2]");
  EXPECT_EQ(gather(t), floats({1, 2, 4, 5}));
  EXPECT_EQ(t.storage()->data(), r.address("0"));
}

TEST(TorchSave, MisalignedRecordIsCopiedAndBigEndianSwapped) {
  PickleWriter w;
  w.proto(2).tensor_v2("FloatStorage", "0", 3, 0, {3}, {1}).stop();
  Records r;
  r.add("0", floats({1.5f, -2, 3}), 1);
  PickleValue v = load(Archive{w.span(), r.source(), std::string("little"), "a.pt"});
  EXPECT_NE(v.as_tensor().storage()->data(), r.address("0"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.as_tensor().storage()->data()) % 4, 0u);
  EXPECT_EQ(gather(v.as_tensor()), floats({1.5f, -2, 3}));

  std::string be = floats({1.5f, -2, 3});
  for (size_t i = 0; i < be.size(); i += 4)
    std::reverse(be.begin() + static_cast<ptrdiff_t>(i), be.begin() + static_cast<ptrdiff_t>(i) + 4);
  Records rb;
  rb.add("0", be);
  PickleValue b = load(Archive{w.span(), rb.source(), std::string("big"), "a.pt"});
  EXPECT_EQ(gather(b.as_tensor()), floats({1.5f, -2, 3}));
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "a.pt: record 'byteorder' holds 'middle', expected 'little' or 'big'",
                      error_of(w, rb, std::string("middle")));
}

TEST(TorchSave, BadStoragesAreErrors) {
  Records r;
  r.add("0", floats({0, 1, 2, 3, 4, 5}));
  r.add("short", floats({0, 1, 2, 3, 4}));
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "7", 6, 0, {6}, {1}).stop();
    EXPECT_ERROR(
        w, r,
        "a.pt: data.pkl: byte 86: BINPERSID: storage record 'data/7' is missing from a.pt (the pickle declares 6 float32)");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "short", 6, 0, {6}, {1}).stop();
    EXPECT_ERROR(w, r,
                 "BINPERSID: storage record 'data/short' holds 20 bytes; the pickle declares 6 float32 (24 bytes)");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, 1, {2, 3}, {3, 1}).stop();
    EXPECT_ERROR(w, r,
                 "REDUCE: _rebuild_tensor_v2: float32 tensor of size 2, 3 and stride 3, 1 at offset 1 over storage "
                 "'data/0': needs 7 elements of storage (offset 1 + extent 6), the record holds 6 (24 bytes)");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, 0, {2, -3}, {3, 1}).stop();
    EXPECT_ERROR(w, r, "size 2, -3 and stride 3, 1 at offset 0 over storage 'data/0': negative size or stride");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, -1, {2}, {1}).stop();
    EXPECT_ERROR(w, r, "negative storage offset");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, 0, {int64_t{1} << 62, 4}, {1, 1}).stop();
    EXPECT_ERROR(w, r, "the number of elements or the extent overflows int64");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, 0, {3, 3}, {int64_t{1} << 62, int64_t{1} << 62}).stop();
    EXPECT_ERROR(w, r, "the number of elements or the extent overflows int64");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", 6, INT64_MAX, {1}, {1}).stop();
    EXPECT_ERROR(w, r, "the extent overflows int64");
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("FloatStorage", "0", int64_t{1} << 62, 0, {1}, {1}).stop();
    EXPECT_ERROR(w, r, "storage 'data/0' declares 4611686018427387904 float32, more bytes than fit in int64");
  }
  {
    PickleWriter w;  // the same key declared with two types
    w.proto(2).mark().tensor_v2("FloatStorage", "0", 6, 0, {6}, {1}).tensor_v2("IntStorage", "0", 6, 0, {6}, {1});
    w.tuple().stop();
    EXPECT_ERROR(w, r, "storage 'data/0' is declared twice, as 6 float32 and as 6 int32");
  }
  {
    PickleWriter w;  // shared: one storage, two tensors
    w.proto(2).mark().tensor_v2("FloatStorage", "0", 6, 0, {6}, {1}).tensor_v2("FloatStorage", "0", 6, 2, {2}, {2});
    w.tuple().stop();
    PickleValue v = load(Archive{w.span(), r.source(), std::nullopt, "a.pt"});
    EXPECT_EQ(v.as_tuple()[0].as_tensor().storage().get(), v.as_tuple()[1].as_tensor().storage().get());
    EXPECT_EQ(gather(v.as_tuple()[1].as_tensor()), floats({2, 4}));
  }
  {
    PickleWriter w;
    w.proto(2).tensor_v2("QInt8Storage", "0", 6, 0, {6}, {1}).stop();
    EXPECT_ERROR(w, r, "GLOBAL: global 'torch.QInt8Storage' is not allowed");
  }
  {
    PickleWriter w;
    w.proto(2).mark().str("storage").str("not a type").str("0").str("cpu").integer(6).tuple().op('Q').stop();
    EXPECT_ERROR(w, r, "BINPERSID: storage type 'not a type' is not a global");
  }
  {
    PickleWriter w;
    w.proto(2).str("weights").op('Q').stop();
    EXPECT_ERROR(w, r, "BINPERSID: persistent id 'weights' is not ('storage', type, key, location, numel)");
  }
}

TEST(TorchSave, BoolStorageHoldsOnlyZeroAndOne) {
  PickleWriter w;
  w.proto(2).tensor_v2("BoolStorage", "0", 3, 0, {3}, {1}).stop();
  Records r;
  r.add("0", std::string("\x01\x00\x02", 3));
  EXPECT_ERROR(w, r, "storage 'data/0' of bool holds the byte 2 at element 2 (not 0 or 1)");
}

TEST(TorchSave, UntypedStorageWithDTypeArgument) {
  // _rebuild_tensor_v3 over an UntypedStorage, as 2.13 writes the dtypes without a typed storage.
  PickleWriter w;
  w.proto(2).global("torch._utils", "_rebuild_tensor_v3").mark();
  w.storage("torch.storage", "UntypedStorage", "0", 8).integer(1).ints({1}).ints({1}).boolean(false);
  w.global("collections", "OrderedDict").op(')').op('R').global("torch", "float32").tuple().op('R').stop();
  Records r;
  r.add("0", floats({7, 9}));
  PickleValue v = load(Archive{w.span(), r.source(), std::nullopt, "a.pt"});
  EXPECT_EQ(gather(v.as_tensor()), floats({9}));

  PickleWriter v2;  // v2 over an untyped storage has no dtype
  v2.proto(2).global("torch._utils", "_rebuild_tensor_v2").mark();
  v2.storage("torch.storage", "UntypedStorage", "0", 8).integer(0).ints({2}).ints({1}).boolean(false);
  v2.global("collections", "OrderedDict").op(')').op('R').tuple().op('R').stop();
  EXPECT_ERROR(v2, r, "_rebuild_tensor_v2: storage 'data/0' is untyped, so its dtype is unknown");
}

TEST(TorchSave, StateDictEntriesMustBeTensors) {
  PickleWriter w;
  w.proto(2).op('}').mark().str("w").tensor_v2("FloatStorage", "0", 2, 0, {2}, {1}).str("n").integer(3).op('u').stop();
  Records r;
  r.add("0", floats({1, 2}));
  try {
    load_state_dict(Archive{w.span(), r.source(), std::nullopt, "sd.pt"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "sd.pt: state dict entry 'n' is not a tensor but int 3");
  }
}

}  // namespace
}  // namespace kiln::torch_save
