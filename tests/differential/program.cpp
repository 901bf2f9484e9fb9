#include "program.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "kiln/core/tolerance.h"
#include "kiln/core/type_promotion.h"
#include "kiln/support/error.h"
#include "program_ops.h"

namespace kiln::difftest {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

}  // namespace

bool is_list(const std::string& tok) { return tok.size() >= 2 && tok.front() == '[' && tok.back() == ']'; }

std::vector<std::string> list_items(const std::string& tok) {
  KILN_CHECK(is_list(tok), "difftest: expected a list like [1,2], got '{}'", tok);
  std::string inner = tok.substr(1, tok.size() - 2);
  if (inner.empty()) return {};
  return split(inner, ',');
}

int64_t InputSpec::storage_elements() const { return offset + storage_span(sizes, strides); }

std::string Program::str() const {
  std::ostringstream out;
  for (const auto& c : comments) out << "# " << c << "\n";
  for (const auto& in : inputs) {
    out << "input " << in.name << " " << dtype_name(in.dtype) << " " << shape_str(in.sizes) << " "
        << shape_str(in.strides) << " " << in.offset << " " << in.fill << " " << in.seed << "\n";
  }
  for (const auto& c : calls) {
    for (const auto& r : c.results) out << r << " ";
    out << "= " << c.op;
    for (const auto& a : c.args) out << " " << a;
    out << "\n";
  }
  out << "output";
  for (const auto& o : outputs) out << " " << o;
  out << "\n";
  return out.str();
}

Program parse_program(const std::string& text) {
  Program p;
  int line_no = 0;
  bool have_output = false;
  for (const auto& line : split(text, '\n')) {
    ++line_no;
    auto w = words(line);
    if (w.empty()) continue;
    if (w[0][0] == '#') {
      std::string c = line.substr(line.find('#') + 1);
      p.comments.push_back(c.starts_with(" ") ? c.substr(1) : c);
      continue;
    }
    if (w[0] == "input") {
      KILN_CHECK(w.size() == 8, "difftest: line {}: input takes 7 fields: '{}'", line_no, line);
      InputSpec in;
      in.name = w[1];
      auto d = parse_dtype(w[2]);
      KILN_CHECK(d.has_value(), "difftest: line {}: unknown dtype '{}'", line_no, w[2]);
      in.dtype = *d;
      in.sizes = to_shape(w[3]);
      in.strides = to_shape(w[4]);
      KILN_CHECK(in.sizes.size() == in.strides.size(), "difftest: line {}: sizes and strides differ in rank", line_no);
      in.offset = to_int(w[5]);
      in.fill = w[6];
      in.seed = static_cast<uint64_t>(to_int(w[7]));
      p.inputs.push_back(in);
    } else if (w[0] == "output") {
      p.outputs.assign(w.begin() + 1, w.end());
      have_output = true;
    } else {
      auto eq = std::find(w.begin(), w.end(), "=");
      KILN_CHECK(eq != w.end() && eq != w.begin() && eq + 1 != w.end(),
                 "difftest: line {}: expected "
                 "'results = op args': '{}'",
                 line_no, line);
      OpCall c;
      c.results.assign(w.begin(), eq);
      c.op = *(eq + 1);
      c.args.assign(eq + 2, w.end());
      KILN_CHECK(ops().contains(c.op), "difftest: line {}: unknown op '{}'", line_no, c.op);
      p.calls.push_back(c);
    }
  }
  KILN_CHECK(have_output, "difftest: program has no output line");
  return p;
}

std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs, Precision precision,
                                Device factories) {
  KILN_CHECK(inputs.size() == p.inputs.size(), "difftest: program has {} inputs, given {}", p.inputs.size(),
             inputs.size());
  // The float64 run is float64 throughout: floats made from integers and scalars too, as PyTorch's
  // with torch.set_default_dtype(torch.float64) (torch_ref.py).
  std::optional<DefaultFloatDType> wide;
  if (precision == Precision::Float64) wide.emplace(DType::Float64);
  Env env{{}, precision, factories};
  for (size_t i = 0; i < inputs.size(); ++i) env.values[p.inputs[i].name] = inputs[i];
  for (const auto& c : p.calls) {
    std::vector<Tensor> r = ops().at(c.op)(env, c.args);
    KILN_CHECK(r.size() == c.results.size(), "difftest: {} gives {} results, {} named", c.op, r.size(),
               c.results.size());
    for (size_t i = 0; i < r.size(); ++i) env.values[c.results[i]] = r[i];
  }
  std::vector<Tensor> out;
  for (const auto& o : p.outputs) out.push_back(env.t(o));
  return out;
}

std::vector<Tensor> apply_call(const OpCall& c, const std::map<std::string, Tensor>& values, Precision precision,
                               Device factories) {
  std::optional<DefaultFloatDType> wide;
  if (precision == Precision::Float64) wide.emplace(DType::Float64);
  Env env{values, precision, factories};
  auto it = ops().find(c.op);
  KILN_CHECK(it != ops().end(), "difftest: unknown op '{}'", c.op);
  return it->second(env, c.args);
}

std::vector<Tensor> meta_inputs(const Program& p) {
  std::vector<Tensor> metas;
  for (const auto& in : p.inputs) {
    Tensor storage = empty({in.storage_elements()}, TensorOptions(in.dtype).device(kMeta));
    metas.push_back(as_strided(storage, in.sizes, in.strides, in.offset));
  }
  return metas;
}

