// kiln_gen_api: writes kiln's typed C++ API from the op table at build time, so an op is declared
// once (ops/native_ops.def) and its C++ function follows. For each row whose `api` field asks for
// it, a free function kiln::<name>(...) and/or a Tensor method, each boxing its arguments in schema
// order and calling the dispatcher. The row format and the `api` words are described at the top of
// native_ops.def; the C++ types follow PyTorch's (Tensor -> const Tensor&, int[] -> IntArrayRef,
// Scalar? -> std::optional<Scalar>, ...).
//
// It also writes the prims' typed functions from prims_ops.def (kiln::prims::add(a, b),
// prims_functions.h) and a typed handle per op of both tables: kiln::op::aten::add_Tensor(),
// kiln::op::prims::mul() (handles.h).
//
//   kiln_gen_api <native_ops.def> <prims_ops.def> <output dir>
// writes <output dir>/{functions, prims_functions, handles}.{h,cpp}, methods.inc and methods.cpp;
// a file whose content is unchanged is not rewritten, so its dependents are not rebuilt.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "kiln/ops/schema.h"
#include "kiln/support/error.h"

namespace kiln::gen {
namespace {

// ---- Reading native_ops.def

struct Row {
  std::string schema, tags, api;
  bool compound = false;
  std::string ns = "aten";  // "prims" for a KILN_PRIM row
  int line = 0;
};

// Reads the macro calls of the op table: KILN_LEAF_OP("...", "...", "...") and
// KILN_COMPOUND_OP(...), with `//` comments and adjacent string literals joined.
class DefReader {
 public:
  DefReader(std::string_view text, std::string path) : text_(text), path_(std::move(path)) {}

  std::vector<Row> rows() {
    std::vector<Row> out;
    while (skip_space(), pos_ < text_.size()) {
      Row row;
      row.line = line_;
      std::string macro = identifier();
      if (macro == "KILN_COMPOUND_OP") row.compound = true;
      else if (macro == "KILN_PRIM") row.ns = "prims";
      else if (macro != "KILN_LEAF_OP")
        fail(fmt::format("expected KILN_LEAF_OP, KILN_COMPOUND_OP or KILN_PRIM, found '{}'", macro));
      expect('(');
      row.schema = strings();
      expect(',');
      row.tags = strings();
      expect(',');
      std::string third = strings();  // the api words; a prim's pattern kind, then its api words
      if (row.ns == "aten") row.api = third;
      static const std::set<std::string> kPatterns = {"",          "elementwise", "broadcast",
                                                      "injective", "reduction",   "opaque"};
      if (row.ns == "prims" && !kPatterns.contains(third)) fail(fmt::format("unknown pattern kind '{}'", third));
      if (row.ns == "prims") {
        expect(',');
        row.api = strings();
      }
      expect(')');
      out.push_back(std::move(row));
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    KILN_FAIL(ErrorKind::Value, "{}:{}: {}", path_, line_, what);
  }
  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') ++line_;
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//") {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  std::string identifier() {
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) fail(fmt::format("unexpected '{}'", text_[pos_]));
    return std::string(text_.substr(start, pos_ - start));
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  // One or more adjacent string literals, joined.
  std::string strings() {
    std::string out;
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string literal");
    while (pos_ < text_.size() && text_[pos_] == '"') {
      ++pos_;
      while (pos_ < text_.size() && text_[pos_] != '"') {
        if (text_[pos_] == '\n') fail("unterminated string literal");
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        out += text_[pos_++];
      }
      if (pos_ >= text_.size()) fail("unterminated string literal");
      ++pos_;
      skip_space();
    }
    return out;
  }

