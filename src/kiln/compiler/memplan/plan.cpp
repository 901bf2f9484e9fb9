#include "kiln/compiler/memplan/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace kiln::compiler {

std::string MemoryPlan::str() const {
  return fmt::format(
      "memory plan: {} intermediate bytes in {} slots (one buffer each would take {}); {} buffers kept "
      "inside kernels; {} written in place",
      planned_bytes, slot_bytes.size(), unplanned_bytes, kept_in_kernels, in_place);
}

namespace {

void loads_of(const loopir::ScalarExpr& e, int buffer, std::vector<loopir::Expr>& out) {
  if (e.kind() == loopir::ScalarKind::Load && e.buffer() == buffer) out.push_back(e.index());
  for (const auto& o : e.operands()) loads_of(o, buffer, out);
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// True when `writer` (a pointwise node of kernel k) may store into the memory of `dead`, a buffer
// this kernel reads for the last time: the writer is the only node of the kernel that reads it,
// no node of the kernel reads a view of it (an extern result over its memory), and the writer
// reads it only at the element it is writing, so every element is read before it is replaced. A
// node computed once per row (Kernel::per_row) never is: on a GPU every thread of the row reads
// its inputs and one stores, so another thread could read the store.
bool can_write_in_place(const loopir::Program& p, const Kernel& k, const loopir::LoopNode& writer, int dead,
                        const std::vector<std::vector<int>>& bases) {
  if (writer.reduce != loopir::ReduceKind::None) return false;
  for (int i : k.per_row) {
    if (std::get<loopir::LoopNode>(p.steps[static_cast<size_t>(i)]).out == writer.out) return false;
  }
  const auto& d = p.buffers[static_cast<size_t>(dead)];
  const auto& b = p.buffers[static_cast<size_t>(writer.out)];
  if (d.sizes != b.sizes || element_size(d.dtype) != element_size(b.dtype)) return false;
  for (int i : k.nodes) {
    const auto& n = std::get<loopir::LoopNode>(p.steps[static_cast<size_t>(i)]);
    for (int r : n.reads()) {
      if (r == dead ? &n != &writer : contains(bases[static_cast<size_t>(r)], dead)) return false;
    }
  }
  std::vector<loopir::Expr> indices;
  loads_of(writer.value, dead, indices);
  std::vector<loopir::Expr> idx;
  loopir::Ranges ranges;
  for (size_t k2 = 0; k2 < writer.sizes.size(); ++k2) {
    idx.push_back(loopir::index_var(k2));
    ranges[idx.back().name()] = {0, std::max<int64_t>(writer.sizes[k2] - 1, 0)};
  }
  loopir::Expr element = loopir::simplify(loopir::flat_index(idx, writer.sizes), ranges);
  for (const auto& index : indices) {
    if (loopir::simplify(index, ranges) != element) return false;
  }
  return !indices.empty();
}

}  // namespace

std::vector<loopir::BufferView> aliased_arguments(const loopir::ExternCall& call, size_t result) {
  std::vector<loopir::BufferView> all;
  loopir::for_each_view(call, [&](const loopir::BufferView& v) { all.push_back(v); });
  const Schema& s = call.op->schema();
  const Argument* ret = nullptr;
  if (s.returns.size() == call.outs.size()) {
    ret = &s.returns.at(result);
  } else if (s.returns.size() == 1 && s.returns[0].type.list) {
    ret = &s.returns[0];  // Tensor(a)[]: every result is in the list's set
  } else {
    return all;
  }
  if (!ret->alias) return {};
  if (ret->alias->set == "*" || call.args.size() != s.arguments.size()) return all;
  std::vector<loopir::BufferView> views;
  for (size_t j = 0; j < call.args.size(); ++j) {
    const auto& a = s.arguments[j].alias;
    if (!a || (a->set != ret->alias->set && !a->to_wildcard)) continue;
    if (const auto* v = std::get_if<loopir::BufferView>(&call.args[j])) views.push_back(*v);
    if (const auto* l = std::get_if<std::vector<std::optional<loopir::BufferView>>>(&call.args[j])) {
      for (const auto& v : *l) {
        if (v) views.push_back(*v);
      }
    }
  }
  return views;
}

std::vector<std::vector<int>> memory_bases(const loopir::Program& p) {
  std::vector<std::vector<int>> bases(p.buffers.size());
  for (size_t b = 0; b < bases.size(); ++b) bases[b] = {static_cast<int>(b)};
  // Steps run in order, so an argument's bases are complete before a later call's result views it.
  for (const auto& step : p.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    if (!call) continue;
    for (size_t i = 0; i < call->outs.size(); ++i) {
      std::set<int> into;
      for (const auto& v : aliased_arguments(*call, i)) {
        const auto& from = bases[static_cast<size_t>(v.buffer)];
        into.insert(from.begin(), from.end());
      }
      auto& out = bases[static_cast<size_t>(call->outs[i])];
      for (int b : into) {
        if (!contains(out, b)) out.push_back(b);
      }
    }
  }
  return bases;
}

MemoryPlan plan_memory(const loopir::Program& p, const Schedule& s) {
  MemoryPlan plan;
  size_t nb = p.buffers.size();
  plan.slot.assign(nb, -1);
  plan.output.assign(nb, false);
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
      loopir::for_each_view(call, [&](const loopir::BufferView& v) { read(v.buffer, ti); });
    }
  }
  // A view keeps its bases alive while it is read; a base an output views is allocated like an output.
  auto bases = memory_bases(p);
  for (size_t b = 0; b < nb; ++b) {
    for (int base : bases[b]) last[static_cast<size_t>(base)] = std::max(last[static_cast<size_t>(base)], last[b]);
  }
  for (const auto& o : p.outputs) {
    for (int base : bases[static_cast<size_t>(o.buffer)]) plan.output[static_cast<size_t>(base)] = true;
  }
  std::multimap<int64_t, int> free_slots;  // bytes -> slot
  struct Live {
    int last_use, slot, buffer;
  };
  std::vector<Live> live;
  for (size_t t = 0; t < s.items.size(); ++t) {
    int ti = static_cast<int>(t);
    for (auto it = live.begin(); it != live.end();) {
      if (it->last_use < ti) {
        free_slots.emplace(plan.slot_bytes[static_cast<size_t>(it->slot)], it->slot);
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
      // In place: take the slot of a buffer this kernel reads for the last time, element by element.
      int slot = -1;
      if (const auto* k = std::get_if<Kernel>(&s.items[t])) {
        const loopir::LoopNode* writer = nullptr;
        for (int i : k->nodes) {
          const auto& n = std::get<loopir::LoopNode>(p.steps[static_cast<size_t>(i)]);
          if (n.out == static_cast<int>(b)) writer = &n;
        }
        for (auto it = live.begin(); writer && it != live.end(); ++it) {
          if (it->last_use == ti && can_write_in_place(p, *k, *writer, it->buffer, bases)) {
            slot = it->slot;
            live.erase(it);
            ++plan.in_place;
            break;
          }
        }
      }
      auto fit = free_slots.lower_bound(bytes);
      if (slot >= 0) {
        // reusing the dead buffer's slot
      } else if (fit != free_slots.end()) {
        slot = fit->second;
        free_slots.erase(fit);
      } else {
        slot = static_cast<int>(plan.slot_bytes.size());
        plan.slot_bytes.push_back(bytes);
      }
      plan.slot[b] = slot;
      live.push_back({std::max(last[b], ti), slot, static_cast<int>(b)});
    }
  }
  for (int64_t b : plan.slot_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace kiln::compiler
