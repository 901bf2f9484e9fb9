// kiln's Python module, kiln._kiln: tensors shared through DLPack, the graph importer and compiler
// the torch.compile backend drives (python/kiln/backend.py), and `.pt2` loading. It links libkiln
// and never libtorch: PyTorch is reached through Python and DLPack only.
#include <nanobind/nanobind.h>

#include "kiln/support/error.h"
#include "python/src/bindings.h"

namespace nb = nanobind;

NB_MODULE(_kiln, m) {
  m.doc() = "kiln's native module; use the `kiln` package.";
  // kiln::Error arrives as kiln.Error, a RuntimeError carrying kiln's message.
  nb::exception<kiln::Error>(m, "Error", PyExc_RuntimeError);
  kiln::python::bind_tensor(m);
  kiln::python::bind_graph(m);
  kiln::python::bind_model(m);
}
