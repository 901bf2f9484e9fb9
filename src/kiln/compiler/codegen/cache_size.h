// The size of the machine's last-level cache, for code generation decisions (a kernel whose data
// outgrows it writes its output with streaming stores: kernel_support.h's k_stream_copy).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::compiler {

// Bytes of the highest-level CPU cache cpu0 reports in /sys/devices/system/cpu/cpu0/cache (Linux;
// the L3 of x86 hosts), else sysconf's, else 32 MiB. Read once.
int64_t last_level_cache_bytes();

// "4096K", "32M", "1G" or a plain byte count, as sysfs writes cache sizes; -1 if malformed.
int64_t parse_cache_size(const std::string& text);

}  // namespace kiln::compiler
