#include "kiln/compiler/schedule/fuse.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "kiln/compiler/schedule/access.h"
#include "kiln/support/log.h"

namespace kiln::compiler {
namespace {

using loopir::BufferView;
using loopir::Expr;
using loopir::LoopNode;
using loopir::ScalarExpr;

int64_t product(IntArrayRef s) {
  int64_t p = 1;
  for (int64_t x : s) p *= x;
  return p;
}

// Number of trailing dims of `sizes` whose product is `cols` (-1 if none).
int trailing_dims(IntArrayRef sizes, int64_t cols) {
  int64_t p = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    if (p == cols) return static_cast<int>(sizes.size() - 1 - k);
    p *= sizes[k];
  }
  return p == cols ? static_cast<int>(sizes.size()) : -1;
}

// The rows x cols a node would form a kernel with on its own.
std::pair<int64_t, int64_t> natural_shape(const LoopNode& n) {
  if (n.reduce != loopir::ReduceKind::None) return {product(n.sizes), product(n.reduction_sizes)};
  if (n.sizes.empty()) return {1, 1};
  return {product(n.sizes) / std::max<int64_t>(n.sizes.back(), 1), n.sizes.back()};
}

// The flat index of the row / the element a node is computing, as its loads would spell them.
Expr row_index(const LoopNode& n, int64_t cols) {
  std::vector<Expr> idx;
  size_t lead = n.sizes.size();
  if (n.reduce == loopir::ReduceKind::None) lead -= static_cast<size_t>(trailing_dims(n.sizes, cols));
  Shape lead_sizes(n.sizes.begin(), n.sizes.begin() + static_cast<int64_t>(lead));
  for (size_t k = 0; k < lead; ++k) idx.push_back(loopir::index_var(k));
  return loopir::flat_index(idx, lead_sizes);
}
Expr element_index(const LoopNode& n) {
  std::vector<Expr> idx;
  Shape sizes = n.sizes;
  for (size_t k = 0; k < n.sizes.size(); ++k) idx.push_back(loopir::index_var(k));
  if (n.reduce != loopir::ReduceKind::None) {
    for (size_t k = 0; k < n.reduction_sizes.size(); ++k) {
      idx.push_back(loopir::reduction_var(k));
      sizes.push_back(n.reduction_sizes[k]);
    }
  }
  return loopir::flat_index(idx, sizes);
}

loopir::Ranges ranges_of(const LoopNode& n) {
  loopir::Ranges r;
  for (size_t k = 0; k < n.sizes.size(); ++k)
    r[loopir::index_var(k).name()] = {0, std::max<int64_t>(n.sizes[k] - 1, 0)};
  for (size_t k = 0; k < n.reduction_sizes.size(); ++k) {
    r[loopir::reduction_var(k).name()] = {0, std::max<int64_t>(n.reduction_sizes[k] - 1, 0)};
  }
  return r;
}

// How a loop node maps onto rows x cols: reductions reduce the cols of each output row; a
// pointwise node's trailing dims whose sizes multiply to `cols` are the cols.
bool node_fits(const LoopNode& n, int64_t rows, int64_t cols) {
  if (n.reduce != loopir::ReduceKind::None) return product(n.sizes) == rows && product(n.reduction_sizes) == cols;
  return product(n.sizes) == rows * cols && trailing_dims(n.sizes, cols) >= 0;
}

// Every (buffer, index in row and col) the kernel's nodes load; its column sums' too when asked.
std::set<std::pair<int, std::string>> kernel_loads(const loopir::Program& p, const Kernel& k, const loopir::Ranges& kr,
                                                   bool columns_too) {
  std::set<std::pair<int, std::string>> reads;
  for (int i : k.nodes) {
    if (k.columns.contains(i) && !columns_too) continue;
    std::vector<ScalarExpr> loads;
    collect_loads(kernel_value(p, k, i, kr), loads);
    for (const auto& l : loads) reads.emplace(l.buffer(), l.index().str());
  }
  return reads;
}

}  // namespace

size_t Schedule::kernel_count() const {
  size_t n = 0;
  for (const auto& item : items) n += std::holds_alternative<Kernel>(item);
  return n;
}

