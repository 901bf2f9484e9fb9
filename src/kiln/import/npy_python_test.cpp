// .npy against the venv's numpy, both ways: numpy writes arrays (every dtype, big-endian,
// Fortran order, 0-d, empty, bfloat16 as raw 2-byte void and as uint16) with their C-order bytes
// beside them and kiln reads them; kiln writes tensors (contiguous, non-contiguous, 0-d, empty) and
// numpy loads them and compares. Skipped, saying why, without the venv (tests/python_ref.h).
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/import/import_test_util.h"
#include "kiln/import/npy.h"
#include "python_ref.h"

namespace kiln {
namespace {

// The C-order data bytes of `t`, as npy_bytes lays them after the header.
std::vector<std::byte> c_order_data(const TensorBase& t) {
  std::vector<std::byte> all = npy_bytes(t);
  size_t header = format_npy_header(t.dtype(), t.sizes()).size();
  return {all.begin() + static_cast<ptrdiff_t>(header), all.end()};
}

// numpy writes CASE.npy and CASE.raw (little-endian C-order bytes) for each case; no single quotes.
constexpr const char* kNumpyWriter = R"PY(
import numpy as np, torch
d = "DIR"
rng = np.random.default_rng(7)
def save(name, a):
    np.save(d + "/" + name + ".npy", a)
    le = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    open(d + "/" + name + ".raw", "wb").write(np.ascontiguousarray(a, dtype=le).tobytes())
save("bool", rng.integers(0, 2, (3, 4)).astype(np.bool_))
save("uint8", rng.integers(0, 256, (5,), dtype=np.uint8))
save("int8", rng.integers(-128, 128, (2, 3), dtype=np.int8))
save("int16", rng.integers(-30000, 30000, (4, 1, 3), dtype=np.int16))
save("int32", rng.integers(-2**31, 2**31, (6,), dtype=np.int32))
save("int64", rng.integers(-2**62, 2**62, (2, 2), dtype=np.int64))
save("float16", rng.standard_normal((3, 3)).astype(np.float16))
save("float32", rng.standard_normal((2, 5)).astype(np.float32))
save("float64", np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 1.5]))
save("complex64", (rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))).astype(np.complex64))
save("complex128", rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2)))
save("be_int32", rng.integers(-1000, 1000, (2, 3)).astype(">i4"))
save("be_float64", rng.standard_normal((4,)).astype(">f8"))
save("be_complex128", (rng.standard_normal((2,)) + 1j).astype(">c16"))
save("be_float16", rng.standard_normal((3,)).astype(">f2"))
save("fortran_f32", np.asfortranarray(rng.standard_normal((3, 4, 2)).astype(np.float32)))
save("scalar_i64", np.array(42, dtype=np.int64))
save("empty_f32", np.zeros((0, 3), dtype=np.float32))
bf = torch.tensor([1.5, -2.0, 0.1, 3e38, -0.0], dtype=torch.bfloat16)
save("bf16_void", bf.view(torch.int16).numpy().view("V2"))
save("bf16_uint16", bf.view(torch.uint16).numpy())
print("ok")
)PY";

