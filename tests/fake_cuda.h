// A fake CUDA device for tests without a GPU: two devices whose memory is host memory, installed as
// the CUDA device hooks (core/device_hooks.h) for one test by the FakeDevice fixture, with counts of
// allocations and of bytes copied by direction.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/device_hooks.h"

namespace kiln {

// A device whose memory is host memory: every copy in or out of it goes through the hooks, which
// count the bytes by direction.
class FakeAllocator final : public Allocator {
 public:
  explicit FakeAllocator(int index) : index_(index) {}
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    ++allocations;
    live += nbytes;
    return std::calloc(nbytes, 1);
  }
  void deallocate(void* p, size_t nbytes) override {
    if (!p) return;
    live -= nbytes;
    std::free(p);
  }
  Device device() const override { return Device(DeviceType::CUDA, static_cast<int8_t>(index_)); }
  int allocations = 0;
  size_t live = 0;

 private:
  int index_;
};

class FakeCuda final : public DeviceHooks {
 public:
  int device_count() const override { return 2; }
  int current_device() const override { return current; }
  void set_current_device(int index) override { current = index; }
  Allocator* allocator(int index) override { return &allocators.at(static_cast<size_t>(index)); }
  void copy(void* dst, Device to, const void* src, Device from, size_t nbytes) override {
    EXPECT_GE(to.index, to.is_cpu() ? -1 : 0);  // explicit indices for device places
    EXPECT_GE(from.index, from.is_cpu() ? -1 : 0);
    copies[{from.to_string(), to.to_string()}] += nbytes;
    std::memcpy(dst, src, nbytes);
  }
  void synchronize(int) override { ++syncs; }
  std::string describe() const override { return "fake CUDA (host memory)"; }

  int current = 0;
  std::vector<FakeAllocator> allocators{FakeAllocator(0), FakeAllocator(1)};
  std::map<std::pair<std::string, std::string>, size_t> copies;
  int syncs = 0;
};

// Installs a FakeCuda for one test and puts the registered loader back after it.
class FakeDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hooks = std::make_unique<FakeCuda>();
    fake = hooks.get();
    saved = replace_device_hooks_for_testing(DeviceType::CUDA, std::move(hooks));
  }
  void TearDown() override { replace_device_hooks_for_testing(DeviceType::CUDA, std::move(saved)); }
  // Bytes copied from `from` to `to` so far.
  size_t copied(const std::string& from, const std::string& to) { return fake->copies[{from, to}]; }
  FakeCuda* fake = nullptr;
  std::unique_ptr<DeviceHooks> saved;
};

inline const Device kCuda{DeviceType::CUDA};

}  // namespace kiln
