// PyTorch's alias ops (divide for div, arccos for acos, ...), each run as its target.
#pragma once

#include <span>

namespace kiln::decomp {

struct OpAlias {
  const char* alias;   // "aten::divide.Tensor"
  const char* target;  // "aten::div.Tensor"
};

// Every alias kiln registers, with its target.
std::span<const OpAlias> op_aliases();

}  // namespace kiln::decomp
