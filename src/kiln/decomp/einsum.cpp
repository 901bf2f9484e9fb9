// aten::einsum: Einstein summation over an equation ("bij,bjk->bik"), decomposed into views
// (diagonal for a label repeated in one operand, permute, unsqueeze), sums and batched matrix
// products, contracting the operands left to right as PyTorch does without opt_einsum.
//
// The equation's rules are PyTorch's: labels are letters (spaces are ignored), each operand may
// hold one ellipsis ("...") standing for its leading dims, broadcast against the other operands'
// from the right; without "->" the output is the ellipsis dims followed by the labels that appear
// once, in alphabetical order (uppercase first); an ellipsis the explicit output omits is summed.
#include <algorithm>
#include <array>
#include <numeric>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

constexpr int kLabels = 52;    // 'A'-'Z' then 'a'-'z'
constexpr int kEllipsis = -1;  // the ellipsis in a subscript list

int label_index(char c, size_t at) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  KILN_FAIL(ErrorKind::Value,
            "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]", at);
}

char label_char(int l) { return static_cast<char>(l < 26 ? 'A' + l : 'a' + (l - 26)); }

// One side's subscripts: labels and at most one kEllipsis.
std::vector<int> parse_subscripts(std::string_view text, size_t offset, bool output) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      KILN_CHECK(!ellipsis, "einsum(): found '.' for {} that is not part of any ellipsis",
                 output ? std::string("output") : "an operand");
      KILN_CHECK(text.substr(i, 3) == "...", "einsum(): found '.' for {} that is not part of any ellipsis",
                 output ? std::string("output") : "an operand");
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    out.push_back(label_index(c, offset + i));
  }
  return out;
}

struct Equation {
  std::vector<std::vector<int>> operands;
  std::vector<int> output;  // labels and at most one kEllipsis
};

Equation parse_equation(std::string_view equation, size_t n_operands) {
  Equation eq;
  size_t arrow = equation.find("->");
  std::string_view lhs = equation.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    eq.operands.push_back(parse_subscripts(lhs.substr(start, comma - start), start, false));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(eq.operands.size() >= n_operands, "einsum(): more operands were provided than specified in the equation");
  KILN_CHECK(eq.operands.size() <= n_operands, "einsum(): fewer operands were provided than specified in the equation");
  std::array<int, kLabels> count{};
  bool any_ellipsis = false;
  for (const auto& op : eq.operands) {
    for (int l : op) l == kEllipsis ? void(any_ellipsis = true) : void(++count[static_cast<size_t>(l)]);
  }
  if (arrow != std::string_view::npos) {
    eq.output = parse_subscripts(equation.substr(arrow + 2), arrow + 2, true);
    std::array<bool, kLabels> seen{};
    for (int l : eq.output) {
      if (l == kEllipsis) continue;
      KILN_CHECK(count[static_cast<size_t>(l)] > 0,
                 "einsum(): output subscript {} does not appear in the equation for any input operand", label_char(l));
      KILN_CHECK(!seen[static_cast<size_t>(l)], "einsum(): output subscript {} appears more than once in the output",
                 label_char(l));
      seen[static_cast<size_t>(l)] = true;
    }
  } else {
    if (any_ellipsis) eq.output.push_back(kEllipsis);
    for (int l = 0; l < kLabels; ++l) {
      if (count[static_cast<size_t>(l)] == 1) eq.output.push_back(l);
    }
  }
  return eq;
}

// The labels the equation uses, in order: label l is dim n_ell + slot[l] of an aligned operand.
using Slots = std::array<int64_t, kLabels>;

