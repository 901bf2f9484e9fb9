// Dispatch keys, in priority order from lowest to highest. Backends (Meta, CPU, CUDA) run kernels;
// the keys above them (Autograd, Functionalize, Trace) wrap a call and redispatch below themselves.
// A call runs the kernel of the highest key in its key set: the backends of its tensor arguments,
// plus the thread's included keys, minus its excluded keys.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

#include "kiln/core/device.h"

namespace kiln {

enum class DispatchKey : uint8_t { Meta, CPU, CUDA, Autograd, Functionalize, Trace };
inline constexpr int kNumDispatchKeys = 6;
inline constexpr DispatchKey kBackendKeys[] = {DispatchKey::Meta, DispatchKey::CPU, DispatchKey::CUDA};

std::string_view dispatch_key_name(DispatchKey k);
constexpr bool is_backend_key(DispatchKey k) { return k <= DispatchKey::CUDA; }
DispatchKey backend_key(Device d);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(bit(k)) {}
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool has(DispatchKey k) const { return bits_ & bit(k); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr DispatchKeySet with(DispatchKey k) const { return from_bits(bits_ | bit(k)); }
  // The highest-priority key; the set must not be empty.
  DispatchKey highest() const { return static_cast<DispatchKey>(31 - std::countl_zero(bits_)); }
  // The keys of lower priority than `k`.
  constexpr DispatchKeySet below(DispatchKey k) const { return from_bits(bits_ & (bit(k) - 1)); }
  constexpr bool operator==(const DispatchKeySet&) const = default;

 private:
  static constexpr uint32_t bit(DispatchKey k) { return 1u << static_cast<unsigned>(k); }
  static constexpr DispatchKeySet from_bits(uint32_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

// Thread-local keys added to (included) or removed from (excluded) every call's key set.
struct LocalDispatchKeys {
  DispatchKeySet included;
  DispatchKeySet excluded;
};
LocalDispatchKeys& local_dispatch_keys();

// RAII: while alive, `keys` are excluded from dispatch on this thread.
class ExcludeDispatchKeys {
 public:
  explicit ExcludeDispatchKeys(DispatchKeySet keys);
  ~ExcludeDispatchKeys();
  ExcludeDispatchKeys(const ExcludeDispatchKeys&) = delete;
  ExcludeDispatchKeys& operator=(const ExcludeDispatchKeys&) = delete;

 private:
  DispatchKeySet saved_;
};

// RAII: while alive, `keys` are included in dispatch on this thread.
class IncludeDispatchKeys {
 public:
  explicit IncludeDispatchKeys(DispatchKeySet keys);
  ~IncludeDispatchKeys();
  IncludeDispatchKeys(const IncludeDispatchKeys&) = delete;
  IncludeDispatchKeys& operator=(const IncludeDispatchKeys&) = delete;

 private:
  DispatchKeySet saved_;
};

}  // namespace kiln