std::vector<std::optional<DType>> loosest_float_dtypes(const Program& p, Precision precision) {
  std::map<std::string, Tensor> values;
  std::map<std::string, std::optional<DType>> loosest;
  auto own = [](const Tensor& t) { return is_floating(t.dtype()) ? std::optional(t.dtype()) : std::nullopt; };
  std::vector<Tensor> metas = meta_inputs(p);
  if (precision == Precision::Float64) {
    for (auto& m : metas) {
      if (is_floating(m.dtype())) m = m.to(DType::Float64);
    }
  }
  for (size_t i = 0; i < metas.size(); ++i) {
    values[p.inputs[i].name] = metas[i];
    loosest[p.inputs[i].name] = own(metas[i]);
  }
  std::set<std::string> names;
  for (const auto& [name, unused] : values) names.insert(name);
  for (const auto& c : p.calls) {
    std::vector<Tensor> out;
    try {
      out = apply_call(c, values, precision, kMeta);
    } catch (const Error&) {  // the program raises before any value exists: nothing to compare
      return std::vector<std::optional<DType>>(p.outputs.size());
    }
    std::optional<DType> from;
    for (const auto& a : c.args) {
      std::vector<std::string> items = is_list(a) ? list_items(a) : std::vector<std::string>{a};
      for (const auto& item : items) {
        if (loosest.contains(item)) from = looser_float(from, loosest[item]);
      }
    }
    for (size_t i = 0; i < out.size(); ++i) {
      values[c.results[i]] = out[i];
      loosest[c.results[i]] = looser_float(from, own(out[i]));
    }
  }
  std::vector<std::optional<DType>> result;
  for (const auto& o : p.outputs) result.push_back(loosest.at(o));
  return result;
}

std::string op_family(const std::string& op) {
  static const std::map<std::string, std::string> kFamilies = {
      {"native_layer_norm", "layer_norm"}, {"std", "var"}, {"max_dim", "amax"}, {"min_dim", "amin"}};
  auto it = kFamilies.find(op);
  return it == kFamilies.end() ? op : it->second;
}

std::vector<std::string> known_ops() {
  std::vector<std::string> names;
  for (const auto& [name, unused] : ops()) names.push_back(name);
  return names;
}

namespace {

// The token with every value name in `names` renamed by `rename`.
std::string rename_token(const std::string& tok, const std::set<std::string>& names,
                         const std::function<std::string(const std::string&)>& rename) {
  if (names.contains(tok)) return rename(tok);
  if (!is_list(tok)) return tok;
  auto items = list_items(tok);
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += names.contains(items[i]) ? rename(items[i]) : items[i];
  }
  return out + "]";
}

}  // namespace

std::set<std::string> value_names(const Program& p) {
  std::set<std::string> names;
  for (const auto& in : p.inputs) names.insert(in.name);
  for (const auto& c : p.calls) names.insert(c.results.begin(), c.results.end());
  return names;
}

// Value names a token refers to.
std::vector<std::string> refs(const std::string& tok, const std::set<std::string>& names) {
  if (names.contains(tok)) return {tok};
  std::vector<std::string> out;
  if (is_list(tok)) {
    for (const auto& item : list_items(tok)) {
      if (names.contains(item)) out.push_back(item);
    }
  }
  return out;
}

Program merge_programs(const std::vector<Program>& programs, std::vector<size_t>* output_owner) {
  Program merged;
  if (output_owner) output_owner->clear();
  for (size_t k = 0; k < programs.size(); ++k) {
    const Program& p = programs[k];
    std::string prefix = fmt::format("p{}_", k);
    auto names = value_names(p);
    auto rename = [&](const std::string& n) { return fmt::format("{}{}", prefix, n); };
    for (auto in : p.inputs) {
      in.name = rename(in.name);
      merged.inputs.push_back(in);
    }
    for (auto c : p.calls) {
      for (auto& r : c.results) r = rename(r);
      for (auto& a : c.args) a = rename_token(a, names, rename);
      merged.calls.push_back(c);
    }
    for (const auto& o : p.outputs) {
      merged.outputs.push_back(rename(o));
      if (output_owner) output_owner->push_back(k);
    }
  }
  return merged;
}

Program prune(Program p) {
  p = live_calls(std::move(p));
  std::set<std::string> needed(p.outputs.begin(), p.outputs.end());
  auto names = value_names(p);
  for (const auto& c : p.calls) {
    for (const auto& a : c.args) {
      for (const auto& r : refs(a, names)) needed.insert(r);
    }
  }
  std::erase_if(p.inputs, [&](const InputSpec& in) { return !needed.contains(in.name); });
  return p;
}

Program live_calls(Program p) {
  auto names = value_names(p);
  std::set<std::string> needed(p.outputs.begin(), p.outputs.end());
  std::vector<OpCall> kept;
  for (auto it = p.calls.rbegin(); it != p.calls.rend(); ++it) {
    bool used = std::any_of(it->results.begin(), it->results.end(), [&](const auto& r) { return needed.contains(r); });
    if (!used) continue;
    for (const auto& a : it->args) {
      for (const auto& r : refs(a, names)) needed.insert(r);
    }
    kept.push_back(*it);
  }
  std::reverse(kept.begin(), kept.end());
  p.calls = kept;
  return p;
}

}  // namespace kiln::difftest
