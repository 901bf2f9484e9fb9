// Tests only: writes pickle opcodes by hand, so that tests can make exactly the (often malformed)
// streams they need, and torch.save's tensor pattern with any arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace kiln::testing {

class PickleWriter {
 public:
  PickleWriter& op(uint8_t code) {
    bytes_ += static_cast<char>(code);
    return *this;
  }
  PickleWriter& raw(std::string_view s) {
    bytes_ += s;
    return *this;
  }
  PickleWriter& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_ += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  PickleWriter& proto(int p = 2) { return op(0x80).op(static_cast<uint8_t>(p)); }
  PickleWriter& stop() { return op('.'); }
  PickleWriter& mark() { return op('('); }
  PickleWriter& tuple() { return op('t'); }
  PickleWriter& none() { return op('N'); }
  PickleWriter& boolean(bool b) { return op(b ? 0x88 : 0x89); }
  // An int in the shortest of BININT1 / BININT / LONG1, as Python writes it.
  PickleWriter& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<uint8_t>(v));
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').le(static_cast<uint64_t>(v), 4);
    return op(0x8a).op(8).le(static_cast<uint64_t>(v), 8);
  }
  PickleWriter& str(std::string_view s) { return op('X').le(s.size(), 4).raw(s); }
  PickleWriter& global(std::string_view module, std::string_view name) {
    return op('c').raw(module).raw("\n").raw(name).raw("\n");
  }
  PickleWriter& put(uint8_t i) { return op('q').op(i); }
  PickleWriter& get(uint8_t i) { return op('h').op(i); }
  PickleWriter& ints(std::initializer_list<int64_t> vs) {
    mark();
    for (int64_t v : vs) integer(v);
    return tuple();
  }
  // The persistent id torch.save writes for a storage: ('storage', torch.<cls>, key, 'cpu', numel).
  PickleWriter& storage(std::string_view module, std::string_view cls, std::string_view key, int64_t numel) {
    mark().str("storage").global(module, cls).str(key).str("cpu").integer(numel).tuple();
    return op('Q');
  }
  // _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()) over a typed storage.
  PickleWriter& tensor_v2(std::string_view cls, std::string_view key, int64_t numel, int64_t offset,
                          std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    storage("torch", cls, key, numel).integer(offset).ints(sizes).ints(strides).boolean(false);
    global("collections", "OrderedDict").op(')').op('R');
    return tuple().op('R');
  }

  const std::string& bytes() const { return bytes_; }
  std::span<const std::byte> span() const { return {reinterpret_cast<const std::byte*>(bytes_.data()), bytes_.size()}; }

 private:
  std::string bytes_;
};

inline std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace kiln::testing