std::string Schedule::str(const loopir::Program& p) const {
  std::string s;
  for (const auto& item : items) {
    if (const auto* k = std::get_if<Kernel>(&item)) {
      std::vector<std::string> nodes;
      for (int i : k->nodes) {
        const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
        nodes.push_back(fmt::format("buf{}{}", n.out,
                                    k->local.contains(n.out) ? " (kept in kernel)"
                                    : k->columns.contains(i) ? " (column sum)"
                                    : k->per_row.contains(i) ? " (once per row)"
                                                             : ""));
      }
      s += fmt::format("{}: {} rows x {} cols: {}\n", k->name, k->rows, k->cols, fmt::join(nodes, ", "));
    } else {
      const auto& call = std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(std::get<int>(item))]);
      s += fmt::format("extern {}\n", call.op->name());
    }
  }
  return s;
}

std::string can_fuse(const loopir::Program& p, const Kernel& k, const LoopNode& n) {
  if (!node_fits(n, k.rows, k.cols)) {
    return fmt::format("its iteration space ({}{}) is not {} rows x {} cols", n.sizes,
                       n.reduction_sizes.empty() ? "" : fmt::format(" reducing {}", n.reduction_sizes), k.rows, k.cols);
  }
  auto [rows, cols] = natural_shape(n);
  if (is_column_reduction(n, rows, cols)) {
    return "it reduces along strided columns: on its own the reduced dim runs outside and every load is contiguous";
  }
  std::map<int, const LoopNode*> in_kernel;  // buffer -> the kernel's node writing it
  std::set<int> per_row;                     // buffers of the kernel's nodes computed once per row
  for (int i : k.nodes) {
    const auto& m = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    in_kernel[m.out] = &m;
    if (k.per_row.contains(i)) per_row.insert(m.out);
  }
  loopir::Ranges kr = kernel_ranges(k.rows, k.cols);
  auto kernel_reads = kernel_loads(p, k, kr, /*columns_too=*/true);
  std::vector<ScalarExpr> loads, row_col_loads;
  collect_loads(n.value, loads);
  for (int i : k.columns) {
    int b = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]).out;
    for (const auto& l : loads) {
      if (l.buffer() == b) return fmt::format("it reads column sum buf{}, finished only when the kernel ends", b);
    }
  }
  collect_loads(row_col_value(n, k.cols, kr), row_col_loads);
  loopir::Ranges ranges = ranges_of(n);
  bool shares = false;
  for (size_t li = 0; li < loads.size(); ++li) {
    const ScalarExpr& l = loads[li];
    auto src_it = in_kernel.find(l.buffer());
    if (src_it == in_kernel.end()) {
      // An outside buffer: shared when a node of the kernel reads it at the same place.
      shares = shares || kernel_reads.contains({l.buffer(), row_col_loads.at(li).index().str()});
      continue;
    }
    shares = true;
    const LoopNode& src = *src_it->second;
    // A reduction's result (or a value computed once per row) is read per row (n is its epilogue);
    // an elementwise, broadcast or injective result per element (n continues its chain).
    bool by_row = src.pattern == PatternKind::Reduction || per_row.contains(l.buffer());
    Expr want = by_row ? row_index(n, k.cols) : element_index(n);
    if (!by_row && n.pattern != PatternKind::Reduction && trailing_dims(src.sizes, k.cols) < 0) {
      return fmt::format("{} buf{} has another row shape", pattern_kind_name(src.pattern), l.buffer());
    }
    if (loopir::simplify(l.index(), ranges) != loopir::simplify(want, ranges)) {
      return fmt::format("it reads {} buf{} at {}, not at the {} it is computing", pattern_kind_name(src.pattern),
                         l.buffer(), l.index().str(), by_row ? "row" : "element");
    }
  }
  if (!shares) return "it shares no data with the kernel (no buffer the kernel writes, no load at the same place)";
  return "";
}