TEST(NpyPython, KilnReadsWhatNumpyWrites) {
  KILN_REQUIRE_PYTHON(python);
  testing::ScratchDir dir("npy_from_numpy");
  std::string code = kNumpyWriter;
  code.replace(code.find("DIR"), 3, dir.path().string());
  auto run = testing::run_python(python, code);
  ASSERT_EQ(run.status, 0) << run.out;

  struct Case {
    const char* name;
    DType dtype;
    Shape shape;
  };
  const Case cases[] = {
      {"bool", DType::Bool, {3, 4}},
      {"uint8", DType::UInt8, {5}},
      {"int8", DType::Int8, {2, 3}},
      {"int16", DType::Int16, {4, 1, 3}},
      {"int32", DType::Int32, {6}},
      {"int64", DType::Int64, {2, 2}},
      {"float16", DType::Float16, {3, 3}},
      {"float32", DType::Float32, {2, 5}},
      {"float64", DType::Float64, {7}},
      {"complex64", DType::ComplexFloat, {3}},
      {"complex128", DType::ComplexDouble, {2, 2}},
      {"be_int32", DType::Int32, {2, 3}},
      {"be_float64", DType::Float64, {4}},
      {"be_complex128", DType::ComplexDouble, {2}},
      {"be_float16", DType::Float16, {3}},
      {"fortran_f32", DType::Float32, {3, 4, 2}},
      {"scalar_i64", DType::Int64, {}},
      {"empty_f32", DType::Float32, {0, 3}},
      {"bf16_void", DType::BFloat16, {5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor t = read_npy(dir.file(std::string(c.name) + ".npy"));
    EXPECT_EQ(t.dtype(), c.dtype);
    EXPECT_EQ(Shape(t.sizes().begin(), t.sizes().end()), c.shape);
    EXPECT_EQ(c_order_data(t), testing::read_file_bytes(dir.file(std::string(c.name) + ".raw")));
  }
  EXPECT_FALSE(read_npy(dir.file("fortran_f32.npy")).is_contiguous());
  EXPECT_EQ(read_npy(dir.file("scalar_i64.npy")).data_ptr<int64_t>()[0], 42);
  Tensor bf = read_npy(dir.file("bf16_uint16.npy"), {.uint16_as_bfloat16 = true});
  ASSERT_EQ(bf.dtype(), DType::BFloat16);
  EXPECT_EQ(static_cast<float>(bf.data_ptr<BFloat16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(bf.data_ptr<BFloat16>()[1]), -2.0f);
  EXPECT_EQ(c_order_data(bf), c_order_data(read_npy(dir.file("bf16_void.npy"))));
}

// numpy loads each file kiln wrote and compares dtype, shape and bytes with the .raw beside it, and
// (independently of kiln's writer) each transposed view and 0-d view with the contiguous original;
// prints one line per mismatch.
constexpr const char* kNumpyChecker = R"PY(
import glob, os, numpy as np, torch
d = "DIR"
bad = []
for path in sorted(glob.glob(d + "/*.meta")):
    name = os.path.basename(path)[:-5]
    want_descr, want_shape = open(d + "/" + name + ".meta").read().split(";")
    a = np.load(d + "/" + name + ".npy", allow_pickle=False)
    if np.lib.format.dtype_to_descr(a.dtype) not in (want_descr, want_descr.replace("<V", "|V")):
        bad.append(name + ": descr " + str(a.dtype.str))
    if list(a.shape) != [int(x) for x in want_shape.split(",") if x]:
        bad.append(name + ": shape " + str(a.shape))
    if np.ascontiguousarray(a).tobytes() != open(d + "/" + name + ".raw", "rb").read():
        bad.append(name + ": bytes differ")
for path in sorted(glob.glob(d + "/*_transposed.npy")):
    base = path[: -len("_transposed.npy")]
    a = np.load(base + ".npy")
    if np.ascontiguousarray(np.load(path)).tobytes() != np.ascontiguousarray(a.T).tobytes():
        bad.append(path + ": not the transpose")
    if np.load(base + "_scalar.npy").tobytes() != a.reshape(-1)[5:6].tobytes():
        bad.append(base + "_scalar: not element 5")
a = np.load(d + "/bf16_values.npy")
got = torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
want = torch.tensor([1.5, -2.0, 0.1, 3e38], dtype=torch.bfloat16)
if not torch.equal(got, want):
    bad.append("bf16_values: " + str(got))
if np.load(d + "/f32_values.npy").tolist() != [[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]]:
    bad.append("f32_values")
print("\n".join(bad) if bad else "ok")
)PY";

TEST(NpyPython, NumpyReadsWhatKilnWrites) {
  KILN_REQUIRE_PYTHON(python);
  testing::ScratchDir dir("npy_to_numpy");
  auto save = [&](const std::string& name, const TensorBase& t) {
    write_npy(dir.file(name + ".npy"), t);
    std::vector<std::byte> data = c_order_data(t);
    testing::write_file_bytes(dir.file(name + ".raw"), data);
    std::string meta = std::string(npy_descr(t.dtype())) + ";" + fmt::format("{}", fmt::join(t.sizes(), ","));
    testing::write_file_bytes(dir.file(name + ".meta"), testing::to_bytes(meta));
  };
  for (DType dtype : kAllDTypes) {
    Tensor t = empty_tensor({3, 4}, dtype, kCPU);
    auto* p = static_cast<uint8_t*>(t.data_ptr());
    for (size_t i = 0; i < t.nbytes(); ++i) p[i] = dtype == DType::Bool ? (i % 2) : static_cast<uint8_t>(i * 29 + 3);
    std::string name(dtype_name(dtype));
    save(name, t);
    save(name + "_transposed", t.view_with({4, 3}, {1, 4}, 0));
    save(name + "_scalar", t.view_with({}, {}, 5));
    save(name + "_empty", t.view_with({0, 2}, {2, 1}, 0));
  }
  Tensor bf = empty_tensor({4}, DType::BFloat16, kCPU);
  float values[] = {1.5f, -2.0f, 0.1f, 3e38f};
  for (int i = 0; i < 4; ++i) bf.data_ptr<BFloat16>()[i] = BFloat16(values[i]);
  write_npy(dir.file("bf16_values.npy"), bf);
  Tensor f = empty_tensor({2, 3}, DType::Float32, kCPU);
  for (int i = 0; i < 6; ++i) f.data_ptr<float>()[i] = 0.5f + static_cast<float>(i);
  write_npy(dir.file("f32_values.npy"), f);

  std::string code = kNumpyChecker;
  code.replace(code.find("DIR"), 3, dir.path().string());
  auto run = testing::run_python(python, code);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_EQ(run.out, "ok\n");
}

}  // namespace
}  // namespace kiln
