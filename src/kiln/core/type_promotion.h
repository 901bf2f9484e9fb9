// PyTorch's type promotion. promote_types is the pairwise table; result_type applies the category
// rule: dimensioned tensors outrank zero-dim tensors, which outrank wrapped numbers (Scalars), and a
// lower-ranked operand changes the result only when it is of a higher category (bool < integer <
// floating), e.g. int32 tensor + 2.5 -> float32, float16 tensor + 2.5 -> float16.
#pragma once

#include <optional>
#include <span>

#include "kiln/core/scalar.h"
#include "kiln/core/tensor_base.h"

namespace kiln {

// The dtype floats get where none is given — factories without a dtype, Python float scalars
// against integer tensors, float ops of integer inputs: float32 unless set otherwise, for the
// whole process (torch.get_default_dtype / torch.set_default_dtype). Only floating dtypes may be
// set (anything else is a kiln::Error). Compiled functions recompile when it changes.
DType default_float_dtype();
void set_default_float_dtype(DType t);

// Sets the default float dtype for a scope and restores the previous one.
class DefaultFloatDType {
 public:
  explicit DefaultFloatDType(DType t) : previous_(default_float_dtype()) { set_default_float_dtype(t); }
  ~DefaultFloatDType() { set_default_float_dtype(previous_); }
  DefaultFloatDType(const DefaultFloatDType&) = delete;
  DefaultFloatDType& operator=(const DefaultFloatDType&) = delete;

 private:
  DType previous_;
};

DType promote_types(DType a, DType b);

// Accumulates operands in PyTorch's three priority classes, then gives the result dtype.
class ResultType {
 public:
  ResultType& add(const TensorBase& t);
  ResultType& add(const Scalar& s);
  // Requires at least one operand.
  DType result() const;

 private:
  void add_wrapped(DType t);
  std::optional<DType> dim_;
  std::optional<DType> zero_dim_;
  std::optional<DType> wrapped_;
};

DType result_type(const TensorBase& a, const TensorBase& b);
DType result_type(const TensorBase& a, const Scalar& b);
DType result_type(std::span<const TensorBase> tensors);

// True when a value of dtype `from` may be written to dtype `to` by an in-place op: no category
// is lost (float into integer, integer into bool).
bool can_cast(DType from, DType to);

// The dtype an op that "always computes in floating point" produces: integers and bool become
// the default float; floats stay.
inline DType to_float_dtype(DType t) { return is_floating(t) ? t : default_float_dtype(); }

}  // namespace kiln
