#include "guard_page.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "kiln/core/storage.h"
#include "kiln/ops/api.h"
#include "kiln/support/error.h"

namespace kiln::testing {

Tensor against_guard_page(const Tensor& values) {
  Tensor src = values.contiguous();
  const size_t bytes = static_cast<size_t>(src.numel()) * element_size(src.dtype());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t data_pages = (bytes + page - 1) / page;
  const size_t total = (data_pages + 1) * page;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  KILN_CHECK(base != MAP_FAILED, "against_guard_page: mmap of {} bytes failed", total);
  auto* guard = static_cast<char*>(base) + data_pages * page;
  KILN_CHECK(mprotect(guard, page, PROT_NONE) == 0, "against_guard_page: mprotect failed");
  char* data = guard - bytes;  // the last element ends where the guard page begins
  if (bytes > 0) std::memcpy(data, src.data_ptr(), bytes);
  auto storage = StorageImpl::wrap(data, bytes, Device(), [base, total](void*) { munmap(base, total); });
  return make_tensor(storage, src.sizes(), src.strides(), 0, src.dtype());
}

}  // namespace kiln::testing
