#include "kiln/core/broadcast.h"

#include <algorithm>

#include "kiln/support/error.h"

namespace kiln {

Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Walk from the last dimension; a missing leading dimension acts as size 1.
    int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    KILN_CHECK(sa == sb || sa == 1 || sb == 1,
               "{}: the size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {} "
               "(sizes {} and {})",
               op, sa, sb, static_cast<int64_t>(n - 1 - i), a, b);
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

bool broadcasts_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i];
    if (f != 1 && f != to[to.size() - 1 - i]) return false;
  }
  return true;
}

}  // namespace kiln