  std::string_view text_;
  std::string path_;
  size_t pos_ = 0;
  int line_ = 1;
};

// ---- The `api` field

struct ApiSpec {
  bool fn = false;
  std::string fn_name;  // empty: the schema's name
  bool method = false;
  std::map<std::string, std::optional<std::string>> hidden;  // argument -> value (nullopt: its default)
  std::map<std::string, std::string> extra_defaults;
  std::string nodefault_through;  // an argument name, or empty
};

ApiSpec parse_api(std::string_view text) {
  ApiSpec spec;
  std::istringstream words{std::string(text)};
  std::string w;
  auto split = [](const std::string& s) {
    size_t eq = s.find('=');
    return eq == std::string::npos ? std::pair{s, std::optional<std::string>()}
                                   : std::pair{s.substr(0, eq), std::optional<std::string>(s.substr(eq + 1))};
  };
  while (words >> w) {
    if (w == "fn") {
      spec.fn = true;
    } else if (w.starts_with("fn=")) {
      spec.fn = true;
      spec.fn_name = w.substr(3);
    } else if (w == "method") {
      spec.method = true;
    } else if (w.starts_with("hide:")) {
      auto [arg, value] = split(w.substr(5));
      spec.hidden[arg] = value;
    } else if (w.starts_with("default:")) {
      auto [arg, value] = split(w.substr(8));
      KILN_CHECK(value.has_value(), "api word '{}' needs a value: default:ARG=VALUE", w);
      spec.extra_defaults[arg] = *value;
    } else if (w.starts_with("nodefault:")) {
      spec.nodefault_through = w.substr(10);
    } else {
      KILN_FAIL(ErrorKind::Value, "unknown api word '{}'", w);
    }
  }
  return spec;
}

// ---- Schema types and literals in C++

std::string scalar_cpp_type(const Type& t) {
  switch (t.base) {
    case BaseType::Tensor: return "Tensor";
    case BaseType::Int:
    case BaseType::SymInt: return "int64_t";
    case BaseType::Float: return "double";
    case BaseType::Bool:
    case BaseType::SymBool: return "bool";
    case BaseType::Scalar: return "Scalar";
    case BaseType::Str: return "std::string_view";
    case BaseType::ScalarType: return "DType";
    case BaseType::Layout: return "Layout";
    case BaseType::Device: return "Device";
    case BaseType::MemoryFormat: return "MemoryFormat";
    case BaseType::Generator: break;
  }
  KILN_FAIL(ErrorKind::NotImplemented, "no C++ API type for {}", t.to_string());
}

// The parameter type of an argument of type `t`.
std::string param_type(const Type& t) {
  if (t.list) {
    std::string list;
    if (t.base == BaseType::Int || t.base == BaseType::SymInt) list = "IntArrayRef";
    else if (t.base == BaseType::Tensor && !t.element_optional) list = "std::span<const Tensor>";
    else KILN_FAIL(ErrorKind::NotImplemented, "no C++ API type for {}", t.to_string());
    return t.optional ? "std::optional<" + list + ">" : list;
  }
  std::string base = scalar_cpp_type(t);
  if (t.optional) {
    // Optional tensors by reference (they hold a refcount); small optionals by value, as today's API.
    return t.base == BaseType::Tensor ? "const std::optional<Tensor>&" : "std::optional<" + base + ">";
  }
  if (t.base == BaseType::Tensor || t.base == BaseType::Scalar) return "const " + base + "&";
  return base;
}

// A schema literal (a default, or a value in the api field) as a C++ expression of type `t`.
std::string cpp_literal(const std::string& text, const Type& t) {
  if (text == "None") {
    KILN_CHECK(t.optional, "default None for the non-optional type {}", t.to_string());
    return "std::nullopt";
  }
  if (t.list) {
    std::string body;
    if (text.starts_with("[")) {
      KILN_CHECK(text.ends_with("]"), "list literal '{}' has no closing ]", text);
      body = text.substr(1, text.size() - 2);
    } else {
      // A bare value for a sized list repeats (int[2] padding=0 is [0, 0]), as parse_default reads it.
      KILN_CHECK(t.list_size > 0, "default '{}' for {} must be a list", text, t.to_string());
      for (int64_t i = 0; i < t.list_size; ++i) body += (i ? ", " : "") + text;
    }
    return "{" + body + "}";
  }
  switch (t.base) {
    case BaseType::Bool:
      KILN_CHECK(text == "True" || text == "False", "'{}' is not a bool", text);
      return text == "True" ? "true" : "false";
    case BaseType::Int:
    case BaseType::SymInt:
    case BaseType::Float:
    case BaseType::Scalar: {
      KILN_CHECK(!text.empty() && text.find_first_not_of("0123456789.-+e") == std::string::npos, "'{}' is not a number",
                 text);
      return text;
    }
    case BaseType::Str:
      KILN_CHECK(text.size() >= 2 && text.front() == '\'' && text.back() == '\'', "'{}' is not a string", text);
      return "\"" + text.substr(1, text.size() - 2) + "\"";
    case BaseType::MemoryFormat:
      if (text == "contiguous_format") return "MemoryFormat::Contiguous";
      if (text == "channels_last") return "MemoryFormat::ChannelsLast";
      if (text == "preserve_format") return "MemoryFormat::Preserve";
      break;
    default: break;
  }
  KILN_FAIL(ErrorKind::NotImplemented, "no C++ literal for '{}' of type {}", text, t.to_string());
}

// ---- One C++ function

struct Param {
  std::string type, name;
  std::optional<std::string> default_value;
};

struct Function {
  std::string qualified;  // "aten::add.Tensor"
  std::string schema;     // as declared
  std::string name;       // the C++ name
  std::string result;     // the C++ return type
  bool returns_self = false;
  std::vector<Param> params;       // the C++ signature, self included
  std::vector<std::string> boxed;  // the values passed, in schema order
};

bool is_options_group(const std::vector<Argument>& args, size_t i) {
  static constexpr std::string_view kNames[] = {"dtype", "layout", "device", "pin_memory"};
  static constexpr BaseType kTypes[] = {BaseType::ScalarType, BaseType::Layout, BaseType::Device, BaseType::Bool};
  if (i + 4 > args.size()) return false;
  for (size_t k = 0; k < 4; ++k) {
    const Argument& a = args[i + k];
    if (a.name != kNames[k] || a.type.base != kTypes[k] || !a.type.optional || a.type.list ||
        a.default_text != "None") {
      return false;
    }
  }
  return true;
}

std::string result_type(const Schema& s, bool& returns_self) {
  returns_self = false;
  if (s.returns.size() == 1) {
    const Argument& r = s.returns[0];
    if (r.alias && r.alias->is_write) {
      KILN_CHECK(!s.arguments.empty() && s.arguments[0].alias && s.arguments[0].alias->set == r.alias->set,
                 "a written result must alias the first argument");
      returns_self = true;
      return "Tensor&";
    }
    if (r.type.list && r.type.base == BaseType::Tensor) return "std::vector<Tensor>";
    if (r.type.list || r.type.optional)
      KILN_FAIL(ErrorKind::NotImplemented, "no C++ result type for {}", r.type.to_string());
    return scalar_cpp_type(r.type);
  }
  std::string out = "std::tuple<";
  for (size_t i = 0; i < s.returns.size(); ++i) {
    KILN_CHECK(s.returns[i].type.base == BaseType::Tensor && !s.returns[i].type.list && !s.returns[i].type.optional,
               "a multi-result op returns tensors only");
    out += i ? ", Tensor" : "Tensor";
  }
  return out + ">";
}

Function make_function(const Schema& s, const ApiSpec& spec) {
  Function f;
  f.qualified = s.qualified_name();
  f.schema = s.text;
  f.name = spec.fn_name.empty() ? s.name : spec.fn_name;
  f.result = result_type(s, f.returns_self);

  auto known = [&](const std::string& arg) {
    KILN_CHECK(s.argument_index(arg) >= 0, "api names '{}', which is not an argument", arg);
  };
  for (const auto& [arg, value] : spec.hidden) known(arg);
  for (const auto& [arg, value] : spec.extra_defaults) known(arg);
  if (!spec.nodefault_through.empty()) known(spec.nodefault_through);

  bool no_defaults = !spec.nodefault_through.empty();
  const auto& args = s.arguments;
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument& a = args[i];
    if (is_options_group(args, i)) {
      f.params.push_back({"TensorOptions", "options", no_defaults ? std::nullopt : std::optional<std::string>("{}")});
      f.boxed.insert(f.boxed.end(), {"options.dtype_", "std::nullopt", "options.device_", "std::nullopt"});
      i += 3;
      continue;
    }
    if (auto h = spec.hidden.find(a.name); h != spec.hidden.end()) {
      std::optional<std::string> value = h->second ? h->second : a.default_text;
      KILN_CHECK(value.has_value(), "hidden argument '{}' has no default: write hide:{}=VALUE", a.name, a.name);
      f.boxed.push_back(cpp_literal(*value, a.type));
      continue;
    }
    Param p{param_type(a.type), a.name, std::nullopt};
    if (i == 0 && f.returns_self) p.type = "Tensor&";
    std::optional<std::string> def = a.default_text;
    if (auto d = spec.extra_defaults.find(a.name); d != spec.extra_defaults.end()) def = d->second;
    if (def && !no_defaults) p.default_value = cpp_literal(*def, a.type);
    if (a.name == spec.nodefault_through) no_defaults = false;
    f.boxed.push_back(a.name);
    f.params.push_back(std::move(p));
  }
  // C++ defaults are trailing: a default before a parameter without one is dropped.
  bool later_required = false;
  for (auto it = f.params.rbegin(); it != f.params.rend(); ++it) {
    if (later_required) it->default_value.reset();
    if (!it->default_value) later_required = true;
  }
  return f;
}

// ---- Emitting code

// `head` + "(" + params + ")" + `tail`, wrapped at 120 columns with continuation lines aligned
// after the parenthesis, as clang-format would.
std::string wrap_call(const std::string& head, const std::vector<std::string>& items, const std::string& tail,
                      const std::string& indent = "") {
  std::string line = indent + head + "(";
  const std::string cont(line.size() < 60 ? line.size() : indent.size() + 4, ' ');
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string piece = items[i] + (i + 1 < items.size() ? "," : ")" + tail);
    if (line.size() + piece.size() + 1 > 120 && line.size() > cont.size()) {
      out += line + "\n";
      line = cont + piece;
    } else {
      line += (line.back() == '(' ? "" : " ") + piece;
    }
  }
  if (items.empty()) line += ")" + tail;
  return out + line;
}

