// Conversions between C++ values and boxed Values: `box` for the typed API's calls, `Unbox<T>`
// and `push_result` for kernels written as typed C++ functions, and BoxedFunction<Fn>, which turns
// such a function into a BoxedKernel.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/ops/dispatcher.h"
#include "kiln/ops/value.h"

namespace kiln::detail {

// ---- C++ -> Value
inline Value box(const Value& v) { return v; }
inline Value box(std::nullopt_t) { return Value(); }
inline Value box(const Tensor& t) { return Value(t); }
inline Value box(const Scalar& s) { return Value(s); }
inline Value box(int64_t v) { return Value(v); }
inline Value box(int v) { return Value(int64_t{v}); }
inline Value box(double v) { return Value(v); }
inline Value box(bool v) { return Value(v); }
inline Value box(IntArrayRef a) { return Value(a.vec()); }
inline Value box(std::string_view s) { return Value(std::string(s)); }
inline Value box(DType t) { return Value(t); }
inline Value box(Device d) { return Value(d); }
inline Value box(MemoryFormat m) { return Value(m); }
inline Value box(std::span<const Tensor> ts) { return Value(std::vector<Tensor>(ts.begin(), ts.end())); }
template <class T>
Value box(const std::optional<T>& o) {
  return o ? box(*o) : Value();
}

template <class... Args>
Stack box_all(const Args&... args) {
  Stack s;
  s.reserve(sizeof...(Args));
  (s.push_back(box(args)), ...);
  return s;
}

// ---- Value -> C++ (views into the Value stay valid while it is on the stack)
template <class T>
struct Unbox;
template <>
struct Unbox<Tensor> {
  static const Tensor& get(const Value& v) { return v.to_tensor(); }
};
// An argument a kernel takes as it comes (a Generator?, say).
template <>
struct Unbox<Value> {
  static const Value& get(const Value& v) { return v; }
};
template <>
struct Unbox<int64_t> {
  static int64_t get(const Value& v) { return v.to_int(); }
};
template <>
struct Unbox<double> {
  static double get(const Value& v) { return v.to_double(); }
};
template <>
struct Unbox<bool> {
  static bool get(const Value& v) { return v.to_bool(); }
};
template <>
struct Unbox<Scalar> {
  static Scalar get(const Value& v) { return v.to_scalar(); }
};
template <>
struct Unbox<std::string_view> {
  static std::string_view get(const Value& v) { return v.to_string_value(); }
};
template <>
struct Unbox<IntArrayRef> {
  static IntArrayRef get(const Value& v) { return v.to_int_list(); }
};
template <>
struct Unbox<std::span<const Tensor>> {
  static std::span<const Tensor> get(const Value& v) { return v.to_tensor_list(); }
};
template <>
struct Unbox<std::vector<std::optional<Tensor>>> {
  static const std::vector<std::optional<Tensor>>& get(const Value& v) { return v.to_optional_tensor_list(); }
};
template <>
struct Unbox<std::vector<bool>> {
  static const std::vector<bool>& get(const Value& v) { return v.to_bool_list(); }
};
template <>
struct Unbox<std::vector<double>> {
  static const std::vector<double>& get(const Value& v) { return v.to_double_list(); }
};
template <>
struct Unbox<DType> {
  static DType get(const Value& v) { return v.to_dtype(); }
};
template <>
struct Unbox<Device> {
  static Device get(const Value& v) { return v.to_device(); }
};
template <>
struct Unbox<Layout> {
  static Layout get(const Value& v) { return v.to_layout(); }
};
template <>
struct Unbox<MemoryFormat> {
  static MemoryFormat get(const Value& v) { return v.to_memory_format(); }
};
template <class T>
struct Unbox<std::optional<T>> {
  static std::optional<T> get(const Value& v) {
    if (v.is_none()) return std::nullopt;
    return T(Unbox<T>::get(v));
  }
};

// ---- results -> stack
inline void push_result(Stack& s, Tensor t) { s.emplace_back(std::move(t)); }
// An absent result (a backward's output masked off by output_mask): None, as PyTorch's undefined
// tensor reads in Python.
inline void push_result(Stack& s, std::optional<Tensor> t) {
  if (t) s.emplace_back(std::move(*t));
  else s.emplace_back();
}
inline void push_result(Stack& s, std::vector<Tensor> ts) { s.emplace_back(std::move(ts)); }
inline void push_result(Stack& s, const Scalar& v) { s.emplace_back(v); }
inline void push_result(Stack& s, int64_t v) { s.emplace_back(v); }
inline void push_result(Stack& s, bool v) { s.emplace_back(v); }
template <class... Ts>
void push_result(Stack& s, std::tuple<Ts...> t) {
  std::apply([&](auto&&... xs) { (push_result(s, std::move(xs)), ...); }, std::move(t));
}

// ---- stack -> typed results (for the typed API)
template <class R>
struct Result {
  static R take(Stack& s) { return Unbox<R>::get(s.at(0)); }
};
template <>
struct Result<std::vector<Tensor>> {
  static std::vector<Tensor> take(Stack& s) { return s.at(0).to_tensor_list(); }
};
template <class... Ts>
struct Result<std::tuple<Ts...>> {
  static std::tuple<Ts...> take(Stack& s) { return take_at(s, std::index_sequence_for<Ts...>{}); }
  template <size_t... I>
  static std::tuple<Ts...> take_at(Stack& s, std::index_sequence<I...>) {
    return std::tuple<Ts...>(Unbox<Ts>::get(s.at(I))...);
  }
};

// Calls `op` through the dispatcher with typed arguments and returns the typed result.
template <class R, class... Args>
R call(OpHandle op, const Args&... args) {
  Stack s = box_all(args...);
  call_op(op, s);
  return Result<R>::take(s);
}

// Wraps a typed kernel `Fn` (a function pointer) as a boxed kernel.
template <auto Fn>
struct BoxedFunction;
template <class R, class... Args, R (*Fn)(Args...)>
struct BoxedFunction<Fn> {
  static void run(Stack& s) {
    KILN_ASSERT(s.size() == sizeof...(Args));
    if constexpr (std::is_void_v<R>) {
      invoke(s, std::index_sequence_for<Args...>{});
      s.clear();
    } else {
      R r = invoke(s, std::index_sequence_for<Args...>{});
      s.clear();
      push_result(s, std::move(r));
    }
  }
  template <size_t... I>
  static R invoke(Stack& s, std::index_sequence<I...>) {
    return Fn(Unbox<std::remove_cvref_t<Args>>::get(s[I])...);
  }
};

template <auto Fn>
BoxedKernel boxed() {
  return &BoxedFunction<Fn>::run;
}

}  // namespace kiln::detail
