// Device: where a tensor's memory lives. `cpu`, `cuda:N`, and `meta` (sizes and strides only, no
// data: what tracing and shape inference run on).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace kiln {

enum class DeviceType : uint8_t { CPU, CUDA, Meta };

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;  // -1: the current device of that type

  constexpr Device() = default;
  constexpr Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}  // NOLINT: Device(kCPU)
  // Parses "cpu", "meta", "cuda", "cuda:1"; throws kiln::Error otherwise.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_meta() const { return type == DeviceType::Meta; }
  std::string to_string() const;
  bool operator==(const Device&) const = default;
};

inline constexpr Device kCPU{DeviceType::CPU};
inline constexpr Device kMeta{DeviceType::Meta};

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Device> : fmt::formatter<std::string> {
  auto format(const kiln::Device& d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(d.to_string(), ctx);
  }
};
