#include "kiln/compiler/memplan/plan.h"

#include <map>

#include <fmt/format.h>

namespace kiln::compiler {

std::string MemoryPlan::str() const {
  return fmt::format("memory plan: {} intermediate bytes in {} slots (one buffer each would take {}); {} buffers kept "
                     "inside kernels", planned_bytes, slot_bytes.size(), unplanned_bytes, kept_in_kernels);
}

MemoryPlan plan_memory(const loopir::Program& p, const Schedule& s) {
  MemoryPlan plan;
  size_t nb = p.buffers.size();
  plan.slot.assign(nb, -1);
  plan.output.assign(nb, false);
  for (const auto& o : p.outputs) plan.output[static_cast<size_t>(o.buffer)] = true;
  std::vector<int> first(nb, -1), last(nb, -1);
  std::vector<bool> local(nb, false);
  auto read = [&](int b, int t) { last[static_cast<size_t>(b)] = std::max(last[static_cast<size_t>(b)], t); };
  for (size_t t = 0; t < s.items.size(); ++t) {
    int ti = static_cast<int>(t);
    if (const auto* k = std::get_if<Kernel>(&s.items[t])) {
      for (int b : k->local) local[static_cast<size_t>(b)] = true;
      for (int i : k->nodes) {
        const auto& n = std::get<loopir::LoopNode>(p.steps[static_cast<size_t>(i)]);
        if (first[static_cast<size_t>(n.out)] < 0) first[static_cast<size_t>(n.out)] = ti;
        for (int b : n.reads()) read(b, ti);
      }
    } else {
      const auto& call = std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(std::get<int>(s.items[t]))]);
      for (const auto& a : call.args) {
        if (const auto* v = std::get_if<loopir::BufferView>(&a)) read(v->buffer, ti);
        if (const auto* l = std::get_if<std::vector<loopir::BufferView>>(&a)) {
          for (const auto& v : *l) read(v.buffer, ti);
        }
      }
    }
  }
  std::multimap<int64_t, int> free_slots;  // bytes -> slot
  std::vector<std::pair<int, int>> live;    // (last use, slot)
  for (size_t t = 0; t < s.items.size(); ++t) {
    int ti = static_cast<int>(t);
    for (auto it = live.begin(); it != live.end();) {
      if (it->first < ti) {
        free_slots.emplace(plan.slot_bytes[static_cast<size_t>(it->second)], it->second);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    for (size_t b = 0; b < nb; ++b) {
      const auto& buf = p.buffers[b];
      if (first[b] != ti || buf.role != loopir::BufferRole::Computed) continue;
      if (local[b]) {
        ++plan.kept_in_kernels;
        continue;
      }
      if (plan.output[b]) continue;
      int64_t bytes = buf.numel() * static_cast<int64_t>(element_size(buf.dtype));
      plan.unplanned_bytes += bytes;
      auto fit = free_slots.lower_bound(bytes);
      int slot;
      if (fit != free_slots.end()) {
        slot = fit->second;
        free_slots.erase(fit);
      } else {
        slot = static_cast<int>(plan.slot_bytes.size());
        plan.slot_bytes.push_back(bytes);
      }
      plan.slot[b] = slot;
      live.emplace_back(std::max(last[b], ti), slot);
    }
  }
  for (int64_t b : plan.slot_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace kiln::compiler
