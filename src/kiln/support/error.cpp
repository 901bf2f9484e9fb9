#include "kiln/support/error.h"

namespace kiln {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Value: return "ValueError";
    case ErrorKind::Index: return "IndexError";
    case ErrorKind::Type: return "TypeError";
    case ErrorKind::NotImplemented: return "NotImplementedError";
    case ErrorKind::Internal: return "InternalError";
  }
  return "Error";
}

namespace detail {
void throw_error(ErrorKind kind, std::string message) { throw Error(kind, std::move(message)); }
}  // namespace detail

}  // namespace kiln