std::vector<std::string> param_texts(const std::vector<Param>& params, size_t first, bool with_defaults) {
  std::vector<std::string> out;
  for (size_t i = first; i < params.size(); ++i) {
    std::string p = params[i].type + " " + params[i].name;
    if (with_defaults && params[i].default_value) p += " = " + *params[i].default_value;
    out.push_back(p);
  }
  return out;
}

std::string body(const Function& f, const std::string& self) {
  std::vector<std::string> args{fmt::format("KILN_OP(\"{}\")", f.qualified)};
  for (size_t i = 0; i < f.boxed.size(); ++i) args.push_back(i == 0 && !self.empty() ? self : f.boxed[i]);
  std::string r = f.returns_self ? "Tensor" : f.result;
  if (f.returns_self) {
    return wrap_call("detail::call<" + r + ">", args, ";", "  ") + "\n  return " + (self.empty() ? "self" : self) +
           ";\n";
  }
  return wrap_call("return detail::call<" + r + ">", args, ";", "  ") + "\n";
}

// Overloads of one name that the same call could reach through their defaults alone: for some
// argument count both accept, the leading parameter types are the same. Such a row pair is an
// error here, not at some later call site.
struct Signature {
  std::vector<std::string> types;  // without const and &
  size_t required = 0;
  std::string op;
  int line = 0;
};

