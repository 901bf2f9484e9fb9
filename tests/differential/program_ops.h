// The ops a differential program may call, by name: each parses its argument tokens (program.h's
// text form) and calls kiln's public API. Internal to the differential tier.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/error.h"
#include "program.h"

namespace kiln::difftest {

int64_t to_int(const std::string& tok);
Shape to_shape(const std::string& tok);
std::string shape_str(IntArrayRef s);
// A scalar token: i:5, f:-0.0, f:nan, f:inf, b:1.
Scalar to_scalar(const std::string& tok);
bool is_scalar(const std::string& tok);

// The environment one run evaluates calls in.
struct Env {
  std::map<std::string, Tensor> values;
  Precision precision;
  Device factories = kCPU;

  const Tensor& t(const std::string& name) const {
    auto it = values.find(name);
    KILN_CHECK(it != values.end(), "difftest: unknown value '{}'", name);
    return it->second;
  }
  std::optional<Tensor> opt_t(const std::string& tok) const {
    if (tok == "none") return std::nullopt;
    return t(tok);
  }
  std::vector<Tensor> tensors(const std::string& tok) const {
    std::vector<Tensor> out;
    for (const auto& item : list_items(tok)) out.push_back(t(item));
    return out;
  }
  DType dtype(const std::string& tok) const {
    auto d = parse_dtype(tok);
    KILN_CHECK(d.has_value(), "difftest: unknown dtype '{}'", tok);
    if (precision == Precision::Float64 && is_floating(*d)) return DType::Float64;
    return *d;
  }
};

using Args = std::vector<std::string>;
using Impl = std::function<std::vector<Tensor>(const Env&, const Args&)>;

// Every op by name.
const std::map<std::string, Impl>& ops();

}  // namespace kiln::difftest
