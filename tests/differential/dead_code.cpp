#include "dead_code.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "generator.h"

namespace kiln::difftest {
namespace {

// Each call's results evaluated on meta tensors (dtypes and sizes), up to the first call that
// raises on types alone.
std::map<std::string, Tensor> meta_values(const Program& p) {
  std::map<std::string, Tensor> values;
  std::vector<Tensor> metas = meta_inputs(p);
  for (size_t i = 0; i < metas.size(); ++i) values[p.inputs[i].name] = metas[i];
  for (const auto& c : p.calls) {
    std::vector<Tensor> r;
    try {
      r = apply_call(c, values, Precision::Native, kMeta);
    } catch (const Error&) {
      return values;
    }
    for (size_t i = 0; i < r.size() && i < c.results.size(); ++i) values[c.results[i]] = r[i];
  }
  return values;
}

bool is_view(const std::string& op) {
  static const std::set<std::string> views = {"slice",     "select",  "diagonal", "transpose", "permute",
                                              "unsqueeze", "squeeze", "view",     "reshape",   "expand"};
  return views.contains(op);
}

}  // namespace

// isinf/isnan of an integer is false everywhere: a `full` of false laid out as the test's result
// (which follows its input's layout): the full in the result's dims ordered by stride, permuted back.
Program fold_float_tests_of_integers(const Program& p) {
  Program out = p;
  out.calls.clear();
  auto values = meta_values(p);
  for (const auto& c : p.calls) {
    if (!((c.op == "isinf" || c.op == "isnan") && values.contains(c.args.at(0)) && values.contains(c.results.at(0)) &&
          !is_floating(values.at(c.args[0]).dtype()))) {
      out.calls.push_back(c);
      continue;
    }
    const Tensor& r = values.at(c.results[0]);
    std::vector<int64_t> order(static_cast<size_t>(r.dim()));
    for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return r.stride(a) > r.stride(b); });
    std::vector<int64_t> sizes, back(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      sizes.push_back(r.size(order[k]));
      back[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    }
    std::string dense = c.results[0] + "_false";
    out.calls.push_back(OpCall{{dense}, "full", {fmt::format("[{}]", fmt::join(sizes, ",")), "i:0", "bool"}});
    out.calls.push_back(OpCall{c.results, "permute", {dense, fmt::format("[{}]", fmt::join(back, ","))}});
  }
  return out;
}

Program divide_only_read_elements(const Program& p) {
  auto values = meta_values(p);
  auto names = value_names(p);
  // A call whose results are all empty computes no element, so reads none of its arguments.
  auto computes_nothing = [&](const OpCall& c) {
    return std::all_of(c.results.begin(), c.results.end(),
                       [&](const std::string& r) { return values.contains(r) && values.at(r).numel() == 0; });
  };
  // Read only through views, or through elementwise ops whose results are read so in turn
  // (logical_not(x / y)[3]: fused, compiled code computes the one element the slice reads).
  std::function<bool(const std::string&, int)> read_only_through_views = [&](const std::string& v, int depth) {
    if (depth > 16 || std::find(p.outputs.begin(), p.outputs.end(), v) != p.outputs.end()) return false;
    bool read = false;
    for (const auto& c : p.calls) {
      for (const auto& a : c.args) {
        auto r = refs(a, names);
        if (std::find(r.begin(), r.end(), v) == r.end()) continue;
        if (computes_nothing(c)) {
          read = true;
          continue;
        }
        bool through = is_view(c.op) || (is_elementwise_op(c.op) && c.results.size() == 1 &&
                                         read_only_through_views(c.results[0], depth + 1));
        if (!through) return false;
        read = true;
      }
    }
    return read;
  };
  Program out = p;
  out.calls.clear();
  int fresh = 0;
  for (auto c : p.calls) {
    bool division = c.op == "div" || c.op == "remainder" || c.op == "fmod";
    if (division && c.args.size() >= 2 && values.contains(c.args[1]) && values.contains(c.results.at(0))) {
      DType d = values.at(c.results[0]).dtype();
      DType divisor = values.at(c.args[1]).dtype();
      if (!is_floating(d) && d != DType::Bool && read_only_through_views(c.results[0], 0)) {
        std::string zero = fmt::format("safe_divisor_{}_is_zero", fresh);
        std::string one = fmt::format("safe_divisor_{}_one", fresh);
        std::string safe = fmt::format("safe_divisor_{}", fresh++);
        out.calls.push_back(OpCall{{zero}, "eq", {c.args[1], "i:0"}});
        out.calls.push_back(OpCall{{one}, "scalar_tensor", {"i:1", std::string(dtype_name(divisor))}});
        out.calls.push_back(OpCall{{safe}, "where", {zero, one, c.args[1]}});
        c.args[1] = safe;
      }
    }
    out.calls.push_back(c);
  }
  return out;
}

}  // namespace kiln::difftest
