#include <gtest/gtest.h>

#include "kiln/core/allocator.h"
#include "kiln/core/tensor_base.h"

namespace kiln {
namespace {

TEST(TensorBase, ContiguousGeometry) {
  TensorBase t = empty_tensor({2, 3, 4}, DType::Float32, kCPU);
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % kCpuAlignment, 0u);
  EXPECT_EQ(t.describe(), "float32[2, 3, 4]");
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_THROW(t.size(3), Error);
}

TEST(TensorBase, ViewsShareStorageAndOffset) {
  TensorBase t = empty_tensor({4, 5}, DType::Int32, kCPU);
  TensorBase col = t.view_with({4}, {5}, 2);
  EXPECT_EQ(col.storage().get(), t.storage().get());
  EXPECT_EQ(static_cast<char*>(col.data_ptr()) - static_cast<char*>(t.data_ptr()), 8);
  EXPECT_FALSE(col.is_contiguous());
  TensorBase transposed = t.view_with({5, 4}, {1, 5}, 0);
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(transposed.is_non_overlapping_and_dense());
  TensorBase expanded = t.view_with({3, 4, 5}, {0, 5, 1}, 0);
  EXPECT_FALSE(expanded.is_non_overlapping_and_dense());
}

TEST(TensorBase, ChannelsLast) {
  TensorBase t = empty_strided_tensor({2, 3, 4, 5}, {60, 1, 15, 3}, DType::Float32, kCPU);
  EXPECT_TRUE(t.is_channels_last());
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_non_overlapping_and_dense());
}

TEST(TensorBase, SizeOneAndEmptyDimsAreContiguousWhateverTheirStride) {
  EXPECT_TRUE(empty_strided_tensor({3, 1}, {1, 77}, DType::Float32, kCPU).is_contiguous());
  EXPECT_TRUE(empty_strided_tensor({0, 4}, {1, 9}, DType::Float32, kCPU).is_contiguous());
  EXPECT_EQ(storage_span({0, 4}, {1, 9}), 0);
  EXPECT_EQ(storage_span({3, 4}, {1, 3}), 12);
}

TEST(TensorBase, BadSizesAreErrors) {
  EXPECT_THROW(empty_tensor({2, -1}, DType::Float32, kCPU), Error);
  EXPECT_THROW(empty_tensor({int64_t{1} << 40, int64_t{1} << 40}, DType::Float32, kCPU), Error);
  try {
    wrap_dim(2, 2, "sum");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_STREQ(e.what(), "sum: dimension out of range (expected to be in range of [-2, 1], but got 2)");
  }
  EXPECT_EQ(wrap_dim(-1, 0, "t"), 0);
}

TEST(Allocator, CachesLargeBlocksForReuse) {
  cpu_cache_release();
  auto before = cpu_cache_stats();
  void* first;
  {
    TensorBase t = empty_tensor({1 << 20}, DType::Float32, kCPU);
    first = t.data_ptr();
  }
  TensorBase again = empty_tensor({1 << 20}, DType::Float32, kCPU);
  auto after = cpu_cache_stats();
  if (cpu_cache_enabled()) {
    EXPECT_EQ(after.hits, before.hits + 1);
    EXPECT_EQ(again.data_ptr(), first);
  } else {  // sanitizer builds and KILN_CPU_CACHE=0 return every block at once
    EXPECT_EQ(after.cached_bytes, 0u);
  }
  EXPECT_EQ(meta_allocator()->allocate(100), nullptr);
}

TEST(Device, ParseAndPrint) {
  EXPECT_EQ(Device::parse("cuda:1"), Device(DeviceType::CUDA, 1));
  EXPECT_EQ(Device::parse("meta"), kMeta);
  EXPECT_EQ(Device(DeviceType::CUDA, 0).to_string(), "cuda:0");
  EXPECT_THROW(Device::parse("tpu"), Error);
  EXPECT_THROW(Device::parse("cuda:x"), Error);
}

}  // namespace
}  // namespace kiln
