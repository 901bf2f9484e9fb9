// The one-time load of a library kiln opens at run time (the driver, NVRTC, cuBLASLt): made at the
// first call, thread-safe; when it fails, its kiln::Error (what was tried) is thrown again at every
// call, so a machine without the library gets the same reason each time.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "kiln/support/error.h"

namespace kiln::cuda {

// `load` is a lambda (each its own type: its own once-state) returning the loaded T.
template <class T, class Load>
const T& load_once(Load load) {
  static std::once_flag once;
  static std::optional<T> value;
  static std::string failure;
  std::call_once(once, [&] {
    try {
      value = load();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!value) KILN_FAIL(ErrorKind::NotImplemented, "{}", failure);
  return *value;
}

}  // namespace kiln::cuda
