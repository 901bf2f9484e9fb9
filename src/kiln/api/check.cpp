#include "kiln/api/check.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "kiln/core/generator.h"
#include "kiln/core/tolerance.h"
#include "kiln/core/type_promotion.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/ops/api.h"
#include "kiln/support/log.h"

namespace kiln {
namespace {

using graph::Node;
using graph::NodeKind;
using graph::ValueRef;

// A tensor's elements in row-major order: doubles for floats, exact int64 for integers and bool.
struct Elements {
  bool integral = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  std::string at(size_t k) const { return integral ? std::to_string(i[k]) : fmt::format("{:.9g}", f[k]); }
};

Elements elements(const Tensor& t) {
  Elements e;
  e.integral = !is_floating(t.dtype());
  Tensor flat = t.to(e.integral ? DType::Int64 : DType::Float64).contiguous();
  auto n = static_cast<size_t>(flat.numel());
  if (e.integral) {
    const auto* p = flat.data_ptr<int64_t>();
    e.i.assign(p, p + n);
  } else {
    const auto* p = flat.data_ptr<double>();
    e.f.assign(p, p + n);
  }
  return e;
}

DType widen(DType d) { return is_floating(d) ? DType::Float64 : d; }

graph::TensorMeta widen(graph::TensorMeta m) {
  m.dtype = widen(m.dtype);
  return m;
}

Tensor widen(const Tensor& t) { return is_floating(t.dtype()) ? t.to(DType::Float64) : t; }

// `g` with every floating dtype float64: its metas, its get_attr tensors, its dtype arguments.
graph::Graph widened(const graph::Graph& g) {
  graph::Graph w;
  std::map<const Node*, Node*> mapped;
  auto map_ref = [&](ValueRef r) { return ValueRef{mapped.at(r.node), r.index}; };
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    switch (n.kind()) {
      case NodeKind::Placeholder: mapped[&n] = w.placeholder(n.name(), widen(n.meta().at(0))); break;
      case NodeKind::GetAttr: mapped[&n] = w.get_attr(n.name(), widen(g.attrs().at(n.name()))); break;
      case NodeKind::Call: {
        auto args = graph::map_args(
            n, map_ref, [](const Value& v) { return v.tag() == Value::Tag::DType ? Value(widen(v.to_dtype())) : v; });
        std::vector<graph::TensorMeta> metas;
        for (const auto& m : n.meta()) metas.push_back(widen(m));
        mapped[&n] = w.call(n.op(), std::move(args), std::move(metas), n.name());
        break;
      }
      case NodeKind::Output: {
        std::vector<ValueRef> results;
        for (const auto& r : std::get<std::vector<ValueRef>>(n.args().at(0))) results.push_back(map_ref(r));
        w.output(std::move(results));
        break;
      }
    }
  }
  return w;
}

// Runs `f` from the random generator's state `start`: eager and compiled code draw the same
// numbers (a dropout under check is compared, not flagged).
template <class F>
auto from_state(Generator::State start, F&& f) {
  default_generator().set_state(start);
  return f();
}

// A new directory for a mismatch under KILN_CHECK_DIR (else ./kiln-check): mismatch-K for the
// first K no other process has created.
std::string check_dir() {
  const char* d = std::getenv("KILN_CHECK_DIR");
  std::string base = d && *d ? d : "kiln-check";
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  KILN_CHECK(!ec, "KILN_CHECK: cannot create directory {}: {}", base, ec.message());
  for (int k = 0;; ++k) {
    std::string dir = fmt::format("{}/mismatch-{}", base, k);
    if (std::filesystem::create_directory(dir, ec)) return dir;
    KILN_CHECK(!ec, "KILN_CHECK: cannot create directory {}: {}", dir, ec.message());
  }
}

// Set while this thread checks a call: the compilations and runs the check makes are not checked.
thread_local bool checking = false;

struct Checking {
  bool was = std::exchange(checking, true);
  ~Checking() { checking = was; }
};

}  // namespace

bool check_enabled(const CompileOptions& options) {
  if (checking) return false;
  const char* v = std::getenv("KILN_CHECK");
  return options.check || (v != nullptr && std::string(v) == "1");
}

void write_check_options(const CompileOptions& options, const std::string& dir) {
  std::ofstream f(dir + "/options.txt");
  f << "backend " << options.backend << "\nemulate_precision_casts " << int(options.emulate_precision_casts) << "\n";
  KILN_CHECK(f.good(), "KILN_CHECK: cannot write {}/options.txt", dir);
}

