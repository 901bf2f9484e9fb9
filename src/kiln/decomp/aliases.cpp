// PyTorch's alias ops: another name for an op kiln implements, taking the same arguments in the same
// order (divide for div, arccos for acos, clip for clamp, the special_ and NumPy-style spellings).
// Each runs its target through the dispatcher, so it traces and compiles as the target. The two
// schemas are checked against each other when the kernels are registered: an alias whose arguments
// or returns differ from its target's is a kiln::Error there, never a call with misplaced arguments.
#include "kiln/decomp/aliases.h"

#include "kiln/kernels/register.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::decomp {
namespace {

constexpr OpAlias kAliases[] = {
    {"aten::divide.Tensor", "aten::div.Tensor"},
    {"aten::divide.Scalar", "aten::div.Scalar"},
    {"aten::divide.Tensor_mode", "aten::div.Tensor_mode"},
    {"aten::divide.Scalar_mode", "aten::div.Scalar_mode"},
    {"aten::true_divide.Tensor", "aten::div.Tensor"},
    {"aten::true_divide.Scalar", "aten::div.Scalar"},
    {"aten::multiply.Tensor", "aten::mul.Tensor"},
    {"aten::multiply.Scalar", "aten::mul.Scalar"},
    {"aten::subtract.Tensor", "aten::sub.Tensor"},
    {"aten::subtract.Scalar", "aten::sub.Scalar"},
    {"aten::greater.Tensor", "aten::gt.Tensor"},
    {"aten::greater.Scalar", "aten::gt.Scalar"},
    {"aten::greater_equal.Tensor", "aten::ge.Tensor"},
    {"aten::greater_equal.Scalar", "aten::ge.Scalar"},
    {"aten::less.Tensor", "aten::lt.Tensor"},
    {"aten::less.Scalar", "aten::lt.Scalar"},
    {"aten::less_equal.Tensor", "aten::le.Tensor"},
    {"aten::less_equal.Scalar", "aten::le.Scalar"},
    {"aten::not_equal.Tensor", "aten::ne.Tensor"},
    {"aten::not_equal.Scalar", "aten::ne.Scalar"},
    {"aten::max.other", "aten::maximum"},
    {"aten::min.other", "aten::minimum"},
    {"aten::absolute", "aten::abs"},
    {"aten::negative", "aten::neg"},
    {"aten::fix", "aten::trunc"},
    {"aten::clip", "aten::clamp"},
    {"aten::clip.Tensor", "aten::clamp.Tensor"},
    {"aten::arccos", "aten::acos"},
    {"aten::arcsin", "aten::asin"},
    {"aten::arctan", "aten::atan"},
    {"aten::arccosh", "aten::acosh"},
    {"aten::arcsinh", "aten::asinh"},
    {"aten::arctanh", "aten::atanh"},
    {"aten::arctan2", "aten::atan2"},
    {"aten::special_expit", "aten::sigmoid"},
    {"aten::special_expm1", "aten::expm1"},
    {"aten::special_exp2", "aten::exp2"},
    {"aten::special_log1p", "aten::log1p"},
    {"aten::special_erf", "aten::erf"},
    {"aten::special_sinc", "aten::sinc"},
    {"aten::special_round", "aten::round.decimals"},
    {"aten::special_logit", "aten::logit"},
    {"aten::special_xlogy", "aten::xlogy.Tensor"},
    {"aten::special_logsumexp", "aten::logsumexp"},
    {"aten::special_log_softmax", "aten::log_softmax.int"},
    {"aten::special_softmax", "aten::softmax.int"},
    {"aten::special_gammaln", "aten::lgamma"},
    {"aten::special_gammainc", "aten::igamma"},
    {"aten::special_gammaincc", "aten::igammac"},
    {"aten::special_digamma", "aten::digamma"},
    {"aten::special_psi", "aten::digamma"},
    {"aten::special_erfc", "aten::erfc"},
    {"aten::special_erfinv", "aten::erfinv"},
    {"aten::special_i0", "aten::i0"},
    {"aten::special_polygamma", "aten::polygamma"},
    {"aten::special_multigammaln", "aten::mvlgamma"},
    {"aten::detach", "aten::alias"},
    {"aten::concat", "aten::cat"},
    {"aten::concatenate", "aten::cat"},
    {"aten::moveaxis.int", "aten::movedim.int"},
    {"aten::moveaxis.intlist", "aten::movedim.intlist"},
    {"aten::ger", "aten::outer"},
    {"aten::row_stack", "aten::vstack"},
    {"aten::linalg_matmul", "aten::matmul"},
    {"aten::matrix_H", "aten::mH"},
    {"aten::trapz.x", "aten::trapezoid.x"},
};

// The alias takes the target's arguments in order (names aside: special_expit(self) is sigmoid(self)),
// the target may take more where they have defaults, and both return the same.
void check_same_signature(const Schema& alias, const Schema& target) {
  auto fail = [&](const std::string& what) {
    throw Error(ErrorKind::Internal, fmt::format("alias {} of {}: {} ({} vs {})", alias.qualified_name(),
                                                 target.qualified_name(), what, alias.text, target.text));
  };
  if (alias.arguments.size() > target.arguments.size()) fail("the alias takes more arguments");
  for (size_t i = 0; i < target.arguments.size(); ++i) {
    if (i >= alias.arguments.size()) {
      if (!target.arguments[i].default_text)
        fail("the target's argument " + target.arguments[i].name + " has no default");
    } else if (!(alias.arguments[i].type == target.arguments[i].type)) {
      fail("argument " + std::to_string(i) + " has another type");
    }
  }
  if (alias.returns.size() != target.returns.size()) fail("the returns differ");
  for (size_t i = 0; i < alias.returns.size(); ++i) {
    if (!(alias.returns[i].type == target.returns[i].type)) fail("the returns differ");
  }
}

const KernelRegistrar kRegister([](Registry& r) {
  for (const OpAlias& a : kAliases) {
    OpHandle target = r.get(a.target);
    check_same_signature(r.get(a.alias)->schema(), target->schema());
    r.set_compound_kernel(a.alias, [target](Stack& stack) { call_op_boxed(target, stack); });
  }
});

}  // namespace

std::span<const OpAlias> op_aliases() { return kAliases; }

}  // namespace kiln::decomp
