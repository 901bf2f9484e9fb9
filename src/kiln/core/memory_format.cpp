#include "kiln/core/memory_format.h"

namespace kiln {

std::string_view memory_format_name(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous: return "contiguous_format";
    case MemoryFormat::ChannelsLast: return "channels_last";
    case MemoryFormat::Preserve: return "preserve_format";
  }
  return "?";
}

std::optional<MemoryFormat> parse_memory_format(std::string_view name) {
  if (name == "contiguous_format") return MemoryFormat::Contiguous;
  if (name == "channels_last") return MemoryFormat::ChannelsLast;
  if (name == "preserve_format") return MemoryFormat::Preserve;
  return std::nullopt;
}

}  // namespace kiln
