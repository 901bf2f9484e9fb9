// Type promotion against PyTorch: tests/data/type_promotion.tsv was written by real PyTorch
// (tests/tools/gen_promotion.py) for every dtype pair and mix of tensor, 0-d tensor and scalar.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/core/broadcast.h"
#include "kiln/core/type_promotion.h"

namespace kiln {
namespace {

TensorBase operand(char kind, DType t) {
  return empty_tensor(kind == 't' ? IntArrayRef({2}) : IntArrayRef(), t, kMeta);
}

Scalar scalar_of(DType t) {
  if (t == DType::Bool) return Scalar(true);
  if (t == DType::Int64) return Scalar(3);
  return Scalar(2.5);
}

TEST(TypePromotion, MatchesPyTorchTable) {
  std::ifstream in(KILN_TEST_DATA "/type_promotion.tsv");
  ASSERT_TRUE(in.good());
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.starts_with("kind")) continue;
    std::istringstream fields(line);
    std::string kind, a, b, expect;
    fields >> kind >> a >> b >> expect;
    DType da = *parse_dtype(a), db = *parse_dtype(b), want = *parse_dtype(expect);
    DType got;
    if (kind == "promote") {
      got = promote_types(da, db);
    } else {
      char ka = kind[7], kb = kind[8];
      ResultType r;
      r.add(operand(ka, da));
      if (kb == 's') {
        r.add(scalar_of(db));
      } else {
        r.add(operand(kb, db));
      }
      got = r.result();
    }
    EXPECT_EQ(got, want) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 560);
}

TEST(TypePromotion, CanCastKeepsCategory) {
  EXPECT_TRUE(can_cast(DType::Int64, DType::Float16));
  EXPECT_FALSE(can_cast(DType::Float32, DType::Int64));
  EXPECT_FALSE(can_cast(DType::Int32, DType::Bool));
  EXPECT_EQ(to_float_dtype(DType::Int8), DType::Float32);
  EXPECT_EQ(to_float_dtype(DType::Float64), DType::Float64);
}

TEST(TypePromotion, DefaultFloatDtypeIsSettable) {
  EXPECT_EQ(default_float_dtype(), DType::Float32);
  TensorBase ints = empty_tensor({3}, DType::Int32, kCPU);
  EXPECT_EQ(result_type(ints, Scalar(2.5)), DType::Float32);
  {
    DefaultFloatDType wide(DType::Float64);
    EXPECT_EQ(to_float_dtype(DType::Int64), DType::Float64);
    EXPECT_EQ(to_float_dtype(DType::Float16), DType::Float16);
    EXPECT_EQ(result_type(ints, Scalar(2.5)), DType::Float64);
    TensorBase halves = empty_tensor({3}, DType::Float16, kCPU);
    EXPECT_EQ(result_type(halves, Scalar(2.5)), DType::Float16);  // a scalar does not raise the category
  }
  EXPECT_EQ(default_float_dtype(), DType::Float32);
  try {
    set_default_float_dtype(DType::Int64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "set_default_dtype: only floating-point types are supported as the default type, got int64");
  }
  EXPECT_EQ(default_float_dtype(), DType::Float32);
}

TEST(Broadcast, ShapesAndErrors) {
  EXPECT_EQ(broadcast_shapes({5, 1, 4}, {3, 1}, "t"), (Shape{5, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}, "t"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 7}, "t"), (Shape{0, 7}));
  try {
    broadcast_shapes({2, 3}, {4}, "add");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "add: the size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1 "
                 "(sizes [2, 3] and [4])");
  }
  EXPECT_TRUE(broadcasts_to({3, 1}, {2, 3, 4}));
  EXPECT_FALSE(broadcasts_to({2, 3}, {3}));
}

TEST(TypePromotion, ComplexOfLowerPriorityTakesTheFloatPrecision) {
  // PyTorch 2.13: result_type(float32 [2], complex128 0-d) is complex64; float64 [2] with a
  // complex64 0-d tensor is complex128; an integer tensor takes the complex operand's dtype.
  auto t = [](IntArrayRef sizes, DType d) { return empty_tensor(sizes, d, kCPU); };
  TensorBase f32 = t({2}, DType::Float32), f64 = t({2}, DType::Float64), i64 = t({2}, DType::Int64);
  TensorBase c128 = t({}, DType::ComplexDouble), c64 = t({}, DType::ComplexFloat);
  EXPECT_EQ(result_type(f32, c128), DType::ComplexFloat);
  EXPECT_EQ(result_type(f64, c64), DType::ComplexDouble);
  EXPECT_EQ(result_type(i64, c128), DType::ComplexDouble);
  EXPECT_THROW(result_type(t({2}, DType::Float16), c64), Error);
}

}  // namespace
}  // namespace kiln
