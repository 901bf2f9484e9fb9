// _embedding_bag against PyTorch 2.13's CPU outputs on a hand-checkable weight (row r is
// [3r, 3r + 1, 3r + 2]): the four outputs' values, dtypes and sizes for sum, mean and max, with
// include_last_offset, padding_idx, per_sample_weights, empty bags and int32 indices; and the
// argument errors (out-of-range indices, bad offsets, per_sample_weights outside mode sum).
#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

struct Bags {
  Tensor out, offset2bag, bag_size, max_indices;
};

Bags bag(const Tensor& w, const Tensor& idx, const Tensor& offs, int64_t mode, std::optional<Tensor> psw = {},
         bool last = false, int64_t pad = -1) {
  Stack s{Value(w),    Value(idx), Value(offs), Value(false), Value(mode), Value(false), psw ? Value(*psw) : Value(),
          Value(last), Value(pad)};
  call_op_boxed(Registry::global().get("aten::_embedding_bag"), s);
  return {s[0].to_tensor(), s[1].to_tensor(), s[2].to_tensor(), s[3].to_tensor()};
}

Tensor weight() { return arange(Scalar(12.0)).reshape({4, 3}).to(DType::Float32); }
Tensor longs(const std::vector<int64_t>& v) { return from_vector(v); }

std::string str(const Tensor& t) { return t.to_string(); }

TEST(EmbeddingBag, SumOnPyTorchsFastPathLeavesOffset2bagEmpty) {
  Bags b = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 0);
  EXPECT_EQ(str(b.out), str(from_vector<float>({6, 8, 10, 0, 0, 0, 12, 14, 16, 9, 10, 11}, {4, 3})));
  EXPECT_EQ(b.offset2bag.sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(str(b.bag_size), str(longs({0, 0, 0, 0})));
  EXPECT_EQ(str(b.max_indices), str(longs({0, 0, 0, 0})));
  // float64 (PyTorch's other path) computes offset2bag; a padding_idx does too.
  Bags d = bag(weight().to(DType::Float64), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 0);
  EXPECT_EQ(str(d.offset2bag), str(longs({0, 0, 2, 2, 3})));
  Bags p = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 0, {}, false, 3);
  EXPECT_EQ(str(p.out), str(from_vector<float>({6, 8, 10, 0, 0, 0, 3, 4, 5, 0, 0, 0}, {4, 3})));
  EXPECT_EQ(str(p.offset2bag), str(longs({0, 0, 2, 2, 3})));
}

TEST(EmbeddingBag, MeanCountsPaddingOut) {
  Bags b = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 1, {}, false, 3);
  EXPECT_EQ(str(b.out), str(from_vector<float>({3, 4, 5, 0, 0, 0, 3, 4, 5, 0, 0, 0}, {4, 3})));
  EXPECT_EQ(str(b.bag_size), str(longs({2, 0, 1, 0})));
  EXPECT_EQ(str(b.max_indices), str(longs({2, 0, 1, 0})));
}

TEST(EmbeddingBag, MaxWithIncludeLastOffset) {
  Bags b = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 2, {}, true);
  EXPECT_EQ(str(b.out), str(from_vector<float>({6, 7, 8, 0, 0, 0, 9, 10, 11}, {3, 3})));
  EXPECT_EQ(str(b.offset2bag), str(longs({0, 0, 2, 2, 2})));
  EXPECT_EQ(str(b.bag_size), str(longs({2, 0, 3})));  // the index past the last offset counts
  EXPECT_EQ(str(b.max_indices), str(from_vector<int64_t>({2, 2, 2, 0, 0, 0, 3, 3, 3}, {3, 3})));
}

TEST(EmbeddingBag, TrailingIndicesOnlyCountOffTheFastPath) {
  // include_last_offset with offsets ending before the indices do: PyTorch's float32 sum stops at
  // the last offset; float64 (and mean's divisor) include the rest in the last bag.
  Bags f = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 3}), 0, {}, true);
  EXPECT_EQ(str(f.out), str(from_vector<float>({6, 8, 10, 3, 4, 5}, {2, 3})));
  Bags d = bag(weight().to(DType::Float64), longs({0, 2, 1, 3, 3}), longs({0, 2, 3}), 0, {}, true);
  EXPECT_EQ(str(d.out), str(from_vector<double>({6, 8, 10, 21, 24, 27}, {2, 3})));
  Bags m = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 3}), 1, {}, true);
  EXPECT_NEAR(m.out[1][1].item<float>(), 4.0f / 3.0f, 1e-6);
  EXPECT_EQ(str(m.bag_size), str(longs({2, 3})));
}

TEST(EmbeddingBag, PerSampleWeightsAndInt32) {
  Tensor psw = from_vector<float>({1, 2, 0.5, 1, -1});
  Bags b = bag(weight(), longs({0, 2, 1, 3, 3}), longs({0, 2, 2, 4}), 0, psw);
  EXPECT_EQ(str(b.out), str(from_vector<float>({12, 15, 18, 0, 0, 0, 10.5, 12, 13.5, -9, -10, -11}, {4, 3})));
  Tensor i32 = longs({0, 2, 1, 3, 3}).to(DType::Int32);
  Bags m = bag(weight(), i32, longs({0, 2, 2, 4}).to(DType::Int32), 2);
  EXPECT_EQ(m.offset2bag.dtype(), DType::Int32);
  EXPECT_EQ(m.max_indices.dtype(), DType::Int32);
  EXPECT_EQ(m.max_indices.sizes().vec(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(bag(weight(), i32, longs({0, 2}), 1).bag_size.dtype(), DType::Int64);  // promoted
}

TEST(EmbeddingBag, EmptyIndicesGiveZeroBags) {
  Bags b = bag(weight(), longs({}), longs({0, 0}), 2);
  EXPECT_EQ(str(b.out), str(zeros({2, 3})));
  EXPECT_EQ(b.offset2bag.numel(), 0);
  EXPECT_EQ(str(b.bag_size), str(longs({0, 0})));
}

TEST(EmbeddingBag, BadArgumentsRaise) {
  Tensor w = weight();
  EXPECT_THROW(bag(w, longs({0, 4}), longs({0}), 0), Error);              // index past the rows
  EXPECT_THROW(bag(w, longs({0, -1}), longs({0}), 2), Error);             // negative index
  EXPECT_THROW(bag(w, longs({0, 1, 2}), longs({1, 2}), 0), Error);        // offsets[0] != 0
  EXPECT_THROW(bag(w, longs({0, 1, 2}), longs({0, 9}), 2), Error);        // offsets[-1] > size
  EXPECT_THROW(bag(w, longs({0, 1, 2, 3}), longs({0, 3, 1}), 2), Error);  // decreasing offsets
  EXPECT_THROW(bag(w, longs({0, 1}), longs({0}), 1, from_vector<float>({1, 1})), Error);
  EXPECT_THROW(bag(w, longs({0, 1}), longs({0}), 0, from_vector<float>({1})), Error);
  EXPECT_THROW(bag(w, longs({0, 1}), longs({}), 0, {}, true), Error);
  EXPECT_THROW(bag(w, longs({0, 1}), longs({0}), 3), Error);
  EXPECT_THROW(bag(w.to(DType::Int64), longs({0, 1}), longs({0}), 0), Error);
  EXPECT_THROW(bag(w, longs({0, 1}).to(DType::Float32), longs({0}), 0), Error);
  EXPECT_THROW(bag(w, from_vector<int64_t>({0, 1, 2, 3}, {2, 2}), longs({0, 1}), 2), Error);  // 2-D off fast path
}

}  // namespace
}  // namespace kiln::cpu