Signature signature(const Function& f, size_t first, int line) {
  Signature sig{{}, 0, f.qualified, line};
  for (size_t i = first; i < f.params.size(); ++i) {
    std::string t = f.params[i].type;
    if (t.starts_with("const ")) t.erase(0, 6);
    if (t.ends_with("&")) t.pop_back();
    sig.types.push_back(t);
    if (!f.params[i].default_value) ++sig.required;
  }
  return sig;
}

void check_unambiguous(std::vector<Signature>& overloads, const std::string& what, Signature sig) {
  for (const Signature& other : overloads) {
    size_t most = std::min(sig.types.size(), other.types.size());
    for (size_t n = std::max(sig.required, other.required); n <= most; ++n) {
      KILN_CHECK(
          !std::equal(sig.types.begin(), sig.types.begin() + static_cast<std::ptrdiff_t>(n), other.types.begin()),
          "{} is ambiguous with {} (line {}) for a call with {} argument(s): give one of them nodefault:ARG", what,
          other.op, other.line, n);
    }
  }
  overloads.push_back(std::move(sig));
}

constexpr std::string_view kBanner =
    "// Generated by kiln_gen_api (src/kiln/ops/gen/gen_api.cpp) from src/kiln/ops/native_ops.def: do not\n"
    "// edit; change the op's row instead.\n";

struct Output {
  std::string functions_h, functions_cpp, methods_inc, methods_cpp;
  int functions = 0, methods = 0;
};

