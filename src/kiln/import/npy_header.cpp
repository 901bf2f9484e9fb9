#include "kiln/import/npy_header.h"

#include <cstring>
#include <optional>
#include <vector>

#include "kiln/support/error.h"

namespace kiln {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;  // numpy's ARRAY_ALIGN: the data starts on this boundary

struct DescrInfo {
  std::string_view code;  // after the byte-order character
  DType dtype;
};
constexpr DescrInfo kDescrs[] = {
    {"b1", DType::Bool},    {"u1", DType::UInt8},   {"i1", DType::Int8},         {"i2", DType::Int16},
    {"i4", DType::Int32},   {"i8", DType::Int64},   {"f2", DType::Float16},      {"V2", DType::BFloat16},
    {"f4", DType::Float32}, {"f8", DType::Float64}, {"c8", DType::ComplexFloat}, {"c16", DType::ComplexDouble},
};

// A value of the header dict: the few Python literals a .npy header holds.
struct PyValue {
  enum Kind { Str, Bool, Tuple };
  Kind kind = Str;
  std::string str{};
  bool boolean = false;
  std::vector<int64_t> ints{};
};
PyValue make_value(PyValue::Kind kind, std::string str = {}, bool boolean = false) {
  PyValue v;
  v.kind = kind;
  v.str = std::move(str);
  v.boolean = boolean;
  return v;
}

// A recursive-descent reader of the dict literal; every error names the file and the position.
class DictParser {
 public:
  DictParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  [[noreturn]] void fail(std::string_view what) const {
    KILN_FAIL(ErrorKind::Value, "{}: .npy header: {} at byte {} of the dict: {}", name_, what, pos_, text_);
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

  std::string string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail("expected a string");
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    if (s.find('\\') != std::string::npos) fail("escape sequences are not supported in strings");
    pos_ = end + 1;
    return s;
  }

  int64_t integer() {
    skip_space();
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (v > static_cast<uint64_t>(INT64_MAX)) fail("dimension exceeds int64");
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2's long suffix
    return static_cast<int64_t>(v);
  }

  PyValue value() {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a value");
    char c = text_[pos_];
    if (c == '\'' || c == '"') return make_value(PyValue::Str, string());
    if (text_.substr(pos_, 4) == "True") return pos_ += 4, make_value(PyValue::Bool, {}, true);
    if (text_.substr(pos_, 5) == "False") return pos_ += 5, make_value(PyValue::Bool, {}, false);
    if (c == '[') fail("structured dtypes (a list descr) are not supported");
    if (c != '(') fail("expected a string, True, False or a tuple");
    ++pos_;
    PyValue t = make_value(PyValue::Tuple);
    while (!eat(')')) {
      t.ints.push_back(integer());
      // (3,) needs its comma; (2, 3) may have a trailing one.
      if (!eat(',')) {
        if (t.ints.size() == 1) fail("a one-element tuple needs a trailing comma");
        expect(')');
        break;
      }
    }
    return t;
  }

 private:
  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

uint64_t read_le(const std::byte* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<uint64_t>(p[i]);
  return v;
}

std::string shape_text(IntArrayRef shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Maps a descr to a dtype; sets big_endian.
DType parse_descr(const std::string& descr, bool& big_endian, std::string_view name, const NpyReadOptions& options) {
  KILN_CHECK(!descr.empty() && std::strchr("<>|=", descr[0]),
             "{}: .npy header: descr '{}' lacks a byte order (<, >, |, =)", name, descr);
  std::string_view code = std::string_view(descr).substr(1);
  std::optional<DType> dtype;
  for (const DescrInfo& d : kDescrs) {
    if (d.code == code) dtype = d.dtype;
  }
  if (!dtype && (code == "u2") && options.uint16_as_bfloat16) dtype = DType::BFloat16;
  if (!dtype) {
    std::string_view why = code == "u2"   ? " (uint16: kiln has no uint16; for bfloat16 bits saved as "
                                            "t.view(torch.uint16), set NpyReadOptions::uint16_as_bfloat16)"
                           : code == "u4" ? " (uint32: kiln has no uint32)"
                           : code == "u8" ? " (uint64: kiln has no uint64)"
                           : code == "O"  ? " (pickled Python objects are not read)"
                                          : "";
    KILN_FAIL(ErrorKind::Type, "{}: .npy header: unknown or unsupported descr '{}'{}", name, descr, why);
  }
  KILN_CHECK(descr[0] != '|' || element_size(*dtype) == 1 || code == "V2",
             "{}: .npy header: descr '{}': '|' (no byte order) is only for one-byte types", name, descr);
  big_endian = descr[0] == '>' && element_size(*dtype) > 1;
  return *dtype;
}

}  // namespace

NpyHeader parse_npy_header(std::span<const std::byte> bytes, std::string_view name, const NpyReadOptions& options) {
  KILN_CHECK(bytes.size() >= kMagicSize + 2 && std::memcmp(bytes.data(), kMagic, kMagicSize) == 0,
             "{}: bad magic: not a .npy file (it must start with \\x93NUMPY; {} bytes)", name, bytes.size());
  NpyHeader h;
  h.major_version = static_cast<int>(bytes[6]);
  int minor = static_cast<int>(bytes[7]);
  KILN_CHECK(h.major_version >= 1 && h.major_version <= 3 && minor == 0,
             "{}: unsupported .npy format version {}.{} (kiln reads 1.0, 2.0, 3.0)", name, h.major_version, minor);
  size_t len_size = h.major_version == 1 ? 2 : 4;
  size_t prefix = kMagicSize + 2 + len_size;
  KILN_CHECK(bytes.size() >= prefix, "{}: truncated .npy header: {} bytes, the prefix alone needs {}", name,
             bytes.size(), prefix);
  uint64_t dict_len = read_le(bytes.data() + kMagicSize + 2, static_cast<int>(len_size));
  KILN_CHECK(dict_len <= bytes.size() - prefix,
             "{}: truncated .npy header: it says {} bytes, the file has {} after its prefix", name, dict_len,
             bytes.size() - prefix);
  h.data_offset = prefix + dict_len;
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), dict_len);

