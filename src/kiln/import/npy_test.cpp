// .npy reading and writing on bytes made by hand: every dtype through a round trip, the exact
// header numpy writes, versions 2.0 and 3.0, big-endian and Fortran-order data, 0-d and empty
// shapes, non-contiguous tensors, and each kind of malformed file.
#include "kiln/import/npy.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kiln/import/import_test_util.h"

namespace kiln {
namespace {

using testing::to_bytes;

// A CPU tensor whose bytes are a fixed pattern (bool: 0/1).
Tensor patterned(IntArrayRef sizes, DType dtype) {
  Tensor t = empty_tensor(sizes, dtype, kCPU);
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i)
    p[i] = dtype == DType::Bool ? (i % 3 == 1) : static_cast<uint8_t>(i * 37 + 11);
  return t;
}

std::string raw(const TensorBase& t) { return {static_cast<const char*>(t.data_ptr()), t.nbytes()}; }

// A .npy file with the given version, dict text and data.
std::vector<std::byte> npy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  size_t len = dict.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return to_bytes(out + dict + data);
}

std::string le_bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

TEST(Npy, EveryDTypeRoundTrips) {
  for (DType dtype : kAllDTypes) {
    for (auto sizes : {Shape{2, 3}, Shape{}, Shape{0, 4}, Shape{5}}) {
      Tensor t = patterned(sizes, dtype);
      Tensor back = parse_npy(npy_bytes(t));
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(Shape(back.sizes().begin(), back.sizes().end()), sizes) << dtype_name(dtype);
      EXPECT_TRUE(back.is_contiguous());
      EXPECT_EQ(raw(back), raw(t)) << dtype_name(dtype);
    }
  }
}

TEST(Npy, HeaderIsNumpysSpelling) {
  std::string h = format_npy_header(DType::Float32, {2, 3});
  EXPECT_EQ(h.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_EQ(h.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(format_npy_header(DType::Int64, {7}).find("'shape': (7,), }"), std::string::npos);
  EXPECT_NE(format_npy_header(DType::Bool, {}).find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
  EXPECT_NE(format_npy_header(DType::BFloat16, {1}).find("'<V2'"), std::string::npos);
  EXPECT_NE(format_npy_header(DType::ComplexDouble, {1}).find("'<c16'"), std::string::npos);
}

TEST(Npy, VersionTwoWhenTheHeaderNeedsIt) {
  Shape many;
  many.assign(size_t{30000}, int64_t{1});
  std::string h = format_npy_header(DType::Int8, many);
  EXPECT_EQ(h[6], '\x02');
  EXPECT_EQ(h.size() % 64, 0u);
  NpyHeader parsed = parse_npy_header(to_bytes(h + "x"), "big.npy");
  EXPECT_EQ(parsed.major_version, 2);
  EXPECT_EQ(parsed.shape.size(), 30000u);
  EXPECT_EQ(parsed.data_offset, h.size());
}

TEST(Npy, ReadsVersionsTwoAndThree) {
  for (int major : {2, 3}) {
    Tensor t = parse_npy(
        npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }\n", le_bytes({1, 0, 0xff, 0xff}), major));
    EXPECT_EQ(t.data_ptr<int16_t>()[0], 1);
    EXPECT_EQ(t.data_ptr<int16_t>()[1], -1);
  }
}

TEST(Npy, BigEndianIsSwapped) {
  Tensor i = parse_npy(npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (2,)}",
                                le_bytes({0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe})));
  EXPECT_EQ(i.data_ptr<int32_t>()[0], 0x0102);
  EXPECT_EQ(i.data_ptr<int32_t>()[1], -2);
  // complex64: each float swapped on its own. 1.0f = 3f800000, -2.0f = c0000000.
  Tensor c = parse_npy(
      npy_file("{'descr': '>c8', 'fortran_order': False, 'shape': (1,)}", le_bytes({0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0})));
  EXPECT_EQ(c.data_ptr<std::complex<float>>()[0], std::complex<float>(1.0f, -2.0f));
  Tensor b = parse_npy(npy_file("{'descr': '>V2', 'fortran_order': False, 'shape': (1,)}", le_bytes({0x3f, 0xc0})));
  EXPECT_EQ(static_cast<float>(b.data_ptr<BFloat16>()[0]), 1.5f);
  Tensor u = parse_npy(npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (1,)}", le_bytes({200})));
  EXPECT_EQ(u.data_ptr<uint8_t>()[0], 200);
}

TEST(Npy, FortranOrderGivesColumnMajorStrides) {
  // a = [[0, 1, 2], [3, 4, 5]] stored column by column: 0 3 1 4 2 5.
  Tensor t =
      parse_npy(npy_file("{'descr': '<i1', 'fortran_order': True, 'shape': (2, 3), }", le_bytes({0, 3, 1, 4, 2, 5})));
  EXPECT_EQ(Shape(t.strides().begin(), t.strides().end()), (Shape{1, 2}));
  EXPECT_FALSE(t.is_contiguous());
  // Written back in C order.
  std::vector<std::byte> out = npy_bytes(t);
  std::string data(reinterpret_cast<const char*>(out.data()) + out.size() - 6, 6);
  EXPECT_EQ(data, le_bytes({0, 1, 2, 3, 4, 5}));
}

TEST(Npy, NonContiguousTensorsAreWrittenInCOrder) {
  Tensor base = patterned({4, 6}, DType::Int32);
  const int32_t* b = base.data_ptr<int32_t>();
  // Transposed and every other column: sizes (3, 4), strides (2, 6).
  Tensor view = base.view_with({3, 4}, {2, 6}, 0);
  Tensor back = parse_npy(npy_bytes(view));
  ASSERT_EQ(back.numel(), 12);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(back.data_ptr<int32_t>()[i * 4 + j], b[i * 2 + j * 6]);
  }
  // A view with an offset and a broadcast (stride 0) dim.
  Tensor bcast = base.view_with({2, 3}, {0, 1}, 5);
  Tensor back2 = parse_npy(npy_bytes(bcast));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back2.data_ptr<int32_t>()[i], b[5 + i % 3]);
}

