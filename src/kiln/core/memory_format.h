// MemoryFormat and Layout: the two remaining tensor-option enums of PyTorch's schemas.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast, Preserve };
enum class Layout : uint8_t { Strided };

std::string_view memory_format_name(MemoryFormat f);
// Accepts PyTorch's schema spellings: contiguous_format, channels_last, preserve_format.
std::optional<MemoryFormat> parse_memory_format(std::string_view name);

}  // namespace kiln
