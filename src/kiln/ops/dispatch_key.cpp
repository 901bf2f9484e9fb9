#include "kiln/ops/dispatch_key.h"

namespace kiln {

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::Functionalize: return "Functionalize";
    case DispatchKey::Trace: return "Trace";
  }
  return "?";
}

DispatchKey backend_key(Device d) {
  switch (d.type) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::CUDA: return DispatchKey::CUDA;
    case DeviceType::Meta: return DispatchKey::Meta;
  }
  return DispatchKey::CPU;
}

LocalDispatchKeys& local_dispatch_keys() {
  thread_local LocalDispatchKeys keys;
  return keys;
}

ExcludeDispatchKeys::ExcludeDispatchKeys(DispatchKeySet keys) : saved_(local_dispatch_keys().excluded) {
  local_dispatch_keys().excluded = saved_ | keys;
}
ExcludeDispatchKeys::~ExcludeDispatchKeys() { local_dispatch_keys().excluded = saved_; }

IncludeDispatchKeys::IncludeDispatchKeys(DispatchKeySet keys) : saved_(local_dispatch_keys().included) {
  local_dispatch_keys().included = saved_ | keys;
}
IncludeDispatchKeys::~IncludeDispatchKeys() { local_dispatch_keys().included = saved_; }

}  // namespace kiln
