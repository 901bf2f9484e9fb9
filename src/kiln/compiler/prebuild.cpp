#include "kiln/compiler/prebuild.h"

#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "kiln/ops/api.h"
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

struct Job {
  const Prebuild* prebuild;  // an OpAttr's value: set once, lives as long as the attribute
  std::string op;
  Stack args;
};

}  // namespace

Prebuilds::Prebuilds(const loopir::Program& p, const Target& target, const OpAttr<Prebuild>* prebuilds) {
  if (!prebuilds) {
    if (target.device.is_cpu()) return;
    prebuilds = &prebuild_attr(backend_key(target.device));
  }
  std::vector<Job> jobs;
  for (const auto& step : p.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    const Prebuild* prebuild = call ? prebuilds->get(call->op) : nullptr;
    if (prebuild) jobs.push_back({prebuild, call->op->schema().qualified_name(), meta_arguments(p, *call)});
  }
  if (jobs.empty()) return;
  const size_t count = jobs.size();
  try {
    thread_ = std::jthread([jobs = std::move(jobs), device = target.device] {
      for (const Job& job : jobs) {
        try {
          (*job.prebuild)(job.args, device);
        } catch (const std::exception& e) {
          KILN_LOG("compile", "prebuild of {} on {}: {}", job.op, device, e.what());
        } catch (...) {
          KILN_LOG("compile", "prebuild of {} on {}: an exception that is not a std::exception", job.op, device);
        }
      }
    });
  } catch (const std::system_error&) {
    return;  // no thread to be had: each call builds its kernel when it first runs
  }
  started_ = count;
}

}  // namespace kiln::compiler
