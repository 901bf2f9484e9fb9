#include "kiln/compiler/loopir/program.h"

#include <algorithm>

#include <fmt/format.h>

namespace kiln::loopir {

int64_t Buffer::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t Buffer::extent() const {
  if (strides.empty()) return numel();
  int64_t last = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0) return 0;
    last += (sizes[k] - 1) * strides[k];
  }
  return last + 1;
}

std::string_view reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::None: return "none";
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Prod: return "prod";
  }
  return "?";
}

namespace {
void collect_reads(const ScalarExpr& e, std::vector<int>& out) {
  if (e.kind() == ScalarKind::Load) out.push_back(e.buffer());
  for (const auto& o : e.operands()) collect_reads(o, out);
}
}  // namespace

std::vector<int> LoopNode::reads() const {
  std::vector<int> out;
  collect_reads(value, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int Program::add_buffer(DType dtype, Shape sizes, BufferRole role, std::string name, Shape strides) {
  int id = static_cast<int>(buffers.size());
  buffers.push_back(Buffer{id, name.empty() ? fmt::format("buf{}", id) : std::move(name), dtype, std::move(sizes),
                           std::move(strides), role});
  return id;
}

std::string Program::str() const {
  std::string s;
  for (const Step& step : steps) {
    if (const auto* n = std::get_if<LoopNode>(&step)) {
      const Buffer& b = buffers[static_cast<size_t>(n->out)];
      if (n->reduce == ReduceKind::None) {
        s += fmt::format("buf{}: {}{} = {}    # {}\n", b.id, dtype_name(b.dtype), b.sizes, n->value.str(), n->origin);
      } else {
        s += fmt::format("buf{}: {}{} = {} over {} of {}{}    # {}\n", b.id, dtype_name(b.dtype), b.sizes,
                         reduce_kind_name(n->reduce), n->reduction_sizes, n->value.str(),
                         n->divisor == 1.0 ? "" : fmt::format(" / {}", n->divisor), n->origin);
      }
    } else {
      const auto& call = std::get<ExternCall>(step);
      std::vector<std::string> outs;
      for (int o : call.outs) outs.push_back(fmt::format("buf{}", o));
      s += fmt::format("{} = extern {}\n", fmt::join(outs, ", "), call.op->name());
    }
  }
  return s;
}

Expr index_var(size_t k) { return Expr::var(fmt::format("i{}", k)); }
Expr reduction_var(size_t k) { return Expr::var(fmt::format("r{}", k)); }

Expr flat_index(const std::vector<Expr>& idx, IntArrayRef sizes) {
  Expr flat = Expr::constant(0);
  int64_t stride = 1;
  for (size_t k = idx.size(); k-- > 0;) {
    flat = flat + idx[k] * stride;
    stride *= sizes[k];
  }
  return flat;
}

}  // namespace kiln::loopir
