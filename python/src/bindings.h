// The pieces of kiln's Python module (module.cpp puts them together).
#pragma once

#include <vector>

#include <nanobind/nanobind.h>

#include "kiln/ops/tensor.h"

namespace kiln::python {

// A kiln tensor from a kiln.Tensor, a DLPack capsule or any object with __dlpack__ (zero-copy).
Tensor tensor_from_object(nanobind::handle obj);
// tensor_from_object of each element of a Python sequence.
std::vector<Tensor> tensors_from_objects(nanobind::handle sequence);

// A torch.Tensor sharing `t`'s memory (torch must be imported).
nanobind::object to_torch(const Tensor& t);

void bind_tensor(nanobind::module_& m);
void bind_graph(nanobind::module_& m);
void bind_model(nanobind::module_& m);

}  // namespace kiln::python