// One operand as a tensor whose dims are [ellipsis dims (right-aligned to `n_ell`)..., one per
// label the equation uses, in label order]; the dims it lacks are unsqueezed to size 1.
Tensor align_operand(Tensor x, std::vector<int> subs, size_t index, int64_t n_ell, const Slots& slot) {
  // A label repeated in one operand takes the diagonal: diagonal() moves it to the last dim.
  for (size_t i = 0; i < subs.size(); ++i) {
    if (subs[i] == kEllipsis) continue;
    for (size_t j = subs.size(); j-- > i + 1;) {
      if (subs[j] != subs[i]) continue;
      int64_t di = static_cast<int64_t>(i), dj = static_cast<int64_t>(j);
      auto ell = std::find(subs.begin(), subs.end(), kEllipsis);
      int64_t ell_dims = x.dim() - static_cast<int64_t>(subs.size()) + 1;
      if (ell != subs.end()) {
        if (ell - subs.begin() < di) di += ell_dims - 1;
        if (ell - subs.begin() < dj) dj += ell_dims - 1;
      }
      KILN_CHECK(x.size(di) == x.size(dj),
                 "einsum(): subscript {} is repeated for operand {} but the sizes don't match, {} != {}",
                 label_char(subs[i]), index, x.size(di), x.size(dj));
      x = diagonal(x, 0, di, dj);
      int l = subs[i];
      subs.erase(subs.begin() + static_cast<std::ptrdiff_t>(j));
      subs.erase(subs.begin() + static_cast<std::ptrdiff_t>(i));
      subs.push_back(l);
      i = static_cast<size_t>(-1);  // restart: positions moved
      break;
    }
  }
  // Dim of x for each label and for each (right-aligned) ellipsis dim.
  std::vector<int64_t> perm;
  std::vector<int64_t> shape;
  int64_t d = 0;
  std::array<int64_t, kLabels> dim_of;
  dim_of.fill(-1);
  std::vector<int64_t> ell_dims;
  for (int l : subs) {
    if (l == kEllipsis) {
      int64_t k = x.dim() - static_cast<int64_t>(subs.size()) + 1;
      for (int64_t e = 0; e < k; ++e) ell_dims.push_back(d++);
    } else {
      dim_of[static_cast<size_t>(l)] = d++;
    }
  }
  for (int64_t e = 0; e < n_ell - static_cast<int64_t>(ell_dims.size()); ++e) shape.push_back(1), perm.push_back(-1);
  for (int64_t e : ell_dims) shape.push_back(x.size(e)), perm.push_back(e);
  for (int l = 0; l < kLabels; ++l) {
    if (slot[static_cast<size_t>(l)] < 0) continue;
    int64_t dl = dim_of[static_cast<size_t>(l)];
    shape.push_back(dl < 0 ? 1 : x.size(dl));
    perm.push_back(dl);
  }
  std::vector<int64_t> present;
  for (int64_t p : perm) {
    if (p >= 0) present.push_back(p);
  }
  return reshape(permute(x, present), shape);
}

// Contracts `a` and `b` (same rank, broadcastable) over `sum_dims` with one bmm; the result keeps
// the rank, size 1 at the summed dims.
Tensor sum_product(Tensor a, Tensor b, const std::vector<int64_t>& sum_dims) {
  int64_t rank = a.dim();
  std::vector<int64_t> batch, left, right, contract;
  std::vector<bool> summed(static_cast<size_t>(rank), false);
  for (int64_t d : sum_dims) summed[static_cast<size_t>(d)] = true;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t sa = a.size(d), sb = b.size(d);
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, "einsum(): operands do not broadcast: sizes {} and {} at one dim",
               a.sizes().vec(), b.sizes().vec());
    if (summed[static_cast<size_t>(d)]) {
      if (sa != 1 && sb != 1) {
        contract.push_back(d);
        continue;
      }
      // Held by one side only: summed there first; then size 1 on both, with the dims below.
      if (sa != 1) a = sum(a, std::vector<int64_t>{d}, true);
      if (sb != 1) b = sum(b, std::vector<int64_t>{d}, true);
      right.push_back(d);
    } else if (sa != 1 && sb != 1) {
      batch.push_back(d);
    } else if (sa != 1) {
      left.push_back(d);
    } else {
      right.push_back(d);  // also the dims of size 1 on both sides
    }
  }
  auto product = [](const Tensor& t, const std::vector<int64_t>& dims) {
    int64_t p = 1;
    for (int64_t d : dims) p *= t.size(d);
    return p;
  };
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  std::vector<int64_t> ones_a = concat({&right}), ones_b = concat({&left});
  // a: [batch, left, contract, (right: size 1)]; b: [batch, contract, right, (left: size 1)].
  Tensor a3 = reshape(permute(a, concat({&batch, &left, &contract, &ones_a})),
                      {product(a, batch), product(a, left), product(a, contract)});
  Tensor b3 = reshape(permute(b, concat({&batch, &contract, &right, &ones_b})),
                      {product(b, batch), product(b, contract), product(b, right)});
  Tensor c = bmm(a3, b3);
  // Back to the rank: sizes of [batch, left, right] then size 1 for the contracted dims.
  std::vector<int64_t> order = concat({&batch, &left, &right, &contract});
  std::vector<int64_t> sizes;
  for (int64_t d : batch) sizes.push_back(a.size(d));
  for (int64_t d : left) sizes.push_back(a.size(d));
  for (int64_t d : right) sizes.push_back(b.size(d));
  for (size_t i = 0; i < contract.size(); ++i) sizes.push_back(1);
  std::vector<int64_t> inverse(static_cast<size_t>(rank));
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return permute(reshape(c, sizes), inverse);
}

