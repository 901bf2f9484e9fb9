#include "kiln/cuda/hooks.h"

#include <deque>
#include <memory>
#include <mutex>

#include "kiln/core/device_hooks.h"
#include "kiln/cuda/driver.h"
#include "kiln/support/error.h"

namespace kiln::cuda {
namespace {

// Segments from cuMemAlloc in device `index`'s primary context.
class DeviceMemory final : public RawMemory {
 public:
  DeviceMemory(const Driver& d, CUcontext context) : d_(d), context_(context) {}
  void* allocate(size_t bytes) override {
    d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    CUdeviceptr p = 0;
    CUresult r = d_.cuMemAlloc(&p, bytes);
    if (r == kErrorOutOfMemory) return nullptr;
    d_.check(r, fmt::format("cuMemAlloc of {} bytes", bytes));
    return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  }
  void free(void* ptr) override {
    d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    d_.check(d_.cuMemFree(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr))), "cuMemFree");
  }
  std::string memory_info() const override {
    size_t free = 0, total = 0;
    if (d_.cuCtxSetCurrent(context_) != kSuccess || d_.cuMemGetInfo(&free, &total) != kSuccess) return "";
    return fmt::format("the device has {} bytes free of {}", free, total);
  }

 private:
  const Driver& d_;
  CUcontext context_;
};

class CudaHooks final : public DeviceHooks {
 public:
  explicit CudaHooks(const Driver& d) : d_(d) {
    int count = 0;
    d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    KILN_CHECK_KIND(count > 0, ErrorKind::NotImplemented, "no CUDA device: the driver ({}, CUDA {}.{}) sees no GPU",
                    d.path, d.version / 1000, d.version % 1000 / 10);
    for (int i = 0; i < count; ++i) {
      PerDevice& p = devices_.emplace_back();
      d.check(d.cuDeviceGet(&p.device, i), "cuDeviceGet");
      DeviceProperties& props = p.properties;
      char name[256] = {};
      d.check(d.cuDeviceGetName(name, sizeof name - 1, p.device), "cuDeviceGetName");
      props.name = name;
      auto attribute = [&](Attribute a) {
        int v = 0;
        d.check(d.cuDeviceGetAttribute(&v, static_cast<int>(a), p.device), "cuDeviceGetAttribute");
        return v;
      };
      props.major = attribute(Attribute::ComputeCapabilityMajor);
      props.minor = attribute(Attribute::ComputeCapabilityMinor);
      props.multiprocessors = attribute(Attribute::MultiprocessorCount);
      props.warp_size = attribute(Attribute::WarpSize);
      props.max_threads_per_block = attribute(Attribute::MaxThreadsPerBlock);
      props.max_shared_memory_per_block = attribute(Attribute::MaxSharedMemoryPerBlockOptin);
      d.check(d.cuDeviceTotalMem(&props.total_memory, p.device), "cuDeviceTotalMem");
    }
  }

  int device_count() const override { return static_cast<int>(devices_.size()); }
  int current_device() const override { return current_; }
  void set_current_device(int index) override {
    KILN_CHECK_INDEX(index >= 0 && index < device_count(), "set_device: no device cuda:{} ({} CUDA devices)", index,
                     device_count());
    current_ = index;
  }

  CachingAllocator* allocator(int index) override {
    PerDevice& p = at(index);
    std::call_once(p.allocator_once, [&] {
      p.allocator = std::make_unique<CachingAllocator>(Device(DeviceType::CUDA, static_cast<int8_t>(index)),
                                                       std::make_unique<DeviceMemory>(d_, context(index)));
    });
    return p.allocator.get();
  }

  void copy(void* dst, Device to, const void* src, Device from, size_t nbytes) override {
    auto address = [](const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); };
    if (to.is_cuda() && from.is_cuda() && to.index != from.index) {
      d_.check(d_.cuMemcpyPeer(address(dst), context(to.index), address(src), context(from.index), nbytes),
               fmt::format("copying {} bytes from {} to {}", nbytes, from, to));
      return;
    }
    // Unified addressing: one call for every direction; with pageable host memory it returns when
    // the copy is done.
    d_.check(d_.cuCtxSetCurrent(context(to.is_cuda() ? to.index : from.index)), "cuCtxSetCurrent");
    d_.check(d_.cuMemcpy(address(dst), address(src), nbytes),
             fmt::format("copying {} bytes from {} to {}", nbytes, from, to));
  }

  void synchronize(int index) override {
    d_.check(d_.cuCtxSetCurrent(context(index)), "cuCtxSetCurrent");
    d_.check(d_.cuCtxSynchronize(), fmt::format("synchronizing cuda:{}", index));
  }

  std::string describe() const override {
    std::string out = fmt::format("CUDA driver {}.{} ({})", d_.version / 1000, d_.version % 1000 / 10, d_.path);
    for (size_t i = 0; i < devices_.size(); ++i) {
      const DeviceProperties& p = devices_[i].properties;
      out += fmt::format("; cuda:{} {} (sm_{}{}, {} SMs, {:.1f} GiB)", i, p.name, p.major, p.minor, p.multiprocessors,
                         static_cast<double>(p.total_memory) / (1 << 30));
    }
    return out;
  }

  const DeviceProperties& properties(int index) { return at(index).properties; }
  void make_current(int index) { d_.check(d_.cuCtxSetCurrent(context(index)), "cuCtxSetCurrent"); }

 private:
  struct PerDevice {
    CUdevice device = 0;
    DeviceProperties properties;
    std::once_flag context_once, allocator_once;
    CUcontext context = nullptr;
    std::unique_ptr<CachingAllocator> allocator;
  };

  PerDevice& at(int index) {
    KILN_CHECK_INDEX(index >= 0 && index < device_count(), "no device cuda:{} ({} CUDA devices)", index,
                     device_count());
    return devices_[static_cast<size_t>(index)];
  }
  // The device's primary context, retained at first use (as the runtime API does).
  CUcontext context(int index) {
    PerDevice& p = at(index);
    std::call_once(p.context_once,
                   [&] { d_.check(d_.cuDevicePrimaryCtxRetain(&p.context, p.device), "cuDevicePrimaryCtxRetain"); });
    return p.context;
  }

  const Driver& d_;
  std::deque<PerDevice> devices_;  // PerDevice does not move (its once_flags)
  static thread_local int current_;
};

thread_local int CudaHooks::current_ = 0;

CudaHooks& hooks() {
  auto* h = dynamic_cast<CudaHooks*>(&device_hooks(DeviceType::CUDA, "cuda"));
  KILN_CHECK_KIND(h != nullptr, ErrorKind::Internal, "cuda: the CUDA device hooks are not the driver's (a test's?)");
  return *h;
}

const struct Register {
  Register() {
    register_device_loader(DeviceType::CUDA, [] { return std::make_unique<CudaHooks>(driver()); });
  }
} kRegister;

}  // namespace

CachingAllocator& device_allocator(int index) { return *hooks().allocator(index); }
const DeviceProperties& device_properties(int index) { return hooks().properties(index); }
void make_current(int index) { hooks().make_current(index); }

}  // namespace kiln::cuda
