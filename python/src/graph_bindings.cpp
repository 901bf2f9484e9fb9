// The backend's C++ half: PyTorch's FX graphs arrive through import::GraphImporter (the importer the
// `.pt2` loader uses), become a kiln graph, and compile with kiln::compile's pipeline.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/api/compile.h"
#include "kiln/api/explain.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/import/graph_importer.h"
#include "kiln/ops/registry.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

DType dtype_arg(const std::string& name, const std::string& what) {
  auto t = parse_dtype(name);
  KILN_CHECK_TYPE(t.has_value(), "{}: '{}' is not a dtype kiln has", what, name);
  return *t;
}

template <class T>
std::vector<T> cast_list(nb::handle list) {
  std::vector<T> out;
  for (nb::handle e : list) out.push_back(nb::cast<T>(e));
  return out;
}

// One argument as the Python side tags it (python/kiln/_fx.py): plain None/bool/int/float/str and
// lists of them, or a (tag, payload) tuple for tensors and PyTorch's enum-like types.
import::CallArg call_arg(nb::handle v, const std::string& what){if (v.is_none()) return Value();
if (nb::isinstance<nb::bool_>(v)) return Value(nb::cast<bool>(v));
if (nb::isinstance<nb::int_>(v)) return Value(nb::cast<int64_t>(v));
if (nb::isinstance<nb::float_>(v)) return Value(nb::cast<double>(v));
if (nb::isinstance<nb::str>(v)) return Value(nb::cast<std::string>(v));
KILN_CHECK_TYPE(nb::isinstance<nb::tuple>(v) && nb::len(v) == 2, "{}: argument {} is not one kiln reads", what,
                nb::cast<std::string>(nb::repr(v)));
auto tag = nb::cast<std::string>(v[0]);
nb::handle payload = v[1];
if (tag == "tensor") return import::TensorName{nb::cast<std::string>(payload)};
if (tag == "tensors") {
  std::vector<std::optional<import::TensorName>> list;
  for (nb::handle e : payload) {
    if (e.is_none()) {
      list.emplace_back();
    } else {
      list.emplace_back(import::TensorName{nb::cast<std::string>(e)});
    }
  }
  return list;
}
if (tag == "ints") return Value(cast_list<int64_t>(payload));
if (tag == "floats") return Value(cast_list<double>(payload));
if (tag == "bools") return Value(cast_list<bool>(payload));
if (tag == "dtype") return Value(dtype_arg(nb::cast<std::string>(payload), what));
if (tag == "device") return Value(Device::parse(nb::cast<std::string>(payload)));
if (tag == "layout") {
  auto layout = nb::cast<std::string>(payload);
  KILN_CHECK_KIND(layout == "strided", ErrorKind::NotImplemented, "{}: layout {} is not strided", what, layout);
  return Value(Layout::Strided);
}
if (tag == "memory_format") {
  auto name = nb::cast<std::string>(payload);
  auto f = parse_memory_format(name);
  KILN_CHECK_KIND(f.has_value(), ErrorKind::NotImplemented, "{}: memory format {} is not supported", what, name);
  return Value(*f);
}
KILN_FAIL(ErrorKind::Type, "{}: argument tag '{}' is not one kiln reads", what, tag);
}  // namespace

graph::TensorMeta tensor_meta(const std::string& dtype, const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides, const std::string& device, const std::string& what) {
  graph::TensorMeta m;
  m.dtype = dtype_arg(dtype, what);
  m.sizes = Shape(sizes.begin(), sizes.end());
  m.strides = Shape(strides.begin(), strides.end());
  m.device = Device::parse(device);
  return m;
}

// A kiln graph as Python holds it (graphs move, never copy; compiled functions share it).
struct GraphHandle {
  std::shared_ptr<const graph::Graph> graph;
};

trace::TracedFn interpreter(std::shared_ptr<const graph::Graph> g) {
  return [g = std::move(g)](const std::vector<Tensor>& in) { return graph::interpret(*g, in); };
}

// A graph compiled with kiln::compile: the graph interpreted under kiln's tracer at the backend's
// level, compiled per input signature (guarded) on the first call with it.
class CompiledGraph {
 public:
  CompiledGraph(const GraphHandle& g, const std::string& backend, bool emulate_precision_casts, bool check)
      : fn_(kiln::compile(
            interpreter(g.graph),
            CompileOptions{.backend = backend, .emulate_precision_casts = emulate_precision_casts, .check = check})) {}

  std::vector<Tensor> run(nb::handle inputs) {
    std::vector<Tensor> tensors = tensors_from_objects(inputs);
    nb::gil_scoped_release release;
    return fn_(tensors);
  }
  // run, with the results as torch tensors (over kiln's memory).
  nb::list run_torch(nb::handle inputs) {
    std::vector<Tensor> results = run(inputs);
    nb::list out;
    for (const Tensor& t : results) out.append(to_torch(t));
    return out;
  }
  size_t compiled_signatures() const { return fn_.compiled_signatures(); }

