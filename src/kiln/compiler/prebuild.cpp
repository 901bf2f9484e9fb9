#include "kiln/compiler/prebuild.h"

#include <optional>
#include <system_error>

#include "kiln/ops/api.h"
#include "kiln/ops/prebuild.h"
#include "kiln/support/log.h"

namespace kiln::compiler {
namespace {

Tensor meta_of(const loopir::Program& p, const loopir::BufferView& v) {
  const DType dtype = p.buffers.at(static_cast<size_t>(v.buffer)).dtype;
  return empty_strided(v.sizes, v.strides, TensorOptions(dtype).device(Device(DeviceType::Meta)));
}

// The call's arguments, its tensors as meta tensors.
Stack meta_arguments(const loopir::Program& p, const loopir::ExternCall& call) {
  Stack stack;
  for (const auto& a : call.args) {
    if (const auto* v = std::get_if<loopir::BufferView>(&a)) {
      stack.emplace_back(meta_of(p, *v));
    } else if (const auto* l = std::get_if<std::vector<std::optional<loopir::BufferView>>>(&a)) {
      std::vector<std::optional<Tensor>> list;
      for (const auto& x : *l) list.push_back(x ? std::optional<Tensor>(meta_of(p, *x)) : std::nullopt);
      stack.emplace_back(std::move(list));
    } else {
      stack.push_back(std::get<Value>(a));
    }
  }
  return stack;
}

}  // namespace

Prebuilds::Prebuilds(const loopir::Program& p, const Target& target) {
  if (target.device.is_cpu()) return;
  const OpAttr<Prebuild>& prebuilds = prebuild_attr(backend_key(target.device));
  for (const auto& step : p.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    const Prebuild* prebuild = call ? prebuilds.get(call->op) : nullptr;
    if (!prebuild) continue;
    std::string name = call->op->schema().qualified_name();
    Stack args = meta_arguments(p, *call);
    try {
      threads_.emplace_back([prebuild, args = std::move(args), name, device = target.device] {
        try {
          (*prebuild)(args, device);
        } catch (const std::exception& e) {
          KILN_LOG("compile", "prebuild of {} on {}: {}", name, device, e.what());
        }
      });
    } catch (const std::system_error&) {
      return;  // no thread to be had: the call builds its kernel when it first runs
    }
  }
}

Prebuilds::~Prebuilds() {
  for (auto& t : threads_) t.join();
}

}  // namespace kiln::compiler
