#include "kiln/ops/dispatcher.h"

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/log.h"

namespace kiln {
namespace {

// Adds the backend of `t`; a 0-d CPU tensor (a scalar) may join any device, as in PyTorch, and an
// op that crosses devices keeps the first tensor's. While a program is traced (`tracing`), meta
// tensors stand for its values, and a tensor of another device among them is a constant the program
// made: meta wins, and the tracer lifts the constant into the graph.
void add_tensor_device(const Tensor& t, OpHandle op, std::optional<Device>& device, bool& cpu_scalar, bool tracing) {
  if (!t.defined()) return;
  Device d = t.device();
  if (d.is_cpu() && t.dim() == 0) {
    cpu_scalar = true;
    return;
  }
  bool constant_among_traced = tracing && device && (device->is_meta() || d.is_meta());
  if (!device || (constant_among_traced && d.is_meta())) {
    device = d;
  } else if (*device != d && !constant_among_traced && !crosses_devices_attr().has(op)) {
    KILN_FAIL(ErrorKind::Value,
              "{}: expected all tensors to be on the same device, but found at least two devices, {} and {}",
              op->name(), *device, d);
  }
}

std::string kernel_list(OpHandle op) {
  std::vector<std::string_view> keys;
  for (DispatchKey k : kBackendKeys) {
    if (op->kernel(k)) keys.push_back(dispatch_key_name(k));
  }
  return keys.empty() ? std::string("none") : fmt::format("{}", fmt::join(keys, ", "));
}

// Complex tensors are storage only (core/dtype.h): an op sees one only when its table row is
// tagged `complex` (copies, factories, the FFTs), or it is a view (it only moves metadata) or a
// metadata read (sym_size, ...). Everything else is refused, naming the op and the argument, before
// any kernel runs — so no kernel is ever handed a dtype it was not written for, eagerly or while
// tracing. `at` is the argument's index, `what` how it holds the dtype.
struct ComplexArgument {
  size_t at;
  DType dtype;
  std::string_view what;
};

void refuse_complex(OpHandle op, const ComplexArgument& c) {
  if (op->has_tag(OpTag::Complex) || op->has_tag(OpTag::View) || op->has_tag(OpTag::Metadata)) return;
  const auto& args = op->schema().arguments;
  std::string_view name = c.at < args.size() ? std::string_view(args[c.at].name) : std::string_view("?");
  KILN_FAIL(ErrorKind::NotImplemented,
            "{}: argument '{}' is {} {}; kiln's complex tensors support only views, copies, factories, the FFT "
            "ops (_fft_r2c, _fft_c2c, _fft_c2r) and the conjugate (_conj)",
            op->name(), name, c.what, c.dtype);
}

}  // namespace

OpAttr<bool>& crosses_devices_attr() {
  static OpAttr<bool> attr("dispatch.crosses_devices");
  return attr;
}

DispatchKeySet dispatch_keys_for(OpHandle op, const Stack& stack) {
  std::optional<Device> device;
  bool cpu_scalar = false;
  std::optional<Device> device_arg;
  std::optional<ComplexArgument> complex;
  const auto& local = local_dispatch_keys();
  bool tracing = local.included.has(DispatchKey::Trace) && !local.excluded.has(DispatchKey::Trace);
  auto add = [&](size_t i, const Tensor& t, std::string_view what) {
    add_tensor_device(t, op, device, cpu_scalar, tracing);
    if (!complex && t.defined() && is_complex(t.dtype())) complex = ComplexArgument{i, t.dtype(), what};
  };
  for (size_t i = 0; i < stack.size(); ++i) {
    const Value& v = stack[i];
    switch (v.tag()) {
      case Value::Tag::Tensor: add(i, v.to_tensor(), "a tensor of dtype"); break;
      case Value::Tag::TensorList:
        for (const auto& t : v.to_tensor_list()) add(i, t, "a list holding a tensor of dtype");
        break;
      case Value::Tag::OptionalTensorList:
        for (const auto& t : v.to_optional_tensor_list()) {
          if (t) add(i, *t, "a list holding a tensor of dtype");
        }
        break;
      case Value::Tag::Device: device_arg = v.to_device(); break;
      case Value::Tag::DType:
        if (!complex && is_complex(v.to_dtype())) complex = ComplexArgument{i, v.to_dtype(), "the dtype"};
        break;
      default: break;
    }
  }
  if (complex) refuse_complex(op, *complex);
  // Factories place their result by their device argument; ops on tensors follow the tensors.
  Device backend = device ? *device : device_arg ? *device_arg : kCPU;
  return (DispatchKeySet(backend_key(backend)) | local.included) - local.excluded;
}

void redispatch(OpHandle op, Stack& stack, DispatchKeySet keys) {
  while (!keys.empty()) {
    DispatchKey key = keys.highest();
    if (const BoxedKernel* k = op->kernel(key)) {
      (*k)(stack);
      return;
    }
    if (!is_backend_key(key)) {
      if (const BoxedFallback* f = Registry::global().fallback(key)) {
        (*f)(op, stack, keys.below(key));
        return;
      }
      keys = keys.below(key);
      continue;
    }
    if (const BoxedKernel* c = op->compound_kernel()) {
      (*c)(stack);
      return;
    }
    KILN_CHECK_KIND(op->kind() != OpKind::Declared, ErrorKind::NotImplemented,
                    "{}: PyTorch's op is declared in kiln but not implemented: {}", op->name(), op->reason());
    KILN_FAIL(ErrorKind::NotImplemented, "{}: no kernel for the {} backend (kernels exist for: {})", op->name(),
              dispatch_key_name(key), kernel_list(op));
  }
  KILN_FAIL(ErrorKind::Internal, "{}: empty dispatch key set", op->name());
}

void call_op(OpHandle op, Stack& stack) {
  KILN_LOG("dispatch", "{}", op->name());
  redispatch(op, stack, dispatch_keys_for(op, stack));
}

// The ops whose tensor arguments PyTorch's argument parser also takes as numbers (its
// should_allow_numbers_as_tensors: arithmetic, conversions and copies, by base name).
static bool allows_numbers_as_tensors(OpHandle op) {
  static const std::set<std::string, std::less<>> kNames = {
      "add",         "sub",          "subtract", "mul",      "multiply", "div",  "divide",
      "true_divide", "floor_divide", "to",       "_to_copy", "copy",     "_conj"};
  std::string_view name = op->schema().name;
  if (name.ends_with('_')) name.remove_suffix(1);
  return op->schema().ns == "aten" && kNames.contains(name);
}

void normalize_arguments(OpHandle op, Stack& stack) {
  const auto& args = op->schema().arguments;
  KILN_CHECK_TYPE(stack.size() <= args.size(), "{}: expected at most {} arguments but got {}", op->name(), args.size(),
                  stack.size());
  for (size_t i = stack.size(); i < args.size(); ++i) {
    const auto& def = op->defaults()[i];
    KILN_CHECK_TYPE(def.has_value(), "{}: missing value for argument '{}' (position {})", op->name(), args[i].name, i);
    stack.push_back(*def);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    bool ok = coerce_value(stack[i], args[i].type) ||
              (allows_numbers_as_tensors(op) && number_as_tensor(stack[i], args[i].type));
    KILN_CHECK_TYPE(ok, "{}: argument '{}' (position {}) must be {}, not {}", op->name(), args[i].name, i,
                    args[i].type.to_string(), stack[i].type_name());
  }
}

void call_op_boxed(OpHandle op, Stack& stack) {
  normalize_arguments(op, stack);
  call_op(op, stack);
}

}  // namespace kiln
