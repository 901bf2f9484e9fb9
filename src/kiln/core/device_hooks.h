// What core needs of a device it does not know: memory per device index, byte copies between that
// device and the host (or another of its devices), ordering, and which index "cuda" means. The CPU
// and meta need no hooks. A device layer (cuda/) registers a loader for its device type; the loader
// runs once, at the first use of such a device, and returns the hooks or throws a kiln::Error saying
// why there are none (no driver, no device). Every later use reports that reason, so one kiln build
// runs on machines with and without a GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/core/allocator.h"
#include "kiln/core/device.h"

namespace kiln {

class DeviceHooks {
 public:
  virtual ~DeviceHooks() = default;
  // How many devices of the type there are (at least 1: a loader that finds none throws).
  virtual int device_count() const = 0;
  // The index that a device without one ("cuda") means, per thread, and changing it.
  virtual int current_device() const = 0;
  virtual void set_current_device(int index) = 0;
  // The allocator of device `index` (0 <= index < device_count()).
  virtual Allocator* allocator(int index) = 0;
  // Copies `nbytes` from `src` on `from` to `dst` on `to`: one of them is a device of this type
  // (with an explicit index), the other one too or the CPU. Ordered after the work already queued on
  // the devices; when `to` is the CPU it returns once the host may read `dst`.
  virtual void copy(void* dst, Device to, const void* src, Device from, size_t nbytes) = 0;
  // Waits until the work queued on device `index` is done.
  virtual void synchronize(int index) = 0;
  // One line for `kiln --version` and errors: the library loaded, its version, the devices.
  virtual std::string describe() const = 0;
};

// Builds the hooks of a device type; throws kiln::Error saying why the type cannot be used.
using DeviceHooksLoader = std::function<std::unique_ptr<DeviceHooks>()>;

// Registers the loader of `type`'s hooks (a device layer does this at static initialization; nothing
// is loaded until the first use). A later registration replaces an earlier one that has not run.
void register_device_loader(DeviceType type, DeviceHooksLoader loader);

// The hooks of `type`, loaded at the first call. When there are none, a kiln::Error whose message
// begins with `what` (the op or function asking) and says why ("no CUDA device: ...").
DeviceHooks& device_hooks(DeviceType type, std::string_view what);

// Whether `type`'s hooks load (never throws), and the reason they do not ("" when they do).
bool device_available(DeviceType type);
std::string device_unavailable_reason(DeviceType type);

// `d` with an explicit index: "cuda" is the current CUDA device, and an index past the devices
// present is a kiln::Error naming `what`. CPU and meta devices come back as they are.
Device resolve_device(Device d, std::string_view what);

// Copies `nbytes` between any two places with data (the CPU, or devices with hooks; a copy between
// two CPU places is a memcpy). `what` names the caller in errors.
void copy_bytes(void* dst, Device to, const void* src, Device from, size_t nbytes, std::string_view what);

// Waits for the queued work of `d` (nothing for the CPU and meta).
void synchronize_device(Device d);

// Tests: replaces `type`'s hooks with `hooks` (a fake device backed by host memory, say), or with
// nullptr goes back to the registered loader, run again at the next use. Returns the hooks it replaced.
std::unique_ptr<DeviceHooks> replace_device_hooks_for_testing(DeviceType type, std::unique_ptr<DeviceHooks> hooks);

}  // namespace kiln
