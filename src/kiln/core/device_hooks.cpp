#include "kiln/core/device_hooks.h"

#include <array>
#include <cstring>
#include <mutex>

#include "kiln/support/error.h"

namespace kiln {
namespace {

// The state of one device type: its loader, and once it ran, its hooks or why there are none.
struct Slot {
  DeviceHooksLoader loader;
  bool loaded = false;
  std::unique_ptr<DeviceHooks> hooks;
  std::string reason;  // why `hooks` is null after loading
};

struct Registry {
  std::mutex mu;
  std::array<Slot, 3> slots;  // by DeviceType
};

Registry& registry() {
  // Never destroyed: storages freed during static destruction still reach their device.
  static auto* r = new Registry();
  return *r;
}

std::string_view type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "CPU";
    case DeviceType::CUDA: return "CUDA";
    case DeviceType::Meta: return "meta";
  }
  return "?";
}

// Runs the loader once; the caller holds the registry's lock.
DeviceHooks* load(Slot& s, DeviceType type) {
  if (!s.loaded) {
    s.loaded = true;
    if (!s.loader) {
      s.reason = fmt::format("no {} device: this kiln has no {} support", type_name(type), type_name(type));
    } else {
      try {
        s.hooks = s.loader();
        if (!s.hooks) s.reason = fmt::format("no {} device", type_name(type));
      } catch (const Error& e) {
        s.reason = e.what();
      } catch (const std::exception& e) {
        s.reason = fmt::format("no {} device: {}", type_name(type), e.what());
      }
    }
  }
  return s.hooks.get();
}

Slot& slot(Registry& r, DeviceType type) { return r.slots.at(static_cast<size_t>(type)); }

}  // namespace

void register_device_loader(DeviceType type, DeviceHooksLoader loader) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  Slot& s = slot(r, type);
  if (s.loaded) return;
  s.loader = std::move(loader);
}

DeviceHooks& device_hooks(DeviceType type, std::string_view what) {
  KILN_CHECK(type != DeviceType::CPU && type != DeviceType::Meta, "{}: the {} device has no device hooks", what,
             type_name(type));
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  Slot& s = slot(r, type);
  DeviceHooks* h = load(s, type);
  if (!h) KILN_FAIL(ErrorKind::NotImplemented, "{}: {}", what, s.reason);
  return *h;
}

bool device_available(DeviceType type) {
  if (type == DeviceType::CPU || type == DeviceType::Meta) return true;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return load(slot(r, type), type) != nullptr;
}

std::string device_unavailable_reason(DeviceType type) {
  if (type == DeviceType::CPU || type == DeviceType::Meta) return "";
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  Slot& s = slot(r, type);
  return load(s, type) ? "" : s.reason;
}

Device resolve_device(Device d, std::string_view what) {
  if (d.type == DeviceType::CPU || d.type == DeviceType::Meta) return d;
  DeviceHooks& h = device_hooks(d.type, what);
  int count = h.device_count();
  if (d.index < 0) return Device(d.type, static_cast<int8_t>(h.current_device()));
  KILN_CHECK_KIND(d.index < count, ErrorKind::Index, "{}: device {} does not exist ({} {} device{})", what, d, count,
                  type_name(d.type), count == 1 ? "" : "s");
  return d;
}

void copy_bytes(void* dst, Device to, const void* src, Device from, size_t nbytes, std::string_view what) {
  if (nbytes == 0) return;
  KILN_CHECK(!to.is_meta() && !from.is_meta(), "{}: cannot copy {} bytes from {} to {}: a meta tensor has no data",
             what, nbytes, from, to);
  if (to.is_cpu() && from.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  DeviceType type = to.is_cpu() ? from.type : to.type;
  KILN_CHECK(to.is_cpu() || from.is_cpu() || to.type == from.type, "{}: cannot copy from {} to {}", what, from, to);
  device_hooks(type, what).copy(dst, resolve_device(to, what), src, resolve_device(from, what), nbytes);
}

void synchronize_device(Device d) {
  if (d.is_cpu() || d.is_meta()) return;
  Device r = resolve_device(d, "synchronize");
  device_hooks(d.type, "synchronize").synchronize(r.index);
}

std::unique_ptr<DeviceHooks> replace_device_hooks_for_testing(DeviceType type, std::unique_ptr<DeviceHooks> hooks) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  Slot& s = slot(r, type);
  std::unique_ptr<DeviceHooks> old = std::move(s.hooks);
  s.hooks = std::move(hooks);
  s.loaded = s.hooks != nullptr;
  s.reason.clear();
  return old;
}

}  // namespace kiln
