// The CUDA layer (cuda/) on a real GPU under tensors: devices, the driver's copies, the caching allocator.
// Without a GPU (this project's CI) the same binary checks that a CUDA device is refused with a
// kiln::Error that says why; on the GPU machine (`make test-gpu`, KILN_REQUIRE_GPU=1: no GPU is then
// a failure, not a skip) it runs the rest.
#include <gtest/gtest.h>

#include <cstdlib>

#include "device_tensors.h"
#include "kiln/core/device_hooks.h"
#include "kiln/cuda/hooks.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

const Device kCuda{DeviceType::CUDA};

TEST(CudaDevice, WithoutAGpuACudaTensorIsAnErrorSayingWhy) {
  if (device_available(DeviceType::CUDA)) GTEST_SKIP() << device_hooks(DeviceType::CUDA, "test").describe();
  std::string reason = device_unavailable_reason(DeviceType::CUDA);
  EXPECT_EQ(reason.rfind("no CUDA device", 0), 0u) << reason;
  try {
    (void)ones({3}).to(kCuda);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, DescribesItsDevices) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  std::string d = device_hooks(DeviceType::CUDA, "test").describe();
  EXPECT_NE(d.find("CUDA driver"), std::string::npos) << d;
  const cuda::DeviceProperties& p = cuda::device_properties(0);
  EXPECT_GE(p.major, 7) << d;
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_GT(p.total_memory, size_t{1} << 30);
  std::printf("%s\n", d.c_str());
}

TEST(CudaDevice, RoundTripsValuesDtypesAndViews) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  manual_seed(5);
  Tensor x = randn({513, 1000});
  Tensor g = x.cuda();
  EXPECT_EQ(g.device(), Device(DeviceType::CUDA, 0));
  EXPECT_TRUE(same(g.cpu(), x));
  EXPECT_TRUE(same(g.t().to(DType::BFloat16).cpu(), x.t().to(DType::BFloat16)));
  EXPECT_TRUE(same(g.slice(1, 3, 900, 7).cpu(), x.slice(1, 3, 900, 7)));
  EXPECT_EQ(g[100][7].item<float>(), x[100][7].item<float>());
  Tensor host = zeros({513, 1000});
  host.copy_(g);
  EXPECT_TRUE(same(host, x));
  Tensor gaps = zeros({513, 1000}).cuda();
  gaps.slice(1, 1, 1000, 3).copy_(x.slice(1, 1, 1000, 3));
  Tensor want = zeros({513, 1000});
  want.slice(1, 1, 1000, 3).copy_(x.slice(1, 1, 1000, 3));
  EXPECT_TRUE(same(gaps.cpu(), want));
  Tensor grown = arange(Scalar(0), Scalar(1000), Scalar(1), DType::Int64).cuda();
  resize(grown, {5000});
  EXPECT_TRUE(same(grown.slice(0, 0, 1000).cpu(), arange(Scalar(0), Scalar(1000), Scalar(1), DType::Int64)));
  synchronize_device(kCuda);
}

TEST(CudaDevice, TensorsReuseCachedBlocks) {
  if (!have_gpu()) GTEST_SKIP() << device_unavailable_reason(DeviceType::CUDA);
  cuda::CachingAllocator& a = cuda::device_allocator(0);
  a.empty_cache();
  size_t segments = a.stats().segment_allocations;
  const size_t held = a.stats().allocated_bytes;  // kept by others (cuBLASLt's workspace)
  for (int i = 0; i < 50; ++i) {
    Tensor t = empty({1 << 20}, TensorOptions(DType::Float32).device(kCuda));  // 4 MiB, freed each time
    (void)t;
  }
  EXPECT_EQ(a.stats().segment_allocations, segments + 1);
  EXPECT_EQ(a.stats().allocated_bytes, held);
  try {
    (void)empty({int64_t{1} << 40}, TensorOptions(DType::Float32).device(kCuda));  // 4 TiB
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory: tried to allocate 4398046511104 bytes"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
