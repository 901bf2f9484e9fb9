// kiln.load: a `.pt2` archive (or a compiled `.kiln` package) run from Python through the same C++
// API the command line uses (api/model.h, api/package.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/api/model.h"
#include "kiln/api/package.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

namespace kiln::python {
namespace {

// `run` of each kind of loaded model: Python tensors in, kiln's results out, the GIL released
// while kiln computes.
template <class Runner>
std::vector<Tensor> run(Runner& self, nb::handle inputs) {
  std::vector<Tensor> tensors = tensors_from_objects(inputs);
  nb::gil_scoped_release release;
  return self.run(tensors);
}

}  // namespace

void bind_model(nb::module_& m) {
  nb::class_<CompiledModel>(m, "CompiledModel", "A loaded model compiled by kiln::compile.")
      .def("run", &run<CompiledModel>, nb::arg("inputs"));

  nb::class_<Model>(m, "Model", "A model exported by torch.export, loaded by kiln (api/model.h).")
      .def_prop_ro("input_names", &Model::input_names)
      .def_prop_ro("num_outputs", &Model::num_outputs)
      .def_prop_ro("source", &Model::source)
      .def("run", &run<const Model>, nb::arg("inputs"), "Runs eagerly with kiln's kernels, op by op.")
      .def(
          "compile", [](const Model& self, const std::string& backend) { return self.compile({.backend = backend}); },
          nb::arg("backend") = "inductor", "Compiles with kiln::compile; the first run traces and compiles.");

  nb::class_<Package>(m, "Package", "A compiled `.kiln` package (api/package.h).")
      .def_prop_ro("input_names", &Package::input_names)
      .def_prop_ro("num_outputs", &Package::num_outputs)
      .def("run", &run<const Package>, nb::arg("inputs"));

  m.def("load_pt2", &kiln::load, nb::arg("path"));
  m.def("load_package", &kiln::load_package, nb::arg("path"));
  m.def(
      "compile_package", [](const Model& model, const std::string& path) { compile_package(model, path); },
      nb::arg("model"), nb::arg("path"), "Compiles `model` ahead of time into a `.kiln` package (kiln compile).");
}

}  // namespace kiln::python
