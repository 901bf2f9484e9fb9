// The pickle virtual machine (pickle.h). Values on the stack and in the memo live in boxes, so that a
// container stored in the memo and then filled (EMPTY_DICT, BINPUT, ..., SETITEMS: how every dict is
// written) is the same object when read back. A value placed into another container, or passed to a
// call, is copied out of its box (moved when nothing else refers to it); filling a container after it
// was copied is refused, since the copy would be stale (only recursive structures do that). Copies are
// budgeted, so shared references cannot multiply a small pickle into a huge tree, and nesting depth is
// bounded, so recursion over the result cannot overflow the stack.
#include "kiln/import/pickle.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>

namespace kiln {

namespace {

constexpr uint32_t kMaxDepth = 200;                   // nesting of containers
constexpr uint64_t kMaxCopyCost = uint64_t{1} << 24;  // values (or 64-byte string pieces) copied in total

struct OpInfo {
  uint8_t code;
  const char* name;
};
// Every opcode of protocols 0 to 5, so errors name even the ones outside the subset.
constexpr OpInfo kOpNames[] = {
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'M', "BININT2"},
    {'L', "LONG"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8e, "BINBYTES8"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
    {'N', "NONE"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {'V', "UNICODE"},
    {0x8c, "SHORT_BINUNICODE"},
    {'X', "BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {'F', "FLOAT"},
    {'G', "BINFLOAT"},
    {']', "EMPTY_LIST"},
    {'a', "APPEND"},
    {'e', "APPENDS"},
    {'l', "LIST"},
    {')', "EMPTY_TUPLE"},
    {'t', "TUPLE"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {'}', "EMPTY_DICT"},
    {'d', "DICT"},
    {'s', "SETITEM"},
    {'u', "SETITEMS"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {'0', "POP"},
    {'2', "DUP"},
    {'(', "MARK"},
    {'1', "POP_MARK"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'j', "LONG_BINGET"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {0x94, "MEMOIZE"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {'c', "GLOBAL"},
    {0x93, "STACK_GLOBAL"},
    {'R', "REDUCE"},
    {'b', "BUILD"},
    {'i', "INST"},
    {'o', "OBJ"},
    {0x81, "NEWOBJ"},
    {0x92, "NEWOBJ_EX"},
    {0x80, "PROTO"},
    {'.', "STOP"},
    {0x95, "FRAME"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
};

std::string op_name(uint8_t code) {
  for (const OpInfo& op : kOpNames) {
    if (op.code == code) return op.name;
  }
  return fmt::format("unknown opcode 0x{:02x}", code);
}

// A value on the stack or in the memo, with what copying it costs and how deep it nests.
struct Box {
  PickleValue value;
  uint64_t cost = 1;
  uint32_t depth = 0;
  bool copied = false;  // copied into another value or a call: changing it now would go unseen there
  // Positions of a dict's hashable keys, so that SETITEM replaces as Python does.
  std::unordered_map<std::string, size_t> key_index;
};
using BoxPtr = std::shared_ptr<Box>;

// A text identity for a hashable dict key (Python's equality: True == 1 == 1.0), or nullopt.
std::optional<std::string> key_text(const PickleValue& v) {
  using K = PickleValue::Kind;
  switch (v.kind()) {
    case K::None: return std::string("n");
    case K::Bool: return fmt::format("i{}", v.as_bool() ? 1 : 0);
    case K::Int: return fmt::format("i{}", v.as_int());
    case K::Float: {
      double d = v.as_float();
      if (d > -9.2e18 && d < 9.2e18 && d == std::trunc(d)) return fmt::format("i{}", static_cast<int64_t>(d));
      return fmt::format("f{}", std::bit_cast<uint64_t>(d));
    }
    case K::String: return fmt::format("s{}:{}", v.as_string().size(), v.as_string());
    case K::Bytes: return fmt::format("b{}:{}", v.as_bytes().size(), v.as_bytes());
    case K::Tuple: {
      std::string s = fmt::format("t{}(", v.as_tuple().size());
      for (const PickleValue& item : v.as_tuple()) {
        auto t = key_text(item);
        if (!t) return std::nullopt;
        s.append(*t).push_back(',');
      }
      s.push_back(')');
      return s;
    }
    case K::Global: return fmt::format("g{}", v.global_qualname());
    default: return std::nullopt;
  }
}

// Cost and depth of a value a hook made.
void measure(const PickleValue& v, Box& box, uint32_t depth) {
  KILN_CHECK(depth <= kMaxDepth, "values nest deeper than {} levels", kMaxDepth);
  box.depth = std::max(box.depth, depth);
  using K = PickleValue::Kind;
  if (v.is(K::String) || v.is(K::Bytes)) {
    box.cost += (v.is(K::String) ? v.as_string() : v.as_bytes()).size() / 64;
  } else if (v.is(K::Tuple) || v.is(K::List)) {
    for (const PickleValue& item : v.as_sequence()) {
      box.cost += 1;
      measure(item, box, depth + 1);
    }
  } else if (v.is(K::Dict)) {
    for (const PickleItem& item : v.as_dict()) {
      box.cost += 2;
      measure(item.key, box, depth + 1);
      measure(item.value, box, depth + 1);
    }
  }
}

class Machine {
 public:
  Machine(std::span<const std::byte> data, const PickleHooks& hooks)
      : data_(reinterpret_cast<const uint8_t*>(data.data())), size_(data.size()), hooks_(hooks) {}

  PickleValue run(std::string_view name) {
    for (;;) {
      size_t at = pos_;
      KILN_CHECK(pos_ < size_, "{}: byte {}: truncated: the stream ends without a STOP opcode", name, at);
      uint8_t op = data_[pos_++];
      try {
        if (step(op)) break;
      } catch (const Error& e) {
        throw Error(e.kind(), fmt::format("{}: byte {}: {}: {}", name, at, op_name(op), e.message()));
      }
    }
    KILN_CHECK(pos_ == size_, "{}: byte {}: {} bytes follow the STOP opcode", name, pos_ - 1, size_ - pos_);
    memo_.clear();  // the result is moved out, not copied
    return take(pop());
  }

 private:
  // Executes one opcode; true at STOP.
  bool step(uint8_t op) {
    using PV = PickleValue;
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t proto = read_u8();
        KILN_CHECK(proto <= 5, "pickle protocol {} is newer than 5", proto);
        return false;
      }
      case 0x95: {  // FRAME: a length prefix for the opcodes that follow; nothing to do but check it
        uint64_t n = read_le(8);
        KILN_CHECK(n <= size_ - pos_, "truncated: a frame of {} bytes, {} left", n, size_ - pos_);
        return false;
      }
      case '.':  // STOP
        KILN_CHECK(marks_.empty(), "a MARK is still open");
        KILN_CHECK(stack_.size() == 1, "expected one value on the stack, found {}", stack_.size());
        return true;
      case '(': marks_.push_back(stack_.size()); return false;
      case '0': pop(); return false;       // POP
      case '1': pop_mark(); return false;  // POP_MARK
      case '2':
        KILN_CHECK(!stack_.empty(), "stack underflow");
        stack_.push_back(stack_.back());
        return false;
      case 'N': push(PV()); return false;
      case 0x88: push(PV::boolean(true)); return false;
      case 0x89: push(PV::boolean(false)); return false;
      case 'J': push(PV::integer(static_cast<int32_t>(read_le(4)))); return false;
      case 'K': push(PV::integer(read_u8())); return false;
      case 'M': push(PV::integer(static_cast<int64_t>(read_le(2)))); return false;
      case 0x8a: push(PV::integer(read_long(read_u8()))); return false;
      case 0x8b: push(PV::integer(read_long(read_le(4)))); return false;
      case 'G': {  // BINFLOAT: big-endian IEEE double
        uint64_t bits = 0;
        for (uint8_t b : read_span(8)) bits = (bits << 8) | b;
        push(PV::floating(std::bit_cast<double>(bits)));
        return false;
      }
      case 0x8c: push_text(PV::Kind::String, read_u8()); return false;
      case 'X': push_text(PV::Kind::String, read_le(4)); return false;
      case 0x8d: push_text(PV::Kind::String, read_le(8)); return false;
      case 'C': push_text(PV::Kind::Bytes, read_u8()); return false;
      case 'B': push_text(PV::Kind::Bytes, read_le(4)); return false;
      case 0x8e: push_text(PV::Kind::Bytes, read_le(8)); return false;
      case ')': push(PV::tuple({})); return false;
      case 't': push_container(PV::Kind::Tuple, pop_mark()); return false;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        size_t n = op - 0x84u;
        KILN_CHECK(stack_.size() >= n + floor(), "stack underflow: needs {} values, has {}", n,
                   stack_.size() - floor());
        std::vector<BoxPtr> items(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push_container(PV::Kind::Tuple, std::move(items));
        return false;
      }
      case ']': push(PV::list({})); return false;
      case '}': push(PV::dict({})); return false;
      case 'a': {  // APPEND
        BoxPtr item = pop();
        append(top(), {std::move(item)});
        return false;
      }
      case 'e': {  // APPENDS
        std::vector<BoxPtr> items = pop_mark();
        append(top(), std::move(items));
        return false;
      }
      case 's': {  // SETITEM
        BoxPtr value = pop();
        BoxPtr key = pop();
        set_items(top(), {std::move(key), std::move(value)});
        return false;
      }
      case 'u': set_items(nullptr, pop_mark()); return false;  // SETITEMS
      case 'q': put(read_u8()); return false;
      case 'r': put(read_le(4)); return false;
      case 0x94: put(memo_.size()); return false;  // MEMOIZE
      case 'h': get(read_u8()); return false;
      case 'j': get(read_le(4)); return false;
      case 'c': {  // GLOBAL: "module\nname\n"
        std::string module = read_line();
        std::string name = read_line();
        push_global(std::move(module), std::move(name));
        return false;
      }
      case 0x93: {  // STACK_GLOBAL
        PV name = take(pop());
        PV module = take(pop());
        KILN_CHECK_TYPE(module.is(PV::Kind::String) && name.is(PV::Kind::String),
                        "expected a module and a name as str, got {} and {}", module.describe(), name.describe());
        push_global(module.as_string(), name.as_string());
        return false;
      }
      case 'R':     // REDUCE: callable(*args)
      case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), the same for the classes allowed here
        PV args = take(pop());
        PV callable = take(pop());
        push_made(call(callable, std::move(args)));
        return false;
      }
      case 'b': {  // BUILD: obj.__setstate__(state); only an empty state is accepted
        PV state = take(pop());
        const PV& target = top()->value;
        bool empty = state.is_none() || (state.is(PV::Kind::Dict) && state.as_dict().empty());
        KILN_CHECK(empty, "setting the state {} of a {} is outside kiln's pickle subset", state.describe(),
                   pickle_kind_name(target.kind()));
        return false;
      }
      case 'Q': {  // BINPERSID
        PV pid = take(pop());
        KILN_CHECK(static_cast<bool>(hooks_.persistent_load), "persistent id {} but no loader for persistent ids",
                   pid.describe());
        push_made(hooks_.persistent_load(pid));
        return false;
      }
      default: KILN_FAIL(ErrorKind::NotImplemented, "opcode 0x{:02x} is outside kiln's pickle subset", op);
    }
  }

  // --- reading the stream ---
  std::span<const uint8_t> read_span(uint64_t n) {
    KILN_CHECK(n <= size_ - pos_, "truncated: needs {} bytes, {} left", n, size_ - pos_);
    std::span<const uint8_t> s(data_ + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  uint8_t read_u8() { return read_span(1)[0]; }
  uint64_t read_le(int n) {
    uint64_t v = 0;
    auto s = read_span(static_cast<uint64_t>(n));
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | s[static_cast<size_t>(i)];
    return v;
  }
  // LONG1 / LONG4: a little-endian two's-complement integer of n bytes.
  int64_t read_long(uint64_t n) {
    auto s = read_span(n);
    KILN_CHECK(n <= 8, "an integer of {} bytes does not fit in int64", n);
    if (n == 0) return 0;
    uint64_t v = 0;
    for (size_t i = s.size(); i-- > 0;) v = (v << 8) | s[i];
    if (n < 8 && (s.back() & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<int64_t>(v);
  }
  std::string read_line() {
    const uint8_t* end = static_cast<const uint8_t*>(std::memchr(data_ + pos_, '\n', size_ - pos_));
    KILN_CHECK(end != nullptr, "truncated: a name without its end of line");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(end - (data_ + pos_)));
    pos_ += s.size() + 1;
    return s;
  }

  // --- the stack and the memo ---
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  BoxPtr pop() {
    KILN_CHECK(stack_.size() > floor(), "stack underflow{}", marks_.empty() ? "" : " (down to a MARK)");
    BoxPtr b = std::move(stack_.back());
    stack_.pop_back();
    return b;
  }
  const BoxPtr& top() const {
    KILN_CHECK(stack_.size() > floor(), "stack underflow{}", marks_.empty() ? "" : " (down to a MARK)");
    return stack_.back();
  }
  std::vector<BoxPtr> pop_mark() {
    KILN_CHECK(!marks_.empty(), "no MARK to pop to");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<BoxPtr> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(m)),
                              std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }
  void push(PickleValue v) {
    auto b = std::make_shared<Box>();
    b->value = std::move(v);
    stack_.push_back(std::move(b));
  }
  void push_text(PickleValue::Kind kind, uint64_t n) {
    auto s = read_span(n);
    std::string text(reinterpret_cast<const char*>(s.data()), s.size());
    auto b = std::make_shared<Box>();
    b->cost = 1 + text.size() / 64;
    b->value = kind == PickleValue::Kind::String ? PickleValue::string(std::move(text))
                                                 : PickleValue::bytes(std::move(text));
    stack_.push_back(std::move(b));
  }
  // A value a hook or a call made: its cost and depth are measured.
  void push_made(PickleValue v) {
    auto b = std::make_shared<Box>();
    measure(v, *b, 0);
    b->value = std::move(v);
    stack_.push_back(std::move(b));
  }
  void put(uint64_t index) {
    KILN_CHECK(!stack_.empty(), "stack underflow: nothing to store at memo index {}", index);
    memo_[index] = stack_.back();
  }
  void get(uint64_t index) {
    auto it = memo_.find(index);
    KILN_CHECK(it != memo_.end(), "memo index {} was never stored ({} stored)", index, memo_.size());
    stack_.push_back(it->second);
  }

  // The value of a box, to be placed elsewhere: moved when only `b` refers to it, else copied.
  PickleValue take(BoxPtr b) {
    if (b.use_count() == 1) return std::move(b->value);
    copied_cost_ += b->cost;
    KILN_CHECK(copied_cost_ <= kMaxCopyCost,
               "shared references expand the pickle past {} copied values (a recursive or exponential structure)",
               kMaxCopyCost);
    b->copied = true;
    return b->value;
  }
  void grow(Box& parent, const Box& child, uint64_t extra) {
    parent.cost += child.cost + extra;
    parent.depth = std::max(parent.depth, child.depth + 1);
    KILN_CHECK(parent.depth <= kMaxDepth, "values nest deeper than {} levels", kMaxDepth);
  }
  void check_unshared(const Box& target) {
    KILN_CHECK(!target.copied,
               "the {} is changed after it was used elsewhere (a recursive structure, which kiln does not build)",
               pickle_kind_name(target.value.kind()));
  }
  void push_container(PickleValue::Kind kind, std::vector<BoxPtr> items) {
    auto b = std::make_shared<Box>();
    std::vector<PickleValue> values;
    values.reserve(items.size());
    for (BoxPtr& item : items) {
      grow(*b, *item, 0);
      values.push_back(take(std::move(item)));
    }
    b->value = kind == PickleValue::Kind::Tuple ? PickleValue::tuple(std::move(values))
                                                : PickleValue::list(std::move(values));
    stack_.push_back(std::move(b));
  }
  void append(const BoxPtr& target, std::vector<BoxPtr> items) {
    KILN_CHECK_TYPE(target->value.is(PickleValue::Kind::List), "appending to a {}, not a list",
                    pickle_kind_name(target->value.kind()));
    check_unshared(*target);
    for (BoxPtr& item : items) {
      KILN_CHECK(item != target, "a list appended to itself (a recursive structure, which kiln does not build)");
      grow(*target, *item, 0);
      target->value.mutable_sequence().push_back(take(std::move(item)));
    }
  }
  // SETITEM (target given) or SETITEMS (target below the popped mark, `kv` alternating keys and values).
  void set_items(BoxPtr target, std::vector<BoxPtr> kv) {
    if (!target) target = top();
    KILN_CHECK(kv.size() % 2 == 0, "an odd number ({}) of keys and values", kv.size());
    KILN_CHECK_TYPE(target->value.is(PickleValue::Kind::Dict), "setting items of a {}, not a dict",
                    pickle_kind_name(target->value.kind()));
    check_unshared(*target);
    for (size_t i = 0; i < kv.size(); i += 2) {
      KILN_CHECK(kv[i] != target && kv[i + 1] != target,
                 "a dict stored in itself (a recursive structure, which kiln does not build)");
      grow(*target, *kv[i], 1);
      grow(*target, *kv[i + 1], 0);
      PickleValue key = take(std::move(kv[i]));
      PickleValue value = take(std::move(kv[i + 1]));
      auto text = key_text(key);
      KILN_CHECK_TYPE(text.has_value(), "a dict key of type {} (unhashable or not supported): {}",
                      pickle_kind_name(key.kind()), key.describe());
      auto& items = target->value.mutable_dict();
      auto [it, inserted] = target->key_index.try_emplace(*text, items.size());
      if (inserted) {
        items.push_back({std::move(key), std::move(value)});
      } else {
        items[it->second].value = std::move(value);
      }
    }
  }

  // --- globals and calls ---
  static bool own_global(std::string_view module, std::string_view name) {
    return (module == "collections" && name == "OrderedDict") || (module == "_codecs" && name == "encode");
  }
  void push_global(std::string module, std::string name) {
    bool allowed = own_global(module, name) || (hooks_.allow_global && hooks_.allow_global(module, name));
    KILN_CHECK_KIND(allowed, ErrorKind::NotImplemented,
                    "global '{}.{}' is not allowed: kiln's unpickler resolves only the names torch.save writes "
                    "for tensors and containers (docs/import.md)",
                    module, name);
    push(PickleValue::global(std::move(module), std::move(name)));
  }
  PickleValue call(const PickleValue& callable, PickleValue args) {
    KILN_CHECK_TYPE(callable.is(PickleValue::Kind::Global), "calling a {} ({}), not a global",
                    pickle_kind_name(callable.kind()), callable.describe());
    KILN_CHECK_TYPE(args.is(PickleValue::Kind::Tuple), "arguments of {} are a {}, not a tuple",
                    callable.global_qualname(), pickle_kind_name(args.kind()));
    std::vector<PickleValue> argv = std::move(args.mutable_sequence());
    const std::string& module = callable.global_module();
    const std::string& name = callable.global_name();
    if (module == "collections" && name == "OrderedDict") {
      KILN_CHECK(argv.empty(),
                 "collections.OrderedDict called with {} arguments; kiln expects none (items follow "
                 "as SETITEMS)",
                 argv.size());
      return PickleValue::dict({});
    }
    if (module == "_codecs" && name == "encode") return latin1_bytes(argv);
    KILN_CHECK(static_cast<bool>(hooks_.call), "no hook calls global {}", callable.global_qualname());
    return hooks_.call(callable, std::move(argv));
  }
  // _codecs.encode(text, "latin1"): how protocol 2 writes bytes. Each code point becomes one byte.
  static PickleValue latin1_bytes(const std::vector<PickleValue>& argv) {
    KILN_CHECK(argv.size() == 2 && argv[0].is(PickleValue::Kind::String) && argv[1].is(PickleValue::Kind::String),
               "_codecs.encode expects (str, encoding), got {} arguments", argv.size());
    const std::string& enc = argv[1].as_string();
    KILN_CHECK(enc == "latin1" || enc == "latin-1", "_codecs.encode with encoding '{}'; only latin1 is supported", enc);
    const std::string& s = argv[0].as_string();
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else {
        KILN_CHECK(
            (c == 0xc2 || c == 0xc3) && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xc0) == 0x80,
            "_codecs.encode: the text is not latin1 (UTF-8 byte 0x{:02x} at {})", c, i);
        out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3f));
        ++i;
      }
    }
    return PickleValue::bytes(std::move(out));
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const PickleHooks& hooks_;
  std::vector<BoxPtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, BoxPtr> memo_;
  uint64_t copied_cost_ = 0;
};

}  // namespace

PickleValue unpickle(std::span<const std::byte> data, const PickleHooks& hooks, std::string_view name) {
  return Machine(data, hooks).run(name);
}

}  // namespace kiln
