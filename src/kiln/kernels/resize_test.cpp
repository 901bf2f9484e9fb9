#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {
namespace {

// resize_ through the dispatcher, as a recorded call runs it.
Tensor resize(const Tensor& self, std::vector<int64_t> size, std::optional<MemoryFormat> format = std::nullopt) {
  Stack s{Value(self), Value(size), format ? Value(*format) : Value()};
  call_op_boxed(Registry::global().get("aten::resize_"), s);
  return s.at(0).to_tensor();
}

std::vector<int64_t> vec(IntArrayRef r) { return {r.begin(), r.end()}; }

// Expected values from PyTorch 2.13 (the same calls on torch tensors).
TEST(Resize, SizesStridesAndStorage) {
  // Same sizes, no format: strides kept (a transposed [4, 6] stays (1, 6)).
  Tensor t = arange(24, DType::Float32).view({4, 6}).t();
  EXPECT_EQ(resize(t, {6, 4}).strides().vec(), (std::vector<int64_t>{1, 6}));
  // Smaller: contiguous strides, the same storage, same object, the data kept in storage order.
  Tensor r = resize(t, {3, 4});
  EXPECT_EQ(r.impl(), t.impl());
  EXPECT_EQ(vec(t.strides()), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(t.storage()->nbytes(), 96u);
  EXPECT_EQ(t[2][3].item<double>(), 11.0);
  // Larger, at an offset: the storage grows to (offset + numel) elements, keeping its bytes, and a
  // view sharing it sees them.
  Tensor base = arange(10, DType::Float32);
  Tensor z = slice(base, 0, 2);
  resize(z, {20});
  EXPECT_EQ(z.storage_offset(), 2);
  EXPECT_EQ(z.storage()->nbytes(), 88u);
  EXPECT_EQ(z[7].item<double>(), 9.0);
  EXPECT_EQ(base[9].item<double>(), 9.0);
  EXPECT_EQ(base.storage()->data(), z.storage()->data());
  // A memory format restrides even at the same sizes.
  Tensor w = zeros({2, 3, 4, 5});
  EXPECT_EQ(vec(resize(w, {2, 3, 4, 5}, MemoryFormat::ChannelsLast).strides()), (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(vec(resize(w, {2, 3, 4, 6}, MemoryFormat::ChannelsLast).strides()), (std::vector<int64_t>{72, 1, 18, 3}));
  // Meta tensors resize too (traces and shape checks).
  Tensor m = to_meta(zeros({2}));
  EXPECT_EQ(vec(resize(m, {3, 5}).sizes()), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(resize(zeros({4}), {0}).numel(), 0);
}

TEST(Resize, BadArgumentsAreErrors) {
  Tensor w = zeros({2, 3});
  EXPECT_THROW(resize(w, {2, -1}), Error);
  EXPECT_THROW(resize(w, {2, 3}, MemoryFormat::ChannelsLast), Error);
  EXPECT_THROW(resize(w, {2, 3}, MemoryFormat::Preserve), Error);
  EXPECT_THROW(resize(w, {int64_t{1} << 62, 8}), Error);
  EXPECT_EQ(vec(w.sizes()), (std::vector<int64_t>{2, 3}));  // unchanged by a refused call
  // Memory kiln does not own cannot grow.
  float data[4] = {1, 2, 3, 4};
  Tensor wrapped(make_tensor(StorageImpl::wrap(data, sizeof data, kCPU, {}), {4}, {1}, 0, DType::Float32));
  EXPECT_THROW(resize(wrapped, {8}), Error);
  EXPECT_EQ(resize(wrapped, {2}).numel(), 2);
}

}  // namespace
}  // namespace kiln