 private:
  CompiledFunction fn_;
};

// Whether kiln can run `name` ("aten::add.Tensor") on the CPU: an op it declares with a kernel or
// a decomposition.
bool has_op(const std::string& name) {
  OpHandle op = Registry::global().find(name);
  return op && op->runs_on(DispatchKey::CPU);
}

// Every op has_op accepts, sorted: what a cache of choices made with has_op is keyed by.
std::vector<std::string> runnable_ops() {
  std::vector<std::string> names;
  for (const OpHandle& op : Registry::global().ops())
    if (op->runs_on(DispatchKey::CPU)) names.push_back(op->name());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kiln::python

void bind_graph(nb::module_& m) {
  nb::class_<GraphHandle>(m, "Graph", "A kiln graph (graph/graph.h); str() prints its IR text.")
      .def("__str__", [](const GraphHandle& g) { return graph::print(*g.graph); })
      .def("op_names", [](const GraphHandle& g) {
        std::vector<std::string> names;
        for (const auto& n : g.graph->nodes()) {
          if (n->kind() == graph::NodeKind::Call) names.push_back(n->op()->name());
        }
        return names;
      });

  nb::class_<import::GraphImporter>(m, "GraphImporter",
                                    "Builds a kiln graph from PyTorch's ATen calls (import/graph_importer.h).")
      .def(nb::init<std::string>(), nb::arg("source"))
      .def(
          "input",
          [](import::GraphImporter& self, const std::string& name, const std::string& dtype,
             const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, const std::string& device) {
            self.input(name, tensor_meta(dtype, sizes, strides, device, "input " + name));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("sizes"), nb::arg("strides"), nb::arg("device") = "cpu")
      .def(
          "call",
          [](import::GraphImporter& self, const std::string& node, const std::string& op_name, nb::handle args,
             const std::vector<std::string>& outputs,
             const std::vector<std::optional<std::pair<std::string, std::vector<int64_t>>>>& recorded) {
            OpHandle op = Registry::global().find(op_name);
            KILN_CHECK_KIND(op, ErrorKind::NotImplemented, "node {}: kiln has no operator {}", node, op_name);
            std::vector<std::pair<std::string, import::CallArg>> call_args;
            for (nb::handle pair : args) {
              auto name = nb::cast<std::string>(pair[0]);
              call_args.emplace_back(name, call_arg(pair[1], "node " + node + ", argument " + name));
            }
            std::vector<std::optional<import::RecordedMeta>> metas;
            for (const auto& r : recorded) {
              if (!r) {
                metas.emplace_back();
                continue;
              }
              metas.push_back(
                  import::RecordedMeta{dtype_arg(r->first, "node " + node), Shape(r->second.begin(), r->second.end())});
            }
            self.call(node, op, call_args, outputs, metas);
          },
          nb::arg("node"), nb::arg("op"), nb::arg("args"), nb::arg("outputs"), nb::arg("recorded"))
      .def(
          "output",
          [](import::GraphImporter& self, const std::vector<std::string>& names) {
            return GraphHandle{std::make_shared<const graph::Graph>(self.output(names))};
          },
          nb::arg("names"));

  nb::class_<CompiledGraph>(m, "CompiledGraph", "A graph compiled by kiln::compile (guarded per input signature).")
      .def(nb::init<const GraphHandle&, const std::string&, bool, bool>(), nb::arg("graph"),
           nb::arg("backend") = "inductor", nb::arg("emulate_precision_casts") = false, nb::arg("check") = false)
      .def("run", &CompiledGraph::run, nb::arg("inputs"),
           "Runs on `inputs` (kiln or DLPack tensors, shared without copies); compiles a new input\n"
           "signature on its first call.")
      .def("run_torch", &CompiledGraph::run_torch, nb::arg("inputs"),
           "run, returning torch tensors that share kiln's results' memory.")
      .def_prop_ro("compiled_signatures", &CompiledGraph::compiled_signatures);

  m.def(
      "explain_graph",
      [](const GraphHandle& g, const std::vector<std::string>& names) {
        // Explaining needs only the inputs' dtypes, sizes and strides: zero-filled stand-ins.
        std::vector<Tensor> examples;
        for (const graph::Node* p : g.graph->placeholders()) {
          const graph::TensorMeta& m = p->meta().at(0);
          Tensor t(empty_strided_tensor(m.sizes, m.strides, m.dtype, m.device));
          if (t.storage()->data()) std::memset(t.storage()->data(), 0, t.storage()->nbytes());
          examples.push_back(std::move(t));
        }
        return explain(interpreter(g.graph), examples, names);
      },
      nb::arg("graph"), nb::arg("names"));
  m.def("has_op", &has_op, nb::arg("name"));
  m.def("runnable_ops", &runnable_ops);
}

}  // namespace kiln::python