std::string fusion_edge(const loopir::Program& p, const Kernel& k, const LoopNode& n) {
  std::set<int> reads;
  for (int b : n.reads()) reads.insert(b);
  const LoopNode* producer = nullptr;
  for (int i : k.nodes) {
    const auto& m = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    if (!reads.contains(m.out)) continue;
    // The last reduction it reads names the edge (an epilogue); else the last node it reads.
    if (m.pattern == PatternKind::Reduction || producer == nullptr || producer->pattern != PatternKind::Reduction) {
      producer = &m;
    }
  }
  std::string_view kind = pattern_kind_name(n.pattern);
  if (producer == nullptr) return fmt::format("{} sibling: loads what the kernel loads", kind);
  if (producer->pattern == PatternKind::Reduction && n.pattern == PatternKind::Reduction) {
    return fmt::format("reduction of the same rows after reduction buf{}", producer->out);
  }
  if (producer->pattern == PatternKind::Reduction) {
    return fmt::format("{} epilogue of reduction buf{}: reads it per row", kind, producer->out);
  }
  return fmt::format("{} consumer of {} buf{}: reads it at the element it computes", kind,
                     pattern_kind_name(producer->pattern), producer->out);
}

std::string can_fuse_per_row(const loopir::Program& p, const Kernel& k, const LoopNode& n) {
  if (n.reduce != loopir::ReduceKind::None || k.cols < 2 || product(n.sizes) != k.rows)
    return fmt::format("it does not compute one value for each of the kernel's {} rows", k.rows);
  std::map<int, int> in_kernel;  // buffer -> the kernel's step writing it
  for (int i : k.nodes) {
    const auto& m = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    auto [rows, cols] = natural_shape(m);
    if (!k.columns.contains(i) && is_column_reduction(m, rows, cols))
      return "the kernel is a column reduction: its outputs are finished together, when it ends";
    in_kernel[m.out] = i;
  }
  const loopir::Ranges kr = kernel_ranges(k.rows, k.cols);
  const Expr row = loopir::simplify(Expr::var("row"), kr);
  std::vector<ScalarExpr> loads;
  collect_loads(per_row_value(n, kr), loads);
  bool reads_row = false;
  for (const ScalarExpr& l : loads) {
    auto it = in_kernel.find(l.buffer());
    if (it == in_kernel.end()) continue;  // an outside buffer, read anywhere
    const LoopNode& src = std::get<LoopNode>(p.steps[static_cast<size_t>(it->second)]);
    if (k.columns.contains(it->second))
      return fmt::format("it reads column sum buf{}, finished only when the kernel ends", l.buffer());
    if (src.reduce == loopir::ReduceKind::None && !k.per_row.contains(it->second)) {
      return fmt::format("it reads {} buf{}, a value of each element of a row", pattern_kind_name(src.pattern),
                         l.buffer());
    }
    if (l.index() != row)
      return fmt::format("it reads buf{} at {}, not at the row it is computing", l.buffer(), l.index().str());
    reads_row = true;
  }
  if (!reads_row) return "it reads no reduction of the kernel's rows";
  return "";
}

loopir::ScalarExpr kernel_value(const loopir::Program& p, const Kernel& k, int i, const loopir::Ranges& ranges) {
  const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
  if (k.columns.contains(i)) return column_value(n, ranges);
  if (k.per_row.contains(i)) return per_row_value(n, ranges);
  return row_col_value(n, k.cols, ranges);
}

std::string can_fuse_column(const loopir::Program& p, const Kernel& k, const LoopNode& n, const FusionLimits& limits) {
  if (limits.column_sums_up_to == 0) return "the target computes no column sums in row kernels";
  if (n.reduce != loopir::ReduceKind::Sum) return "only sums are computed as column sums";
  if (!is_floating(p.buffers[static_cast<size_t>(n.out)].dtype)) return "its sum is not of a floating dtype";
  if (k.rows < 2 || product(n.sizes) != k.cols || product(n.reduction_sizes) != k.rows) {
    return fmt::format("it does not sum {} rows into {} cols", k.rows, k.cols);
  }
  if (k.cols > limits.column_sums_up_to)
    return fmt::format("{} cols of partial sums per thread are too many (at most {})", k.cols,
                       limits.column_sums_up_to);
  auto [rows, cols] = natural_shape(n);
  if (!is_column_reduction(n, rows, cols)) return "it is not a column reduction";
  std::set<int> written;
  for (int i : k.nodes) {
    const auto& m = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    written.insert(m.out);
    const auto reads = m.reads();
    if (std::find(reads.begin(), reads.end(), n.out) != reads.end()) {
      return fmt::format("buf{} ({}) of the kernel reads it, and it is finished only when the kernel ends", m.out,
                         m.origin);
    }
  }
  loopir::Ranges kr = kernel_ranges(k.rows, k.cols);
  auto kernel_reads = kernel_loads(p, k, kr, /*columns_too=*/false);
  std::vector<ScalarExpr> loads;
  collect_loads(column_value(n, kr), loads);
  bool shares = false;
  for (const auto& l : loads) {
    if (written.contains(l.buffer())) return fmt::format("it reads buf{}, which the kernel writes", l.buffer());
    shares = shares || kernel_reads.contains({l.buffer(), l.index().str()});
  }
  if (!shares) return "it loads nothing the kernel's rows load at the same place";
  return "";
}

