#include "kiln/graph/parser.h"

#include <cctype>
#include <charconv>

#include "kiln/graph/printer.h"

namespace kiln::graph {
namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::map<std::string, Tensor>& attrs) : text_(text), attrs_(attrs) {}

  Graph parse() {
    expect_word("graph");
    comma_list('(', ')', [&] {
      std::string name = value_name();
      expect(':');
      g_.placeholder(name, tensor_type());
    });
    expect(':');
    end_of_line();
    while (true) {
      skip_blank_lines();
      if (at_end()) fail("expected 'return'");
      skip_spaces();
      if (peek_word("return")) {
        pos_ += 6;
        g_.output(ref_tuple());
        end_of_line();
        skip_blank_lines();
        if (!at_end()) fail("unexpected text after the return line");
        return std::move(g_);
      }
      node_line();
    }
  }

 private:
  void node_line() {
    size_t name_at = pos_;
    std::string name = value_name();
    expect(':');
    std::vector<TensorMeta> types = result_types();
    expect('=');
    skip_spaces();
    std::string target = qualified_name();
    if (target == "get_attr") {
      expect('(');
      expect(')');
      if (types.size() != 1) fail("get_attr has exactly one result", name_at);
      auto it = attrs_.find(name);
      Tensor value = it != attrs_.end()
                         ? it->second
                         : Tensor(empty_strided_tensor(types[0].sizes, types[0].strides, types[0].dtype, kMeta));
      Node* node = g_.get_attr(name, value);
      node->set_meta(std::move(types));  // the declared type, also when a meta stand-in holds the place
      bind(name, node, name_at);
    } else {
      OpHandle op = Registry::global().find(target);
      if (!op) fail(fmt::format("unknown op '{}'", target), pos_ - target.size());
      expect('(');
      std::vector<Arg> args = arguments(op);
      bind(name, g_.call(op, std::move(args), std::move(types), name), name_at);
    }
    end_of_line();
  }

  void bind(const std::string& want, Node* node, size_t at) {
    if (node->name() != want) fail(fmt::format("value %{} is defined twice", want), at);
  }

  std::vector<Arg> arguments(OpHandle op) {
    const auto& schema = op->schema().arguments;
    std::vector<Arg> args;
    skip_spaces();
    if (accept(')')) return args;
    while (true) {
      skip_spaces();
      size_t at = pos_;
      if (args.size() >= schema.size()) fail(fmt::format("{} takes at most {} arguments", op->name(), schema.size()));
      const Type& type = schema[args.size()].type;
      if (peek('%')) {
        args.emplace_back(ref());
      } else if (peek('[') && type.base == BaseType::Tensor) {
        args.emplace_back(ref_list());
      } else {
        std::string literal = constant_text();
        Value v;
        try {
          v = parse_default(literal, type);
        } catch (const Error& e) {
          fail(fmt::format("bad constant '{}' for argument '{}' of {} ({})", literal, schema[args.size()].name,
                           op->name(), e.what()),
               at);
        }
        if (!coerce_value(v, type)) fail(fmt::format("'{}' is not a {}", literal, type.to_string()), at);
        args.emplace_back(std::move(v));
      }
      skip_spaces();
      if (accept(')')) return args;
      expect(',');
    }
  }

  // Parses `open item, item, ... close` (possibly empty), calling item() for each element.
  template <class Item>
  void comma_list(char open, char close, const Item& item) {
    expect(open);
    skip_spaces();
    if (accept(close)) return;
    while (true) {
      skip_spaces();
      item();
      skip_spaces();
      if (accept(close)) return;
      expect(',');
    }
  }

  std::vector<ValueRef> ref_list() {
    std::vector<ValueRef> refs;
    comma_list('[', ']', [&] {
      if (peek_word("None")) {
        pos_ += 4;
        refs.push_back({});
      } else {
        refs.push_back(ref());
      }
    });
    return refs;
  }

  std::vector<ValueRef> ref_tuple() {
    std::vector<ValueRef> refs;
    comma_list('(', ')', [&] { refs.push_back(ref()); });
    return refs;
  }

  ValueRef ref() {
    skip_spaces();
    size_t at = pos_;
    std::string name = value_name();
    Node* node = g_.find(name);
    if (!node) fail(fmt::format("unknown value %{}", name), at);
    int index = 0;
    if (accept('.')) index = static_cast<int>(integer());
    if (index < 0 || static_cast<size_t>(index) >= std::max<size_t>(node->meta().size(), 1)) {
      fail(fmt::format("%{} has no result {}", name, index), at);
    }
    return {node, index};
  }

  // Text of a constant up to the next ',' or ')' outside brackets and quotes.
  std::string constant_text() {
    size_t start = pos_;
    bool unterminated = false;
    pos_ = scan_literal(text_, pos_, unterminated);
    if (unterminated) fail("unterminated constant", start);
    std::string_view t = text_.substr(start, pos_ - start);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (t.empty()) fail("expected an argument", start);
    return std::string(t);
  }

  std::vector<TensorMeta> result_types() {
    skip_spaces();
    if (!peek('(')) return {tensor_type()};
    std::vector<TensorMeta> types;
    comma_list('(', ')', [&] { types.push_back(tensor_type()); });
    return types;
  }

  TensorMeta tensor_type() {
    skip_spaces();
    size_t at = pos_;
    std::string dtype = identifier("a dtype");
    TensorMeta m;
    bool found = false;
    for (DType t : kAllDTypes) {
      if (short_dtype_name(t) == dtype) {
        m.dtype = t;
        found = true;
      }
    }
    if (!found) fail(fmt::format("unknown dtype '{}'", dtype), at);
    m.sizes = int_list('[', ']');
    m.strides = peek('{') ? int_list('{', '}') : contiguous_strides(m.sizes);
    if (m.strides.size() != m.sizes.size()) fail("strides and sizes differ in length", at);
    if (accept('@')) {
      size_t dev_at = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == ':'))
        ++pos_;
      try {
        m.device = Device::parse(text_.substr(dev_at, pos_ - dev_at));
      } catch (const Error&) {
        fail("bad device", dev_at);
      }
    }
    return m;
  }

  Shape int_list(char open, char close) {
    Shape out;
    comma_list(open, close, [&] { out.push_back(integer()); });
    return out;
  }

  int64_t integer() {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc()) fail("expected an integer");
    pos_ = static_cast<size_t>(end - text_.data());
    return v;
  }

  std::string value_name() {
    skip_spaces();
    expect('%');
    return identifier("a value name");
  }

  std::string qualified_name() {
    std::string name = identifier("an op name");
    while (pos_ + 1 < text_.size() && ((text_[pos_] == ':' && text_[pos_ + 1] == ':') || text_[pos_] == '.')) {
      std::string_view sep = text_[pos_] == ':' ? "::" : ".";
      pos_ += sep.size();
      name.append(sep);
      name.append(identifier("an op name"));
    }
    return name;
  }

  std::string identifier(std::string_view what) {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ == start) fail(fmt::format("expected {}", what));
    return std::string(text_.substr(start, pos_ - start));
  }

  void expect_word(std::string_view w) {
    skip_spaces();
    if (!peek_word(w)) fail(fmt::format("expected '{}'", w));
    pos_ += w.size();
  }
  bool peek_word(std::string_view w) const { return text_.substr(pos_).starts_with(w); }
  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    skip_spaces();
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  void end_of_line() {
    skip_spaces();
    if (at_end()) return;
    if (!accept('\n')) fail("expected the end of the line");
  }
  void skip_blank_lines() {
    while (true) {
      size_t p = pos_;
      while (p < text_.size() && text_[p] == ' ') ++p;
      if (p < text_.size() && text_[p] == '\n') {
        pos_ = p + 1;
      } else {
        return;
      }
    }
  }
  bool at_end() const { return pos_ >= text_.size(); }

  [[noreturn]] void fail(const std::string& what, size_t at = std::string::npos) const {
    size_t p = std::min(at == std::string::npos ? pos_ : at, text_.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < p; ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    KILN_FAIL(ErrorKind::Value, "graph parse error at line {}, column {}: {}", line, col, what);
  }

  std::string_view text_;
  const std::map<std::string, Tensor>& attrs_;
  size_t pos_ = 0;
  Graph g_;
};

}  // namespace

Graph parse(std::string_view text, const std::map<std::string, Tensor>& attrs) { return Parser(text, attrs).parse(); }

}  // namespace kiln::graph
