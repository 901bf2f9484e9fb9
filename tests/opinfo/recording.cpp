#include "recording.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::opinfo {
namespace {

Shape parse_shape(const std::string& text, const std::string& where) {
  KILN_CHECK(text.size() >= 2 && text.front() == '[' && text.back() == ']', "{}: '{}' is not a size list", where, text);
  Shape out;
  std::stringstream items(text.substr(1, text.size() - 2));
  for (std::string item; std::getline(items, item, ',');) out.push_back(std::stoll(item));
  return out;
}

// The top-level items of a bracketed list token.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  int depth = 0;
  std::string cur;
  for (size_t k = 1; k + 1 < text.size(); ++k) {
    char c = text[k];
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
      continue;
    }
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    cur += c;
  }
  if (!cur.empty()) items.push_back(cur);
  return items;
}

}  // namespace

Token parse_token(const std::string& text) {
  Token t{Token::Kind::None, "", 0, 0, {}};
  if (text == "none") return t;
  if (!text.empty() && text.front() == '[') {
    KILN_CHECK(text.back() == ']', "opinfo: unterminated list '{}'", text);
    t.kind = Token::Kind::List;
    for (const auto& item : split_list(text)) t.items.push_back(parse_token(item));
    return t;
  }
  if (text.size() > 1 && text[0] == 'T' && std::isdigit(static_cast<unsigned char>(text[1]))) {
    t.kind = Token::Kind::TensorRef;
    t.i = std::stoll(text.substr(1));
    return t;
  }
  size_t colon = text.find(':');
  KILN_CHECK(colon != std::string::npos, "opinfo: unknown token '{}'", text);
  std::string kind = text.substr(0, colon), body = text.substr(colon + 1);
  if (kind == "b") t.kind = Token::Kind::Bool, t.i = body == "1";
  else if (kind == "i") t.kind = Token::Kind::Int, t.i = std::stoll(body);
  else if (kind == "f") t.kind = Token::Kind::Float, t.f = std::strtod(body.c_str(), nullptr);
  else if (kind == "s") t.kind = Token::Kind::Str, t.text = body;
  else if (kind == "dtype") t.kind = Token::Kind::DType, t.text = body;
  else if (kind == "device") t.kind = Token::Kind::Device, t.text = body;
  else if (kind == "layout") t.kind = Token::Kind::Layout, t.text = body;
  else if (kind == "memory_format") t.kind = Token::Kind::MemoryFormat, t.text = body;
  else KILN_FAIL(ErrorKind::Value, "opinfo: unknown token kind '{}' in '{}'", kind, text);
  return t;
}

Recording read_recording(const std::string& dir) {
  Recording r;
  std::string index = dir + "/calls.txt";
  std::ifstream in(index);
  KILN_CHECK(in.good(), "opinfo: cannot read {}", index);
  std::string line;
  std::getline(in, line);
  KILN_CHECK(line == "kiln-opinfo-recording 1", "{}: not a recording of version 1 (first line '{}')", index, line);
  Call* call = nullptr;
  for (int n = 2; std::getline(in, line); ++n) {
    std::string where = fmt::format("{}:{}", index, n);
    std::stringstream words(line);
    std::string head;
    words >> head;
    if (head == "call") {
      r.calls.emplace_back();
      call = &r.calls.back();
      words >> call->op >> call->source;
      continue;
    }
    KILN_CHECK(call != nullptr, "{}: '{}' outside a call", where, head);
    if (head == "tensor") {
      std::string token, dtype, sizes, strides;
      TensorEntry e;
      words >> token >> dtype >> sizes >> strides >> e.storage_offset >> e.offset >> e.bytes;
      auto d = parse_dtype(dtype);
      KILN_CHECK(d.has_value() && token == fmt::format("T{}", call->tensors.size()), "{}: bad tensor line", where);
      e.dtype = *d;
      e.sizes = parse_shape(sizes, where);
      e.strides = parse_shape(strides, where);
      call->tensors.push_back(e);
    } else if (head == "args") {
      for (std::string tok; words >> tok;) {
        size_t eq = tok.find('=');
        if (eq != std::string::npos && tok.front() != '[')
          call->kwargs.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
        else call->args.push_back(tok);
      }
    } else if (head == "out") {
      std::string tok;
      words >> tok;
      call->out = tok;
    } else if (head == "ref") {
      std::string tok;
      words >> tok;
      call->ref = tok;
    } else if (head == "raises") {
      std::getline(words, call->raised);
    } else if (head == "end") {
      call = nullptr;
    } else {
      KILN_FAIL(ErrorKind::Value, "{}: unknown line '{}'", where, head);
    }
  }
  std::ifstream bin(dir + "/data.bin", std::ios::binary);
  KILN_CHECK(bin.good(), "opinfo: cannot read {}/data.bin", dir);
  r.data.assign(std::istreambuf_iterator<char>(bin), std::istreambuf_iterator<char>());
  return r;
}

Tensor Recording::tensor(const Call& call, size_t k) const {
  KILN_CHECK(k < call.tensors.size(), "opinfo: {} ({}) has no tensor T{}", call.op, call.source, k);
  const TensorEntry& e = call.tensors[k];
  int64_t item = static_cast<int64_t>(element_size(e.dtype));
  KILN_CHECK(e.offset >= 0 && e.offset + e.bytes <= static_cast<int64_t>(data.size()) && e.bytes % item == 0,
             "opinfo: tensor T{} of {} lies outside data.bin", k, call.source);
  Tensor base(empty_tensor({e.bytes / item}, e.dtype, kCPU));
  if (e.bytes > 0) std::memcpy(base.data_ptr(), data.data() + e.offset, static_cast<size_t>(e.bytes));
  return as_strided(base, e.sizes, e.strides, e.storage_offset);
}

}  // namespace kiln::opinfo
