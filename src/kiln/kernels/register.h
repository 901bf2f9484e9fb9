// Glue between typed kernels and the registry. A leaf op is usually "structured": a meta function
// computes the output spec from the arguments, and the device implementation fills an output
// allocated from that spec — so the meta function runs on every eager call, and the Meta backend
// (for tracing) comes for free:
//
//   def_structured<&meta::unary_float, &exp_impl>(r, "aten::exp");
//
// Meta functions return TensorSpec (one output) or std::array<TensorSpec, N> (a tuple of N);
// implementations take the arguments followed by the outputs.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "kiln/kernels/meta/spec.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/registry.h"

namespace kiln::kernels {

namespace detail {

// Where a kernel of backend `type` puts its outputs: on the device of its first tensor argument of
// that type, else of its device argument (a factory's), else on the current device of the type.
inline void find_device(DeviceType, std::optional<Device>&) {}
template <class A, class... Rest>
void find_device(DeviceType type, std::optional<Device>& found, const A& a, const Rest&... rest) {
  using T = std::decay_t<A>;
  if constexpr (std::is_same_v<T, Tensor>) {
    if (!found && a.defined() && a.device().type == type) found = a.device();
  } else if constexpr (std::is_same_v<T, std::optional<Device>>) {
    if (!found && a && a->type == type) found = *a;
  }
  find_device(type, found, rest...);
}
template <class... Args>
Device output_device(DeviceType type, const Args&... args) {
  if (type != DeviceType::CUDA) return Device(type);
  std::optional<Device> found;
  find_device(type, found, args...);
  return found.value_or(Device(type));
}

template <auto MetaFn, auto ImplFn, class Sig = decltype(MetaFn)>
struct Structured;

// One output.
template <auto MetaFn, auto ImplFn, class... Args>
struct Structured<MetaFn, ImplFn, meta::TensorSpec (*)(Args...)> {
  static Tensor on_meta(Args... args) { return meta::allocate(MetaFn(args...), kMeta); }
  template <DeviceType kType>
  static Tensor on_device(Args... args) {
    Tensor out = meta::allocate(MetaFn(args...), output_device(kType, args...));
    ImplFn(args..., out);
    return out;
  }
};

template <size_t N, size_t... I>
auto allocate_all(const std::array<meta::TensorSpec, N>& specs, Device device, std::index_sequence<I...>) {
  return std::make_tuple(Tensor(meta::allocate(specs[I], device))...);
}

// N outputs, returned as a tuple.
template <auto MetaFn, auto ImplFn, size_t N, class... Args>
struct Structured<MetaFn, ImplFn, std::array<meta::TensorSpec, N> (*)(Args...)> {
  static auto on_meta(Args... args) { return allocate_all(MetaFn(args...), kMeta, std::make_index_sequence<N>{}); }
  template <DeviceType kType>
  static auto on_device(Args... args) {
    auto outs = allocate_all(MetaFn(args...), output_device(kType, args...), std::make_index_sequence<N>{});
    std::apply([&](auto&... o) { ImplFn(args..., o...); }, outs);
    return outs;
  }
};

}  // namespace detail

// Registers MetaFn at the Meta key and MetaFn + ImplFn at the CPU key.
template <auto MetaFn, auto ImplFn>
void def_structured(Registry& r, std::string_view op) {
  using S = detail::Structured<MetaFn, ImplFn>;
  r.set_kernel(op, DispatchKey::Meta, kiln::detail::boxed<&S::on_meta>());
  r.set_kernel(op, DispatchKey::CPU, kiln::detail::boxed<&S::template on_device<DeviceType::CPU>>());
}

// Registers MetaFn + ImplFn at one device's key (CPU or CUDA): ImplFn is that device's kernel, and
// fills outputs allocated on the device of the call (detail::output_device).
template <auto MetaFn, auto ImplFn>
void def_structured(Registry& r, std::string_view op, DispatchKey key) {
  using S = detail::Structured<MetaFn, ImplFn>;
  KILN_CHECK(key == DispatchKey::CPU || key == DispatchKey::CUDA, "def_structured: {} is not a device's key",
             dispatch_key_name(key));
  r.set_kernel(op, key,
               key == DispatchKey::CPU ? kiln::detail::boxed<&S::template on_device<DeviceType::CPU>>()
                                       : kiln::detail::boxed<&S::template on_device<DeviceType::CUDA>>());
}

// Registers one typed kernel at one key.
template <auto Fn>
void def_kernel(Registry& r, std::string_view op, DispatchKey key) {
  r.set_kernel(op, key, kiln::detail::boxed<Fn>());
}

// Registers one kernel for CPU and meta tensors: a function that checks, allocates with
// meta::allocate on its input's device and computes only when that device is not meta (or a
// decomposition written against the public API, which runs on meta tensors as it is).
template <auto Fn>
void def_meta_and_cpu(Registry& r, std::string_view op) {
  r.set_kernel(op, DispatchKey::Meta, kiln::detail::boxed<Fn>());
  r.set_kernel(op, DispatchKey::CPU, kiln::detail::boxed<Fn>());
}

// Registers a device-independent kernel (views: only metadata changes) at every backend key.
template <auto Fn>
void def_every_backend(Registry& r, std::string_view op) {
  for (DispatchKey k : kBackendKeys) r.set_kernel(op, k, kiln::detail::boxed<Fn>());
}

}  // namespace kiln::kernels
