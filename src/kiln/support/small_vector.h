// SmallVector<T, N>: a vector of trivially copyable T that keeps up to N elements inline and
// spills to the heap beyond. Tensor sizes and strides live here, so most tensors allocate no
// metadata on the heap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>

namespace kiln {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable types");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() = default;
  explicit SmallVector(size_t n, T value = T()) { assign(n, value); }
  SmallVector(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  SmallVector(std::span<const T> s) { assign(s.begin(), s.end()); }
  template <class It>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  ~SmallVector() { release(); }

  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }

  template <class It>
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void assign(size_t n, T value) {
    size_ = 0;
    reserve(n);
    std::fill_n(data_, n, value);
    size_ = n;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void push_back(T v) {
    if (size_ == capacity_) reserve(capacity_ * 2);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }
  void resize(size_t n, T value = T()) {
    reserve(n);
    if (n > size_) std::fill(data_ + size_, data_ + n, value);
    size_ = n;
  }
  void insert(T* pos, T v) {
    size_t i = static_cast<size_t>(pos - data_);
    push_back(v);
    std::rotate(data_ + i, data_ + size_ - 1, data_ + size_);
  }
  void erase(T* pos) {
    std::copy(pos + 1, end(), pos);
    --size_;
  }
  void reserve(size_t n) {
    if (n <= capacity_) return;
    T* fresh = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!fresh) throw std::bad_alloc();
    if (size_) std::memcpy(static_cast<void*>(fresh), data_, size_ * sizeof(T));
    release();
    data_ = fresh;
    capacity_ = n;
  }

  operator std::span<const T>() const { return {data_, size_}; }
  bool operator==(const SmallVector& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

 private:
  bool is_inline() const { return data_ == reinterpret_cast<const T*>(inline_); }
  void release() {
    if (!is_inline()) std::free(data_);
    data_ = reinterpret_cast<T*>(inline_);
    capacity_ = N;
  }
  void steal(SmallVector& o) {
    if (o.is_inline()) {
      data_ = reinterpret_cast<T*>(inline_);
      capacity_ = N;
      std::memcpy(static_cast<void*>(data_), o.data_, o.size_ * sizeof(T));
    } else {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = reinterpret_cast<T*>(o.inline_);
      o.capacity_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = reinterpret_cast<T*>(inline_);
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace kiln