CompileOptions read_check_options(const std::string& dir) {
  CompileOptions options;
  std::ifstream f(dir + "/options.txt");
  if (!f.is_open()) return options;
  std::string key, value;
  while (f >> key >> value) {
    if (key == "backend") {
      options.backend = value;
    } else if (key == "emulate_precision_casts" && (value == "0" || value == "1")) {
      options.emulate_precision_casts = value == "1";
    } else {
      KILN_FAIL(ErrorKind::Value, "check: {}/options.txt: unknown option '{} {}'", dir, key, value);
    }
  }
  KILN_CHECK(f.eof(), "check: {}/options.txt is malformed", dir);
  return options;
}

std::optional<OutputMismatch> compare_outputs(const std::vector<Tensor>& compiled, const std::vector<Tensor>& eager,
                                              const std::vector<Tensor>& reference,
                                              const std::vector<std::optional<DType>>& loosest) {
  if (compiled.size() != eager.size()) {
    return OutputMismatch{0, fmt::format("compiled gave {} outputs, eager {}", compiled.size(), eager.size())};
  }
  for (size_t k = 0; k < compiled.size(); ++k) {
    const Tensor &c = compiled[k], &e = eager[k];
    if (c.dtype() != e.dtype() || !c.sizes().equals(e.sizes())) {
      return OutputMismatch{k, fmt::format("compiled {}, eager {}", c.describe(), e.describe())};
    }
    if (is_complex(c.dtype())) continue;
    Elements cv = elements(c), ev = elements(e);
    std::optional<Elements> rv;
    if (k < reference.size() && reference[k].defined() && reference[k].sizes().equals(c.sizes()))
      rv = elements(reference[k]);
    Tolerance tol = default_tolerance(c.dtype());
    if (k < loosest.size() && loosest[k] && !cv.integral) {
      tol.rtol = std::max(tol.rtol, default_tolerance(*loosest[k]).rtol);
      tol.atol = std::max(tol.atol, default_tolerance(*loosest[k]).atol);
    }
    size_t bad = 0, worst = 0, n = cv.integral ? cv.i.size() : cv.f.size();
    double worst_diff = -1;
    for (size_t i = 0; i < n; ++i) {
      bool ok;
      if (cv.integral) {
        ok = cv.i[i] == ev.i[i] || (rv && rv->integral && rv->i[i] == cv.i[i]);
      } else {
        double cval = cv.f[i], eval = ev.f[i];
        ok = is_close(cval, eval, tol);
        if (!ok && rv) {
          double r = round_to_dtype(rv->integral ? static_cast<double>(rv->i[i]) : rv->f[i], c.dtype());
          // As accurate as eager against float64 (twice its distance): an ill-conditioned element.
          ok = is_close(cval, r, tol) || (std::isfinite(cval) && std::isfinite(eval) && !is_close(eval, r, tol) &&
                                          std::abs(cval - r) <= 2 * std::abs(eval - r) + tol.atol);
        }
      }
      if (ok) continue;
      ++bad;
      double diff = cv.integral ? std::abs(static_cast<double>(cv.i[i] - ev.i[i])) : std::abs(cv.f[i] - ev.f[i]);
      if (!(diff <= worst_diff)) worst_diff = diff, worst = i;  // NaN and inf differences win
    }
    if (bad == 0) continue;
    std::string detail = fmt::format("{} of {} elements differ; the greatest at flat index {}: compiled {}, eager {}",
                                     bad, n, worst, cv.at(worst), ev.at(worst));
    if (rv) detail += fmt::format(", float64 {}", rv->at(worst));
    if (!cv.integral) detail += fmt::format(" (rtol {}, atol {})", tol.rtol, tol.atol);
    return OutputMismatch{k, detail};
  }
  return std::nullopt;
}

std::vector<std::optional<DType>> loosest_float_dtypes(const graph::Graph& g) {
  std::map<const Node*, std::optional<DType>> loosest;
  auto own = [](const Node& n) {
    std::optional<DType> d;
    for (const auto& m : n.meta()) d = looser_float(d, is_floating(m.dtype) ? std::optional(m.dtype) : std::nullopt);
    return d;
  };
  std::vector<std::optional<DType>> out;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    if (n.kind() == NodeKind::Output) {
      for (const auto& r : std::get<std::vector<ValueRef>>(n.args().at(0))) out.push_back(loosest.at(r.node));
      continue;
    }
    std::optional<DType> d = own(n);
    for (const auto& a : n.args()) {
      if (const auto* r = std::get_if<ValueRef>(&a)) d = looser_float(d, loosest.at(r->node));
      if (const auto* list = std::get_if<std::vector<ValueRef>>(&a)) {
        for (const auto& r : *list) {
          if (r.node) d = looser_float(d, loosest.at(r.node));
        }
      }
    }
    loosest[&n] = d;
  }
  return out;
}

