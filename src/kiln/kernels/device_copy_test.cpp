// Devices behind core's hooks, tested on a fake CUDA device backed by host memory (two devices,
// counted allocations): what the CUDA layer plugs into, checked without a GPU. And the error when
// no CUDA device can be had, which is what this machine (no GPU) gives for a real one.
#include <gtest/gtest.h>

#include "device_tensors.h"
#include "fake_cuda.h"
#include "kiln/core/device_hooks.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

const Device kCuda1{DeviceType::CUDA, 1};

TEST_F(FakeDevice, CudaMeansTheCurrentDeviceAndDevicesCompareEqual) {
  Tensor a = empty({2, 3}, TensorOptions(DType::Float32).device(kCuda));
  EXPECT_EQ(a.device(), Device(DeviceType::CUDA, 0));
  EXPECT_EQ(fake->allocators[0].allocations, 1);
  fake->current = 1;
  Tensor b = empty({4}, TensorOptions(DType::Float32).device(kCuda));
  EXPECT_EQ(b.device(), kCuda1);
  EXPECT_EQ(fake->allocators[1].allocations, 1);
  try {
    (void)empty({4}, TensorOptions(DType::Float32).device(Device(DeviceType::CUDA, 2)));
    FAIL() << "expected an error for cuda:2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device cuda:2 does not exist (2 CUDA devices)"), std::string::npos)
        << e.what();
  }
}

TEST_F(FakeDevice, ToAndFromTheDeviceKeepValuesDtypesAndLayouts) {
  manual_seed(3);
  Tensor x = randn({5, 7}, DType::Float32);
  Tensor d = x.to(kCuda);
  EXPECT_EQ(d.device(), Device(DeviceType::CUDA, 0));
  EXPECT_EQ(copied("cpu", "cuda:0"), 5u * 7u * 4u);  // one copy of the dense bytes
  Tensor back = d.cpu();
  EXPECT_TRUE(back.device().is_cpu());
  EXPECT_TRUE(same(back, x));
  // A conversion of dtype and a non-contiguous view, each way.
  Tensor t = x.t();
  Tensor dt = t.to(TensorOptions(DType::Float64).device(kCuda));
  EXPECT_EQ(dt.dtype(), DType::Float64);
  EXPECT_EQ(dt.sizes().vec(), (std::vector<int64_t>{7, 5}));
  EXPECT_TRUE(same(dt.cpu(), t.to(DType::Float64)));
  Tensor sliced = d.slice(1, 1, 6, 2);  // a view of device memory with an offset and gaps
  EXPECT_TRUE(same(sliced.cpu(), x.slice(1, 1, 6, 2)));
  EXPECT_TRUE(same(sliced.to(DType::BFloat16).cpu(), x.slice(1, 1, 6, 2).to(DType::BFloat16)));
  // To the other device.
  Tensor other = d.to(kCuda1);
  EXPECT_EQ(other.device(), kCuda1);
  EXPECT_EQ(copied("cuda:0", "cuda:1"), 5u * 7u * 4u);
  EXPECT_TRUE(same(other.cpu(), x));
  // Empty tensors move without copying a byte.
  Tensor none = empty({0, 3}, TensorOptions(DType::Float32).device(kCuda)).cpu();
  EXPECT_EQ(none.sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST_F(FakeDevice, ItemReadsOneElementAndResizeKeepsBytes) {
  Tensor x = arange(Scalar(0), Scalar(10), Scalar(1), DType::Int64).to(kCuda);
  EXPECT_EQ(x[7].item<int64_t>(), 7);
  EXPECT_EQ(copied("cuda:0", "cpu"), sizeof(int64_t));
  Tensor h = full({1}, Scalar(2.5), DType::Float16).to(kCuda);
  EXPECT_EQ(h.item<double>(), 2.5);
  // resize_ grows device memory and keeps its bytes (through the device's copy).
  resize(x, {20});
  EXPECT_TRUE(same(x.slice(0, 0, 10).cpu(), arange(Scalar(0), Scalar(10), Scalar(1), DType::Int64)));
  EXPECT_EQ(copied("cuda:0", "cuda:0"), 10 * sizeof(int64_t));
}

// copy_ crosses devices, as PyTorch's: into the CPU from the device, into the device from the CPU
// (broadcast, converted), and into a strided view of device memory whose gaps keep their values.
TEST_F(FakeDevice, CopyInPlaceCrossesDevices) {
  manual_seed(4);
  Tensor x = randn({5, 7});
  Tensor d = x.to(kCuda);
  Tensor host = zeros({5, 7});
  host.copy_(d);
  EXPECT_TRUE(same(host, x));
  Tensor dev = zeros({5, 7}).to(kCuda);
  dev.copy_(x);  // same dtype and layout: one copy of the bytes
  EXPECT_TRUE(same(dev.cpu(), x));
  Tensor row = arange(Scalar(0), Scalar(7), Scalar(1), DType::Int64);
  dev.copy_(row);  // broadcast over the rows and converted to float
  EXPECT_TRUE(same(dev.cpu(), row.to(DType::Float32).expand({5, 7}).contiguous()));
  Tensor gaps = zeros({5, 7}).to(kCuda);
  gaps.slice(1, 1, 6, 2).copy_(full({5, 3}, Scalar(9.0)));
  Tensor want = zeros({5, 7});
  want.slice(1, 1, 6, 2).copy_(full({5, 3}, Scalar(9.0)));
  EXPECT_TRUE(same(gaps.cpu(), want));
  Tensor other = zeros({5, 7}).to(kCuda1);
  other.copy_(d);  // between two devices
  EXPECT_TRUE(same(other.cpu(), x));
}

TEST_F(FakeDevice, AnOpWithoutACudaKernelNamesItself) {
  Tensor a = ones({3}, DType::Float32).to(kCuda);
  try {
    (void)add(a, a);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("aten::add"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA"), std::string::npos) << m;
  }
  // Mixing devices is the dispatcher's error, as PyTorch's.
  try {
    (void)add(a, ones({3}, DType::Float32));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("same device"), std::string::npos) << e.what();
  }
}

TEST_F(FakeDevice, DeviceMemoryIsReturnedToItsAllocator) {
  {
    Tensor a = empty({1000}, TensorOptions(DType::Float32).device(kCuda));
    EXPECT_EQ(fake->allocators[0].live, 4000u);
  }
  EXPECT_EQ(fake->allocators[0].live, 0u);
}

// Without hooks (no driver, no GPU, or no CUDA support), a CUDA tensor is an error saying why.
TEST(NoDevice, ACudaTensorIsAnErrorThatSaysWhy) {
  if (device_available(DeviceType::CUDA)) GTEST_SKIP() << "a CUDA device is present";
  auto saved = replace_device_hooks_for_testing(DeviceType::CUDA, nullptr);
  try {
    (void)empty({2}, TensorOptions(DType::Float32).device(kCuda));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  try {
    (void)ones({2}).to(kCuda);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_NE(device_unavailable_reason(DeviceType::CUDA).find("no CUDA device"), std::string::npos);
  replace_device_hooks_for_testing(DeviceType::CUDA, std::move(saved));
}

}  // namespace
}  // namespace kiln