TEST(Npy, BoolBytesAreNormalized) {
  Tensor t = parse_npy(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", le_bytes({0, 2, 1})));
  EXPECT_EQ(raw(t), le_bytes({0, 1, 1}));
}

TEST(Npy, Uint16IsBFloat16OnlyWhenAsked) {
  auto file = npy_file("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", le_bytes({0xc0, 0x3f}));
  EXPECT_KILN_ERROR(parse_npy(file, "w.npy"), "w.npy", "'<u2'", "uint16_as_bfloat16");
  Tensor t = parse_npy(file, "w.npy", {.uint16_as_bfloat16 = true});
  EXPECT_EQ(t.dtype(), DType::BFloat16);
  EXPECT_EQ(static_cast<float>(t.data_ptr<BFloat16>()[0]), 1.5f);
}

TEST(Npy, MalformedFiles) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string ok_data(8, '\0');
  EXPECT_NO_THROW(parse_npy(npy_file(ok_dict, ok_data)));
  EXPECT_KILN_ERROR(parse_npy(to_bytes("PK\x03\x04 not numpy"), "a.npy"), "a.npy", "bad magic");
  EXPECT_KILN_ERROR(parse_npy(to_bytes(""), "e.npy"), "e.npy", "bad magic");
  EXPECT_KILN_ERROR(parse_npy(npy_file(ok_dict, ok_data, 4), "v.npy"), "v.npy", "version 4.0");
  auto truncated_header = npy_file(ok_dict, "");
  truncated_header.resize(30);
  EXPECT_KILN_ERROR(parse_npy(truncated_header, "t.npy"), "t.npy", "truncated .npy header", "says 57 bytes");
  EXPECT_KILN_ERROR(parse_npy(npy_file(ok_dict, std::string(7, '\0')), "d.npy"), "d.npy", "truncated .npy data",
                    "(2) of float32 needs 8 bytes", "has 7");
  EXPECT_KILN_ERROR(parse_npy(npy_file(ok_dict, std::string(12, '\0')), "m.npy"), "m.npy", "shape/data size mismatch",
                    "has 12");

  struct Bad {
    std::string dict, fragment;
  };
  const Bad bad[] = {
      {"not a dict", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unknown key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "key 'descr' appears twice"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected '}' at byte 17"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "trailing comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "exceeds int64"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "expected a string, True, False or a tuple"},
      {"{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,)}", "fortran_order must be True or False"},
      {"{'descr': (1,), 'fortran_order': False, 'shape': (2,)}", "descr must be a string"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured dtypes"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (2,)}", "unknown or unsupported descr '<u4' (uint32"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", "'|O' (pickled Python objects"},
      {"{'descr': '<U5', 'fortran_order': False, 'shape': (2,)}", "unknown or unsupported descr '<U5'"},
      {"{'descr': 'f4', 'fortran_order': False, 'shape': (2,)}", "lacks a byte order"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", "only for one-byte types"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "overflows"},
      {"{'descr': '<f4\\n', 'fortran_order': False, 'shape': (2,)}", "escape sequences"},
      {"{'descr': '<f4", "unterminated string"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.dict);
    EXPECT_KILN_ERROR(parse_npy(npy_file(b.dict, ok_data), "bad.npy"), "bad.npy", b.fragment);
  }
}

TEST(Npy, TruncationsNeverCrash) {
  std::vector<std::byte> file = npy_bytes(patterned({3, 5}, DType::Float64));
  for (size_t n = 0; n < file.size(); ++n) {
    EXPECT_THROW(parse_npy(std::span<const std::byte>(file.data(), n)), Error) << n;
  }
}

TEST(Npy, FilesOnDisk) {
  testing::ScratchDir dir("npy_files");
  Tensor t = patterned({3, 2}, DType::Float16);
  write_npy(dir.file("h.npy"), t);
  EXPECT_EQ(raw(read_npy(dir.file("h.npy"))), raw(t));
  Tensor view = t.view_with({2, 3}, {1, 2}, 0);
  write_npy(dir.file("v.npy"), view);
  EXPECT_EQ(testing::read_file_bytes(dir.file("v.npy")), npy_bytes(view));
  EXPECT_KILN_ERROR(read_npy(dir.file("missing.npy")), dir.file("missing.npy"), "cannot open");
  EXPECT_KILN_ERROR(write_npy(dir.file("no/such/dir/x.npy"), t), "no/such/dir/x.npy", "cannot open");
  EXPECT_KILN_ERROR(write_npy(dir.file("m.npy"), Tensor(empty_tensor({2}, DType::Float32, kMeta))), "meta",
                    "not on the CPU");
}

}  // namespace
}  // namespace kiln
