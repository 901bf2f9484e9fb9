// Per-thread scratch for generated kernels, kept by kiln rather than by the kernels' module: the
// runtime hands `thread_scratch` to every module it loads (kernel_support.h's kiln_bind_scratch).
// A thread_local in a dlopen'ed module lives in its dynamic TLS, which LeakSanitizer's exit-time
// scan of threads misread (a bogus range, then SIGSEGV) for some of kiln's packages.
#pragma once

#include <cstddef>

namespace kiln::compiler {

// `bytes` bytes (at least 1), 64-byte aligned, of the calling thread's region `slot`. A region
// grows when a longer row asks for it and lives as long as its thread, so a warm call allocates
// nothing; the pointer stays valid until this thread asks for the same slot again. Under
// AddressSanitizer each call gets exactly `bytes`, so reads past a row are still caught.
void* thread_scratch(int slot, size_t bytes);

}  // namespace kiln::compiler
