#include "kiln/api/compile.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "kiln/api/check.h"
#include "kiln/core/type_promotion.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/runtime/executable.h"
#include "kiln/support/log.h"

namespace kiln {
namespace {

struct Backends {
  std::mutex mu;
  std::map<std::string, Backend> by_name;
};

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

Backends& backends() {
  static Backends* b = [] {
    auto* r = new Backends();
    r->by_name["eager"] = Backend{
        trace::Level::Core, [](graph::Graph g, const std::vector<Tensor>&, const CompileOptions&) {
          auto shared = std::make_shared<graph::Graph>(std::move(g));
          return CompiledCallable([shared](const std::vector<Tensor>& in) { return graph::interpret(*shared, in); });
        }};
    r->by_name["inductor"] = Backend{
        trace::Level::Prims, [](graph::Graph g, const std::vector<Tensor>&, const CompileOptions& o) {
          compiler::PipelineOptions options;
          options.emulate_precision_casts = o.emulate_precision_casts || env_flag("KILN_EMULATE_PRECISION_CASTS");
          auto exe = runtime::compile_graph(std::move(g), options);
          KILN_LOG("memory", "{}", exe->memory_plan().str());
          return CompiledCallable([exe](const std::vector<Tensor>& in) { return exe->run(in); });
        }};
    return r;
  }();
  return *b;
}

// The bytes of its storage a tensor's elements lie in: [first, end); empty for no elements.
std::pair<int64_t, int64_t> byte_range(const Tensor& t) {
  int64_t low = 0, high = 0;
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    if (t.sizes()[d] == 0) return {0, 0};
    int64_t reach = (t.sizes()[d] - 1) * t.strides()[d];
    (reach < 0 ? low : high) += reach;
  }
  auto item = static_cast<int64_t>(element_size(t.dtype()));
  return {(t.storage_offset() + low) * item, (t.storage_offset() + high + 1) * item};
}

bool overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.storage().get() != b.storage().get()) return false;
  auto [a0, a1] = byte_range(a);
  auto [b0, b1] = byte_range(b);
  return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

std::vector<InputSignature> signature_of(const std::vector<Tensor>& inputs) {
  std::vector<InputSignature> s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    s.push_back({t.dtype(), t.sizes().shape(), t.strides().shape(), t.device(), t.storage_offset()});
    for (size_t j = 0; j < i && s.back().overlaps < 0; ++j) {
      if (overlap(inputs[j], t)) s.back().overlaps = static_cast<int>(j);
    }
  }
  return s;
}

bool mutates_inputs(const graph::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->kind() == graph::NodeKind::Call && n->op()->schema().is_mutable()) return true;
  }
  return false;
}

// What a compiled graph was traced under: its inputs' signatures and the default float dtype (which
// decides the dtype of floats made from integers and Python scalars).
struct TraceKey {
  std::vector<InputSignature> inputs;
  DType default_float;
  bool operator==(const TraceKey&) const = default;
};

// Why `now` does not match `before`: the first difference.
std::string difference(const TraceKey& before_key, const TraceKey& now_key) {
  if (before_key.default_float != now_key.default_float) {
    return fmt::format("default dtype {} -> {}", dtype_name(before_key.default_float),
                       dtype_name(now_key.default_float));
  }
  const auto& before = before_key.inputs;
  const auto& now = now_key.inputs;
  if (before.size() != now.size()) return fmt::format("{} inputs instead of {}", now.size(), before.size());
  for (size_t i = 0; i < now.size(); ++i) {
    const auto& a = before[i];
    const auto& b = now[i];
    if (a.dtype != b.dtype) return fmt::format("input {} dtype {} -> {}", i, dtype_name(a.dtype), dtype_name(b.dtype));
    if (a.sizes != b.sizes) return fmt::format("input {} sizes {} -> {}", i, a.sizes, b.sizes);
    if (a.strides != b.strides) return fmt::format("input {} strides {} -> {}", i, a.strides, b.strides);
    if (a.device != b.device) return fmt::format("input {} device {} -> {}", i, a.device, b.device);
    if (a.overlaps != b.overlaps) {
      auto what = [](int j) { return j < 0 ? std::string("no earlier input") : fmt::format("input {}", j); };
      return fmt::format("input {} overlaps {} -> {}", i, what(a.overlaps), what(b.overlaps));
    }
  }
  return "no difference";
}

}  // namespace

void register_backend(const std::string& name, Backend backend) {
  KILN_CHECK(backend.compile != nullptr, "register_backend: backend {} has no compile function", name);
  auto& b = backends();
  std::lock_guard lock(b.mu);
  b.by_name[name] = std::move(backend);
}

struct CompiledFunction::State {
  trace::TracedFn fn;
  Backend backend;
  std::string backend_name;
  CompileOptions options;
  std::mutex mu;
  std::vector<std::pair<TraceKey, CompiledCallable>> compiled;
};

CompiledFunction::CompiledFunction(trace::TracedFn fn, CompileOptions options) : state_(std::make_shared<State>()) {
  KILN_CHECK(fn != nullptr, "compile: no function given");
  auto& b = backends();
  std::lock_guard lock(b.mu);
  auto it = b.by_name.find(options.backend);
  if (it == b.by_name.end()) {
    std::vector<std::string> names;
    for (const auto& [name, unused] : b.by_name) names.push_back(name);
    KILN_FAIL(ErrorKind::Value, "compile: unknown backend '{}' (registered: {})", options.backend,
              fmt::join(names, ", "));
  }
  state_->fn = std::move(fn);
  state_->backend = it->second;
  state_->backend_name = options.backend;
  state_->options = std::move(options);
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) {
  TraceKey key{signature_of(inputs), default_float_dtype()};
  const auto& sig = key.inputs;
  CompiledCallable callable;
  bool first_call = false;
  {
    std::lock_guard lock(state_->mu);
    for (const auto& [s, c] : state_->compiled) {
      if (s == key) callable = c;
    }
    if (!callable) {
      if (!state_->compiled.empty()) {
        KILN_LOG("recompiles", "recompiling ({} backend): {}", state_->backend_name,
                 difference(state_->compiled.back().first, key));
      }
      trace::TraceOptions options;
      options.level = state_->backend.level;
      options.keep_ops_without_prims = true;
      graph::Graph g = trace::trace(state_->fn, inputs, options);
      KILN_LOG("graph", "traced at the {} level:\n{}", trace::level_name(options.level), graph::print(g));
      bool aliased = std::any_of(sig.begin(), sig.end(), [](const InputSignature& s) { return s.overlaps >= 0; });
      if (aliased && mutates_inputs(g)) {
        // The graph reads each input as it was on entry; a mutation through an overlapping input
        // would be invisible to it. Running the function itself follows eager semantics exactly.
        KILN_LOG("recompiles", "inputs share memory and the function mutates an input: running it eagerly");
        callable = [fn = state_->fn](const std::vector<Tensor>& in) { return fn(in); };
      } else {
        callable = state_->backend.compile(std::move(g), inputs, state_->options);
      }
      state_->compiled.emplace_back(key, callable);
      first_call = true;
    }
  }
  if (first_call && check_enabled(state_->options)) return checked_call(state_->fn, callable, inputs, state_->options);
  return callable(inputs);
}

size_t CompiledFunction::compiled_signatures() const {
  std::lock_guard lock(state_->mu);
  return state_->compiled.size();
}

CompiledFunction compile(trace::TracedFn fn, CompileOptions options) {
  return CompiledFunction(std::move(fn), std::move(options));
}

}  // namespace kiln