// The functions of `rows` (native rows in namespace kiln, prims rows in kiln::prims).
Output generate(const std::vector<Row>& rows, const std::string& path, bool prims = false) {
  Output o;
  std::string& h = o.functions_h;
  std::string& cpp = o.functions_cpp;
  std::string& inc = o.methods_inc;
  std::string& mcpp = o.methods_cpp;
  const std::string ns = prims ? "kiln::prims" : "kiln";
  const std::string banner = prims ? std::string(kBanner).replace(kBanner.find("native_ops.def"), 14, "prims_ops.def")
                                   : std::string(kBanner);
  h = banner +
      (prims ? "// The prims' typed C++ API: one function per prim whose row offers it (`fn`), each a call through\n"
               "// the dispatcher with its arguments boxed in schema order. ops/prims_api.h adds the rest.\n"
             : "// The typed C++ API: one function per op overload the table offers (`fn`), each a call through\n"
               "// the dispatcher with its arguments boxed in schema order. ops/api.h adds the hand-written rest.\n") +
      "#pragma once\n\n#include <cstdint>\n#include <optional>\n#include <span>\n#include <string_view>\n"
      "#include <tuple>\n#include <vector>\n\n#include \"kiln/ops/tensor.h\"\n#include \"kiln/ops/tensor_options.h\"\n\n"
      "namespace " +
      ns + " {\n";
  cpp = banner + "#include \"kiln/ops/generated/" + (prims ? "prims_functions.h" : "functions.h") +
        "\"\n\n#include \"kiln/ops/boxing.h\"\n\nnamespace " + ns + " {\n";
  inc = std::string(kBanner) +
        "// Tensor's methods for the ops whose rows say `method`; included inside class Tensor (ops/tensor.h).\n";
  mcpp = std::string(kBanner) + "#include \"kiln/ops/boxing.h\"\n#include \"kiln/ops/tensor.h\"\n\nnamespace kiln {\n";

  std::map<std::string, std::vector<Signature>> functions, methods;  // by C++ name
  for (const Row& row : rows) {
    try {
      ApiSpec spec = parse_api(row.api);
      if (!spec.fn && !spec.method) {
        KILN_CHECK(spec.hidden.empty() && spec.extra_defaults.empty() && spec.nodefault_through.empty(),
                   "api words without fn or method");
        continue;
      }
      Schema s = parse_schema(row.schema);
      if (prims) s.ns = "prims";
      KILN_CHECK(!prims || !spec.method, "prims have no Tensor methods");
      Function f = make_function(s, spec);
      std::string comment = "// " + f.qualified.substr(0, f.qualified.find("::") + 2) + f.schema + "\n";
      if (spec.fn) {
        check_unambiguous(functions[f.name], ns + "::" + f.name, signature(f, 0, row.line));
        h += "\n" + comment + wrap_call(f.result + " " + f.name, param_texts(f.params, 0, true), ";") + "\n";
        cpp += "\n" + wrap_call(f.result + " " + f.name, param_texts(f.params, 0, false), " {") + "\n" + body(f, "") +
               "}\n";
        ++o.functions;
      }
      if (spec.method) {
        KILN_CHECK(!s.arguments.empty() && s.arguments[0].name == "self" && f.params.size() > 0 &&
                       f.params[0].name == "self" && f.params[0].type.find("Tensor&") != std::string::npos,
                   "a method needs a first argument `Tensor self`");
        check_unambiguous(methods[f.name], "Tensor::" + f.name, signature(f, 1, row.line));
        std::string cv = f.returns_self ? "" : " const";
        inc += "  " + comment + wrap_call(f.result + " " + f.name, param_texts(f.params, 1, true), cv + ";", "  ") +
               "\n";
        mcpp += "\n" + wrap_call(f.result + " Tensor::" + f.name, param_texts(f.params, 1, false), cv + " {") + "\n" +
                body(f, "*this") + "}\n";
        ++o.methods;
      }
    } catch (const Error& e) {
      KILN_FAIL(ErrorKind::Value, "{}:{}: {}: {}", path, row.line, row.schema.substr(0, row.schema.find('(')),
                e.what());
    }
  }
  h += "\n}  // namespace " + ns + "\n";
  cpp += "\n}  // namespace " + ns + "\n";
  mcpp += "\n}  // namespace kiln\n";
  return o;
}

// ---- Op handles

// The C++ name of an op's handle: its name, then its overload ("add.Tensor" -> add_Tensor).
std::string handle_name(const Schema& s) {
  static const std::set<std::string> kKeywords = {"and", "and_eq", "bitand", "bitor", "compl", "default", "delete",
                                                  "new", "not",    "not_eq", "or",    "or_eq", "xor",     "xor_eq"};
  std::string name = s.overload.empty() ? s.name : s.name + "_" + s.overload;
  return kKeywords.contains(name) ? name + "_" : name;
}