std::optional<std::vector<Tensor>> float64_reference(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  try {
    graph::Graph w = widened(g);
    std::vector<Tensor> wide;
    for (const auto& t : copies_of(inputs)) wide.push_back(widen(t));
    DefaultFloatDType guard(DType::Float64);
    return graph::interpret(w, wide);
  } catch (const Error& e) {
    KILN_LOG("check", "no float64 reference: {}", e.what());
    return std::nullopt;
  }
}

std::optional<OutputMismatch> check_program(const Repro& p, const CompileOptions& options) {
  Checking guard;
  CompileOptions plain = options;
  plain.check = false;
  const Generator::State start = default_generator().state();
  std::vector<Tensor> eager;
  try {
    eager = from_state(start, [&] { return graph::interpret(p.graph, copies_of(p.inputs)); });
  } catch (const Error&) {
    return std::nullopt;  // nothing to compare with
  }
  std::vector<Tensor> compiled;
  try {
    auto fn = compile([&p](const std::vector<Tensor>& in) { return graph::interpret(p.graph, in); }, plain);
    compiled = from_state(start, [&] { return fn(copies_of(p.inputs)); });
  } catch (const Error& e) {
    return OutputMismatch{0, fmt::format("compiled raised, eager did not: {}", e.what())};
  }
  auto reference = from_state(start, [&] { return float64_reference(p.graph, p.inputs); });
  return compare_outputs(compiled, eager, reference.value_or(std::vector<Tensor>{}), loosest_float_dtypes(p.graph));
}

std::vector<Tensor> checked_call(const trace::TracedFn& fn, const CompiledCallable& compiled,
                                 const std::vector<Tensor>& inputs, const CompileOptions& options) {
  Checking guard;
  std::vector<Tensor> pristine = copies_of(inputs);
  const Generator::State start = default_generator().state();
  std::vector<Tensor> eager;
  std::optional<std::string> eager_error;
  try {
    eager = fn(copies_of(inputs));
  } catch (const Error& e) {
    eager_error = e.what();
  }
  std::vector<Tensor> out = from_state(start, [&] { return compiled(inputs); });  // its errors are the caller's
  const Generator::State after = default_generator().state();
  if (eager_error) {
    KILN_FAIL(ErrorKind::Value, "KILN_CHECK: eager raised and compiled code did not: {}", *eager_error);
  }
  graph::Graph core = trace::trace(fn, copies_of(pristine), trace::Level::Core);
  auto reference = from_state(start, [&] { return float64_reference(core, pristine); });
  auto mismatch = compare_outputs(out, eager, reference.value_or(std::vector<Tensor>{}), loosest_float_dtypes(core));
  if (!mismatch) {
    default_generator().set_state(after);
    return out;
  }
  KILN_LOG("check", "output {} differs: {}; reducing", mismatch->output, mismatch->detail);
  // Every candidate, and the run that gives the values fed to them, draws from `start`.
  ReducedRepro r = from_state(start, [&] {
    return reduce_program(core, pristine, mismatch->output, [&](const Repro& p) {
      return from_state(start, [&] { return check_program(p, options).has_value(); });
    });
  });
  default_generator().set_state(after);
  std::string dir = check_dir();
  write_program(r.program, dir);
  write_check_options(options, dir);
  std::string how =
      !r.reproduced ? "the Core ATen graph compiled alone does not differ: the whole graph is written"
      : r.complete
          ? fmt::format("reduced to {} call(s) ({} candidates compiled)", r.program.calls(), r.tests)
          : fmt::format("reduced to {} call(s), not minimal: {} candidates compiled", r.program.calls(), r.tests);
  KILN_FAIL(ErrorKind::Value,
            "KILN_CHECK: compiled output {} differs from eager: {}\n{}; replay with `kiln check {}`:\n{}",
            mismatch->output, mismatch->detail, how, dir, graph::print(r.program.graph));
}

}  // namespace kiln
