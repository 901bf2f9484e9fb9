#include "kiln/core/device.h"

#include <charconv>

#include "kiln/support/error.h"

namespace kiln {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return Device(DeviceType::CPU);
  if (text == "meta") return Device(DeviceType::Meta);
  if (text == "cuda") return Device(DeviceType::CUDA);
  if (text.starts_with("cuda:")) {
    std::string_view digits = text.substr(5);
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0 && index < 128) {
      return Device(DeviceType::CUDA, static_cast<int8_t>(index));
    }
  }
  KILN_FAIL(ErrorKind::Value, "Device: expected 'cpu', 'meta', 'cuda' or 'cuda:N', got '{}'", text);
}

std::string Device::to_string() const {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::Meta: return "meta";
    case DeviceType::CUDA: return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
  }
  return "?";
}

}  // namespace kiln
