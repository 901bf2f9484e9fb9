// kiln::Error: the one exception type kiln throws for bad input (shapes, dtypes, arguments, files)
// and broken invariants. Its message names the op or node, the argument and the sizes, so a user
// can read it; its kind mirrors the Python exception PyTorch would raise.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln {

// Which class of mistake an Error reports (PyTorch raises the Python exception of the same name).
enum class ErrorKind {
  Value,           // an argument has a bad value or size (ValueError / RuntimeError in PyTorch)
  Index,           // a dimension or index is out of range (IndexError)
  Type,            // wrong dtype, or wrong type of a boxed argument (TypeError)
  NotImplemented,  // the combination is valid but kiln has no kernel for it
  Internal,        // a kiln invariant broke: a bug in kiln, never the user's input
};

std::string_view error_kind_name(ErrorKind kind);

class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}
  ErrorKind kind() const { return kind_; }
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  std::string message_;
};

namespace detail {
[[noreturn]] void throw_error(ErrorKind kind, std::string message);
}  // namespace detail

}  // namespace kiln

// Throws kiln::Error of kind Value with a fmt-formatted message when `cond` is false.
#define KILN_CHECK(cond, ...) KILN_CHECK_KIND(cond, ::kiln::ErrorKind::Value, __VA_ARGS__)
#define KILN_CHECK_INDEX(cond, ...) KILN_CHECK_KIND(cond, ::kiln::ErrorKind::Index, __VA_ARGS__)
#define KILN_CHECK_TYPE(cond, ...) KILN_CHECK_KIND(cond, ::kiln::ErrorKind::Type, __VA_ARGS__)
#define KILN_CHECK_KIND(cond, kind, ...)                               \
  do {                                                                 \
    if (!(cond)) [[unlikely]] {                                        \
      ::kiln::detail::throw_error((kind), ::fmt::format(__VA_ARGS__)); \
    }                                                                  \
  } while (0)
// Throws unconditionally.
#define KILN_FAIL(kind, ...) ::kiln::detail::throw_error((kind), ::fmt::format(__VA_ARGS__))
// An internal invariant; failing it is a kiln bug, reported as an Error rather than an abort.
#define KILN_ASSERT(cond) \
  KILN_CHECK_KIND(cond, ::kiln::ErrorKind::Internal, "internal error: {} ({}:{})", #cond, __FILE__, __LINE__)