// handles.h and handles.cpp: a function per op of the tables returning its handle, looked up once.
std::pair<std::string, std::string> generate_handles(const std::vector<Row>& rows) {
  constexpr std::string_view kHandlesBanner =
      "// Generated by kiln_gen_api (src/kiln/ops/gen/gen_api.cpp) from src/kiln/ops/native_ops.def and\n"
      "// src/kiln/ops/prims_ops.def: do not edit; change the op's row instead.\n";
  std::string h = std::string(kHandlesBanner) +
                  "// A typed handle per op of the tables, looked up once: code that recognizes an op compares\n"
                  "// handles (node->op() == kiln::op::prims::mul()) instead of names. A row removed from a table\n"
                  "// removes its handle, so a stale use fails to compile.\n"
                  "#pragma once\n\n#include \"kiln/ops/registry.h\"\n\nnamespace kiln::op {\n";
  std::string cpp = std::string(kHandlesBanner) + "#include \"kiln/ops/generated/handles.h\"\n\nnamespace kiln::op {\n";
  std::map<std::string, std::map<std::string, std::string>> by_ns;  // ns -> C++ name -> qualified op name
  for (const Row& row : rows) {
    Schema s = parse_schema(row.schema);
    std::string qualified = row.ns + "::" + s.name + (s.overload.empty() ? "" : "." + s.overload);
    auto [it, fresh] = by_ns[row.ns].emplace(handle_name(s), qualified);
    KILN_CHECK(fresh, "ops {} and {} have the same handle name {}", it->second, qualified, it->first);
  }
  for (const auto& [ns, handles] : by_ns) {
    h += "namespace " + ns + " {\n";
    cpp += "namespace " + ns + " {\n";
    for (const auto& [name, qualified] : handles) {
      h += fmt::format("OpHandle {}();  // {}\n", name, qualified);
      cpp += fmt::format(
          "OpHandle {}() {{\n  static const OpHandle h = Registry::global().get(\"{}\");\n  return h;\n}}\n", name,
          qualified);
    }
    h += "}  // namespace " + ns + "\n";
    cpp += "}  // namespace " + ns + "\n";
  }
  h += "}  // namespace kiln::op\n";
  cpp += "}  // namespace kiln::op\n";
  return {h, cpp};
}

// Writes `text` to `path` unless the file already holds exactly that.
void write_if_changed(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::stringstream old;
    old << in.rdbuf();
    if (old.str() == text) return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  KILN_CHECK(out.good(), "cannot write {}", path);
}

}  // namespace
}  // namespace kiln::gen

int main(int argc, char** argv) {
  using namespace kiln::gen;
  if (argc != 4) {
    std::fprintf(stderr, "usage: kiln_gen_api <native_ops.def> <prims_ops.def> <output dir>\n");
    return 2;
  }
  try {
    auto read = [](const char* path) {
      std::ifstream in(path, std::ios::binary);
      KILN_CHECK(in.good(), "cannot read {}", path);
      std::stringstream text;
      text << in.rdbuf();
      return text.str();
    };
    std::string native_source = read(argv[1]), prims_source = read(argv[2]);
    std::vector<Row> rows = DefReader(native_source, argv[1]).rows();
    Output o = generate(rows, argv[1]);
    std::vector<Row> prims = DefReader(prims_source, argv[2]).rows();
    for (const Row& p : prims) KILN_CHECK(p.ns == "prims", "{}:{}: expected KILN_PRIM rows only", argv[2], p.line);
    rows.insert(rows.end(), prims.begin(), prims.end());
    Output p = generate(prims, argv[2], /*prims=*/true);
    auto [handles_h, handles_cpp] = generate_handles(rows);
    std::string dir = argv[3];
    write_if_changed(dir + "/functions.h", o.functions_h);
    write_if_changed(dir + "/functions.cpp", o.functions_cpp);
    write_if_changed(dir + "/methods.inc", o.methods_inc);
    write_if_changed(dir + "/methods.cpp", o.methods_cpp);
    write_if_changed(dir + "/prims_functions.h", p.functions_h);
    write_if_changed(dir + "/prims_functions.cpp", p.functions_cpp);
    write_if_changed(dir + "/handles.h", handles_h);
    write_if_changed(dir + "/handles.cpp", handles_cpp);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln_gen_api: %s\n", e.what());
    return 1;
  }
  return 0;
}