Tensor einsum_impl(std::string_view equation, std::span<const Tensor> tensors, std::optional<IntArrayRef>) {
  KILN_CHECK(!tensors.empty(), "einsum(): must provide at least one operand");
  Equation eq = parse_equation(equation, tensors.size());
  int64_t n_ell = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& subs = eq.operands[i];
    int64_t labels =
        static_cast<int64_t>(std::count_if(subs.begin(), subs.end(), [](int l) { return l != kEllipsis; }));
    bool ell = labels != static_cast<int64_t>(subs.size());
    int64_t dims = tensors[i].dim();
    KILN_CHECK(ell || labels == dims,
               "einsum(): the number of subscripts in the equation ({}) does not match the number of dimensions ({}) "
               "for operand {} and no ellipsis was given",
               labels, dims, i);
    KILN_CHECK(!ell || labels <= dims,
               "einsum(): the number of subscripts in the equation ({}) is more than the number of dimensions ({}) "
               "for operand {}",
               labels, dims, i);
    if (ell) n_ell = std::max(n_ell, dims - labels);
  }
  Slots slot;
  slot.fill(-1);
  for (const auto& subs : eq.operands) {
    for (int l : subs) {
      if (l != kEllipsis) slot[static_cast<size_t>(l)] = 0;
    }
  }
  int64_t used = 0;
  for (auto& s : slot) {
    if (s == 0) s = used++;
  }
  std::vector<Tensor> ops;
  for (size_t i = 0; i < tensors.size(); ++i) ops.push_back(align_operand(tensors[i], eq.operands[i], i, n_ell, slot));
  // Output dims in the aligned layout, in output order; every other dim is summed.
  std::vector<int64_t> out_dims;
  for (int l : eq.output) {
    if (l == kEllipsis) {
      for (int64_t e = 0; e < n_ell; ++e) out_dims.push_back(e);
    } else {
      out_dims.push_back(n_ell + slot[static_cast<size_t>(l)]);
    }
  }
  int64_t rank = n_ell + used;
  std::vector<bool> kept(static_cast<size_t>(rank), false);
  for (int64_t d : out_dims) kept[static_cast<size_t>(d)] = true;
  // Sizes of 1 at a dim no operand holds stay out of the way; a dim summed with the last operand
  // that has it (size > 1) is contracted in that pair.
  auto last_holder = [&](int64_t d) {
    int64_t last = -1;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].size(d) != 1) last = static_cast<int64_t>(i);
    }
    return last;
  };
  Tensor acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::vector<int64_t> sum_dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (!kept[static_cast<size_t>(d)] && last_holder(d) <= static_cast<int64_t>(i)) sum_dims.push_back(d);
    }
    acc = sum_product(acc, ops[i], sum_dims);
  }
  std::vector<int64_t> rest;
  for (int64_t d = 0; d < rank; ++d) {
    if (!kept[static_cast<size_t>(d)] && acc.size(d) != 1) rest.push_back(d);
  }
  if (!rest.empty()) acc = sum(acc, rest, true);
  // Every non-output dim is now size 1: drop them and order the output's.
  std::vector<int64_t> shape;
  for (int64_t d : out_dims) shape.push_back(acc.size(d));
  std::vector<int64_t> order = out_dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!kept[static_cast<size_t>(d)]) order.push_back(d);
  }
  return reshape(permute(acc, order), shape);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::einsum", kiln::detail::boxed<&einsum_impl>());
});

}  // namespace
}  // namespace kiln::decomp