Schedule schedule(const loopir::Program& p, const FusionLimits& limits) {
  Schedule sched;
  Kernel* open = nullptr;  // the last item, while it is a kernel nodes may join
  // The item writing each buffer so far: a node computed once per row joins the kernel writing the
  // last of what it reads, the open one or an earlier one.
  std::vector<int> item_of(p.buffers.size(), -1);
  auto placed = [&](size_t step, size_t item) {
    if (const auto* node = std::get_if<LoopNode>(&p.steps[step])) {
      item_of[static_cast<size_t>(node->out)] = static_cast<int>(item);
    } else {
      for (int b : std::get<loopir::ExternCall>(p.steps[step]).outs)
        item_of[static_cast<size_t>(b)] = static_cast<int>(item);
    }
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const auto* n = std::get_if<LoopNode>(&p.steps[i]);
    if (!n) {
      if (open)
        KILN_LOG("fusion", "{}: closed before extern {}", open->name,
                 std::get<loopir::ExternCall>(p.steps[i]).op->name());
      open = nullptr;
      sched.items.emplace_back(static_cast<int>(i));
      placed(i, sched.items.size() - 1);
      continue;
    }
    auto [rows, cols] = natural_shape(*n);
    if (open && is_column_reduction(*n, rows, cols)) {
      std::string why = can_fuse_column(p, *open, *n, limits);
      if (why.empty()) {
        KILN_LOG("fusion", "{}: fuse buf{} ({}) as a column sum of the kernel's rows: it loads what the rows load",
                 open->name, n->out, n->origin);
        open->nodes.push_back(static_cast<int>(i));
        open->columns.insert(static_cast<int>(i));
        open->name += "_" + n->origin;
        placed(i, sched.items.size() - 1);
        continue;
      }
      KILN_LOG("fusion", "{}: buf{} ({}) is not a column sum of it: {}", open->name, n->out, n->origin, why);
    }
    if (open && !is_column_reduction(*n, rows, cols) && open->nodes.size() == 1 && open->columns.empty()) {
      // A lone column reduction followed by a row kernel over what it reads: the row kernel takes it.
      int c = open->nodes[0];
      const auto& col_node = std::get<LoopNode>(p.steps[static_cast<size_t>(c)]);
      auto [c_rows, c_cols] = natural_shape(col_node);
      if (is_column_reduction(col_node, c_rows, c_cols)) {
        Kernel flipped;
        flipped.nodes = {static_cast<int>(i)};
        flipped.rows = rows;
        flipped.cols = cols;
        if (can_fuse_column(p, flipped, col_node, limits).empty()) {
          KILN_LOG("fusion", "{}: buf{} ({}) runs as a column sum of the row kernel of buf{} ({})", open->name,
                   col_node.out, col_node.origin, n->out, n->origin);
          open->nodes = {c, static_cast<int>(i)};
          open->columns = {c};
          open->rows = rows;
          open->cols = cols;
          open->name += "_" + n->origin;
          placed(i, sched.items.size() - 1);
          continue;
        }
      }
    }
    std::string why = open ? can_fuse(p, *open, *n) : "";
    if (open && why.empty()) {
      KILN_LOG("fusion", "{}: fuse buf{} ({}), {} (same {} rows x {} cols)", open->name, n->out, n->origin,
               fusion_edge(p, *open, *n), open->rows, open->cols);
      open->nodes.push_back(static_cast<int>(i));
      open->name += "_" + n->origin;
      placed(i, sched.items.size() - 1);
      continue;
    }
    // Once per row, in the kernel writing the last of what it reads: everything else it reads is
    // written before that kernel runs (and what reads it comes after it in program order).
    int host = -1;
    for (int b : n->reads()) host = std::max(host, item_of[static_cast<size_t>(b)]);
    Kernel* h = host >= 0 ? std::get_if<Kernel>(&sched.items[static_cast<size_t>(host)]) : nullptr;
    std::string row_why = n->reduce != loopir::ReduceKind::None ? "a reduction"
                          : h                                   ? can_fuse_per_row(p, *h, *n)
                                                                : "no kernel writes what it reads last";
    if (row_why.empty()) {
      KILN_LOG("fusion", "{}: fuse buf{} ({}) once per row: it reads the kernel's reductions at its row{}", h->name,
               n->out, n->origin, h == open ? "" : " (an earlier kernel: what it reads is written by its end)");
      h->nodes.push_back(static_cast<int>(i));
      h->per_row.insert(static_cast<int>(i));
      h->name += "_" + n->origin;
      placed(i, static_cast<size_t>(host));
      continue;
    }
    if (open) {
      KILN_LOG("fusion", "{}: buf{} ({}, {}) starts a new kernel: {}{}", open->name, n->out, n->origin,
               pattern_kind_name(n->pattern), why,
               n->reduce == loopir::ReduceKind::None ? "; not once per row: " + row_why : std::string());
    }
    Kernel k;
    k.name = fmt::format("kernel{}_{}", sched.kernel_count(), n->origin);
    k.nodes.push_back(static_cast<int>(i));
    k.rows = rows;
    k.cols = cols;
    sched.items.emplace_back(std::move(k));
    open = &std::get<Kernel>(sched.items.back());
    placed(i, sched.items.size() - 1);
  }
  // Buffers nobody outside their kernel reads stay in it.
  std::map<int, int> kernel_of;  // buffer -> item
  std::map<int, std::set<int>> readers;
  for (size_t it = 0; it < sched.items.size(); ++it) {
    if (const auto* k = std::get_if<Kernel>(&sched.items[it])) {
      for (int i : k->nodes) {
        const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
        kernel_of[n.out] = static_cast<int>(it);
        for (int b : n.reads()) readers[b].insert(static_cast<int>(it));
      }
    } else {
      const auto& call = std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(std::get<int>(sched.items[it]))]);
      loopir::for_each_view(call, [&](const BufferView& v) { readers[v.buffer].insert(static_cast<int>(it)); });
    }
  }
  std::set<int> outputs;
  for (const auto& o : p.outputs) outputs.insert(o.buffer);
  for (auto& item : sched.items) {
    auto* k = std::get_if<Kernel>(&item);
    if (!k || k->nodes.size() < 2) continue;
    int self = static_cast<int>(&item - sched.items.data());
    for (int i : k->nodes) {
      if (k->columns.contains(i)) continue;  // written when the kernel ends, for later readers
      int b = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]).out;
      const auto& r = readers[b];
      if (!outputs.contains(b) && r.size() == 1 && *r.begin() == self) {
        k->local.insert(b);
        KILN_LOG("fusion", "{}: buf{} stays inside the kernel (no later reader)", k->name, b);
      }
    }
  }
  return sched;
}

namespace {

// Does `e` read the result of a reduction in `pending`?
bool reads_any(const loopir::ScalarExpr& e, const std::set<int>& pending) {
  if (e.kind() == loopir::ScalarKind::Load && pending.contains(e.buffer())) return true;
  for (const auto& o : e.operands()) {
    if (reads_any(o, pending)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<int>> row_passes(const loopir::Program& p, const Kernel& k) {
  std::vector<std::vector<int>> passes;
  std::set<int> pending;
  for (int i : k.nodes) {
    if (k.columns.contains(i)) continue;  // column sums: added along the way
    const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    const bool per_row = k.per_row.contains(i);  // computed at the end of the pass, with its reductions
    if (passes.empty() || (!per_row && reads_any(n.value, pending))) {
      passes.emplace_back();
      pending.clear();
    }
    passes.back().push_back(i);
    if (n.reduce != loopir::ReduceKind::None || per_row) pending.insert(n.out);
  }
  return passes;
}

}  // namespace kiln::compiler
