// kiln.Tensor in Python: its metadata, and DLPack in both directions (dlpack.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "python/src/bindings.h"
#include "python/src/dlpack.h"

namespace nb = nanobind;

namespace kiln::python {

namespace {

// PyTorch's own DLPack entry points, once torch is imported (kiln never imports it itself):
// torch.utils.dlpack.to_dlpack takes a tensor straight to a capsule, skipping Tensor.__dlpack__'s
// Python-level checks (ten times faster; it also reads tensors that require grad, as kiln should:
// values only, autograd stays PyTorch's). Held for the life of the process (never destroyed, so
// nothing is released after the interpreter is gone).
struct TorchHooks {
  nb::object tensor_type, to_dlpack, from_dlpack;
};

const TorchHooks* torch_hooks() {
  static const TorchHooks* hooks = nullptr;
  if (hooks) return hooks;
  nb::dict modules = nb::borrow<nb::dict>(nb::module_::import_("sys").attr("modules"));
  if (!modules.contains("torch")) return nullptr;
  nb::module_ dlpack = nb::module_::import_("torch.utils.dlpack");
  hooks = new TorchHooks{nb::module_::import_("torch").attr("Tensor"), dlpack.attr("to_dlpack"),
                         dlpack.attr("from_dlpack")};
  return hooks;
}

}  // namespace

nb::object to_torch(const Tensor& t) {
  const TorchHooks* hooks = torch_hooks();
  KILN_CHECK_KIND(hooks, ErrorKind::NotImplemented, "to_torch: torch is not imported");
  PyObject* capsule = to_capsule(t, /*versioned=*/false);
  if (!capsule) throw nb::python_error();
  return hooks->from_dlpack(nb::steal(capsule));
}

Tensor tensor_from_object(nb::handle obj) {
  if (nb::isinstance<Tensor>(obj)) return nb::cast<Tensor>(obj);
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj.ptr());
  if (const TorchHooks* hooks = torch_hooks(); hooks && PyObject_IsInstance(obj.ptr(), hooks->tensor_type.ptr()) == 1) {
    nb::object capsule = hooks->to_dlpack(obj);
    return from_capsule(capsule.ptr());
  }
  KILN_CHECK_TYPE(nb::hasattr(obj, "__dlpack__"), "from_dlpack: a {} is neither a kiln.Tensor nor has __dlpack__",
                  nb::type_name(obj.type()).c_str());
  nb::object source = nb::borrow(obj);
  // PyTorch refuses to export a tensor that requires grad; kiln reads values only, as a detached
  // tensor would (the graph it runs in is differentiated by PyTorch's autograd around it).
  if (nb::hasattr(source, "requires_grad") && nb::cast<bool>(source.attr("requires_grad"))) {
    source = source.attr("detach")();
  }
  nb::object capsule = source.attr("__dlpack__")();
  return from_capsule(capsule.ptr());
}

std::vector<Tensor> tensors_from_objects(nb::handle sequence) {
  std::vector<Tensor> tensors;
  tensors.reserve(nb::len(sequence));
  for (nb::handle obj : sequence) tensors.push_back(tensor_from_object(obj));
  return tensors;
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor",
                     "A kiln tensor. Shares memory with PyTorch and NumPy through DLPack:\n"
                     "torch.from_dlpack(t) and kiln.from_dlpack(torch_tensor) copy nothing.")
      .def_prop_ro("shape", [](const Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); })
      .def_prop_ro("strides",
                   [](const Tensor& t) { return std::vector<int64_t>(t.strides().begin(), t.strides().end()); })
      .def_prop_ro("storage_offset", &Tensor::storage_offset)
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("device", [](const Tensor& t) { return t.device().to_string(); })
      .def("numel", &Tensor::numel)
      .def("dim", &Tensor::dim)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def(
          "__dlpack__",
          [](const Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device, nb::handle copy) {
            (void)stream;
            (void)dl_device;
            KILN_CHECK_KIND(copy.is_none() || !nb::cast<bool>(copy), ErrorKind::NotImplemented,
                            "__dlpack__: copy=True is not supported; kiln shares its memory");
            bool versioned = !max_version.is_none() && nb::cast<int>(max_version[0]) >= 1;
            PyObject* capsule = to_capsule(t, versioned);
            if (!capsule) throw nb::python_error();
            return nb::steal(capsule);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack_device__",
           [](const Tensor& t) {
             auto [type, id] = dlpack_device(t.device());
             return nb::make_tuple(type, id);
           })
      .def("__repr__", [](const Tensor& t) { return "kiln.Tensor(" + t.describe() + ")"; });

  m.def("from_dlpack", &tensor_from_object, nb::arg("array"),
        "A kiln.Tensor sharing the memory of `array` (a torch.Tensor, a NumPy array, anything with\n"
        "__dlpack__, or a DLPack capsule): same dtype, sizes, strides; nothing is copied.");
}

}  // namespace kiln::python
