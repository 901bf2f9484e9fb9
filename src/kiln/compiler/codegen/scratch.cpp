#include "kiln/compiler/codegen/scratch.h"

#include <memory>
#include <new>
#include <vector>

namespace kiln::compiler {
namespace {

struct Free {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(64)); }
};

struct Region {
  std::unique_ptr<void, Free> data;
  size_t bytes = 0;
};

}  // namespace

void* thread_scratch(int slot, size_t bytes) {
  thread_local std::vector<Region> regions;
  if (bytes == 0) bytes = 1;
  auto index = static_cast<size_t>(slot);
  if (regions.size() <= index) regions.resize(index + 1);
  Region& r = regions[index];
#if defined(__SANITIZE_ADDRESS__)
  bool refit = r.bytes != bytes;
#else
  bool refit = r.bytes < bytes;
#endif
  if (refit) {
    r.data.reset();
    r.data.reset(::operator new(bytes, std::align_val_t(64)));
    r.bytes = bytes;
  }
  return r.data.get();
}

}  // namespace kiln::compiler
