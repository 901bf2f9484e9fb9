// IntArrayRef: a non-owning view of int64 values (sizes, strides, dims) that accepts braces,
// vectors, SmallVectors and a single integer, as PyTorch's IntArrayRef does. Shape: the owning,
// inline-stored vector for sizes and strides.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "kiln/support/small_vector.h"

namespace kiln {

using Shape = SmallVector<int64_t, 6>;

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}  // NOLINT
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
// Braces bind to a temporary that lives until the end of the full expression, which covers any
// call taking an IntArrayRef argument (the same contract as PyTorch's and LLVM's ArrayRef).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<int64_t> il) : data_(il.begin()), size_(il.size()) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  template <size_t N>
  IntArrayRef(const SmallVector<int64_t, N>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  IntArrayRef(std::span<const int64_t> s) : data_(s.data()), size_(s.size()) {}        // NOLINT

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  constexpr int64_t back() const { return data_[size_ - 1]; }
  IntArrayRef slice(size_t start, size_t n) const { return {data_ + start, n}; }
  IntArrayRef slice(size_t start) const { return {data_ + start, size_ - start}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  Shape shape() const { return Shape(begin(), end()); }
  bool equals(IntArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i) {
      if (data_[i] != o.data_[i]) return false;
    }
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln

template <>
struct fmt::formatter<kiln::IntArrayRef> : fmt::formatter<std::string_view> {
  auto format(kiln::IntArrayRef a, fmt::format_context& ctx) const {
    auto out = ctx.out();
    *out++ = '[';
    for (size_t i = 0; i < a.size(); ++i) {
      if (i) out = fmt::format_to(out, ", ");
      out = fmt::format_to(out, "{}", a[i]);
    }
    *out++ = ']';
    return out;
  }
};
template <>
struct fmt::formatter<kiln::Shape> : fmt::formatter<kiln::IntArrayRef> {
  auto format(const kiln::Shape& s, fmt::format_context& ctx) const {
    return fmt::formatter<kiln::IntArrayRef>::format(kiln::IntArrayRef(s), ctx);
  }
};