  DictParser p(text, name);
  std::optional<PyValue> descr, fortran, shape;
  p.expect('{');
  while (!p.eat('}')) {
    std::string key = p.string();
    std::optional<PyValue>* slot = key == "descr"           ? &descr
                                   : key == "fortran_order" ? &fortran
                                   : key == "shape"         ? &shape
                                                            : nullptr;
    if (!slot) p.fail(fmt::format("unknown key '{}' (a .npy header has descr, fortran_order, shape)", key));
    if (*slot) p.fail(fmt::format("key '{}' appears twice", key));
    p.expect(':');
    *slot = p.value();
    if (!p.eat(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.fail("text after the dict");
  if (!descr || !fortran || !shape) {
    p.fail(fmt::format("missing key '{}'", !descr ? "descr" : !fortran ? "fortran_order" : "shape"));
  }
  KILN_CHECK(descr->kind == PyValue::Str, "{}: .npy header: descr must be a string", name);
  KILN_CHECK(fortran->kind == PyValue::Bool, "{}: .npy header: fortran_order must be True or False", name);
  KILN_CHECK(shape->kind == PyValue::Tuple, "{}: .npy header: shape must be a tuple of integers", name);
  h.descr = descr->str;
  h.dtype = parse_descr(h.descr, h.big_endian, name, options);
  h.fortran_order = fortran->boolean;
  h.shape.assign(shape->ints.begin(), shape->ints.end());
  uint64_t bytes_needed = element_size(h.dtype);
  for (int64_t d : h.shape) {
    KILN_CHECK(!__builtin_mul_overflow(bytes_needed, static_cast<uint64_t>(d), &bytes_needed) &&
                   bytes_needed <= static_cast<uint64_t>(INT64_MAX),
               "{}: .npy header: shape {} of {} overflows 64-bit byte counts", name, shape_text(h.shape), h.dtype);
  }
  h.data_bytes = bytes_needed;
  return h;
}

std::string_view npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Bool: return "|b1";
    case DType::UInt8: return "|u1";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::Float16: return "<f2";
    case DType::BFloat16: return "<V2";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::ComplexFloat: return "<c8";
    case DType::ComplexDouble: return "<c16";
  }
  KILN_FAIL(ErrorKind::Internal, "npy_descr: unknown dtype {}", static_cast<int>(dtype));
}

std::string format_npy_header(DType dtype, IntArrayRef shape) {
  // numpy's own spelling: keys sorted, repr of each value, a trailing ", ".
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(dtype), shape_text(shape));
  // Version 1.0 counts the dict's length in 16 bits; a longer one (thousands of dims) needs 2.0.
  auto padding = [&](size_t prefix) { return (kAlign - (prefix + dict.size() + 1) % kAlign) % kAlign; };
  int version = dict.size() + 1 + padding(kMagicSize + 4) <= 0xffff ? 1 : 2;
  size_t prefix = kMagicSize + 2 + (version == 1 ? 2 : 4);
  dict.append(padding(prefix), ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(version));
  out.push_back('\0');
  size_t len = dict.size();
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + dict;
}

}  // namespace kiln
