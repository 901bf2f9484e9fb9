#include "kiln/core/type_promotion.h"

#include <algorithm>
#include <atomic>

#include "kiln/support/error.h"

namespace kiln {
namespace {

std::atomic<DType> default_float{DType::Float32};

// bool < integers < floats < complex, as PyTorch ranks the categories.
int category(DType t) { return t == DType::Bool ? 0 : is_complex(t) ? 3 : is_floating(t) ? 2 : 1; }

int float_rank(DType t) {
  switch (t) {
    case DType::Float16:
    case DType::BFloat16: return 0;
    case DType::Float32:
    case DType::ComplexFloat: return 1;
    default: return 2;
  }
}

std::optional<DType> promote_optional(std::optional<DType> a, DType b) { return a ? promote_types(*a, b) : b; }

// PyTorch's combine_categories: `higher` comes from operands of higher priority.
std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_complex(*higher)) return higher;
  // A complex operand of lower priority takes the precision of a floating higher one (float32 with a
  // complex128 0-d tensor is complex64); kiln has no complex32 for the 16-bit floats.
  if (is_complex(*lower)) {
    if (!is_floating(*higher)) return lower;
    std::optional<DType> c = complex_of(*higher);
    KILN_CHECK_TYPE(c.has_value(),
                    "type promotion: no complex dtype with {} parts (PyTorch's complex32 is not supported)",
                    dtype_name(*higher));
    return c;
  }
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  int ca = category(a), cb = category(b);
  if (ca == 3 || cb == 3) {
    // Complex with anything: complex of the wider precision (complex64 + float64 = complex128).
    int rank = std::max(ca >= 2 ? float_rank(a) : 0, cb >= 2 ? float_rank(b) : 0);
    return rank >= 2 ? DType::ComplexDouble : DType::ComplexFloat;
  }
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if (is_reduced_float(a) && is_reduced_float(b)) return DType::Float32;  // float16 + bfloat16
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  // Both integers. uint8 with a signed type needs a signed type wider than 8 bits.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return element_size(a) >= element_size(b) ? a : b;
}

void ResultType::add_wrapped(DType t) {
  wrapped_ = promote_optional(wrapped_, is_floating(t) ? default_float_dtype() : t);
}

DType default_float_dtype() { return default_float.load(std::memory_order_relaxed); }

void set_default_float_dtype(DType t) {
  KILN_CHECK_TYPE(is_floating(t),
                  "set_default_dtype: only floating-point types are supported as the default type, got {}",
                  dtype_name(t));
  default_float.store(t, std::memory_order_relaxed);
}

ResultType& ResultType::add(const TensorBase& t) {
  if (t.is_wrapped_number()) {
    add_wrapped(t.dtype());
  } else if (t.dim() == 0) {
    zero_dim_ = promote_optional(zero_dim_, t.dtype());
  } else {
    dim_ = promote_optional(dim_, t.dtype());
  }
  return *this;
}

ResultType& ResultType::add(const Scalar& s) {
  add_wrapped(s.natural_dtype());
  return *this;
}

DType ResultType::result() const {
  auto r = combine_categories(dim_, combine_categories(zero_dim_, wrapped_));
  KILN_ASSERT(r.has_value());
  return *r;
}

DType result_type(const TensorBase& a, const TensorBase& b) { return ResultType().add(a).add(b).result(); }
DType result_type(const TensorBase& a, const Scalar& b) { return ResultType().add(a).add(b).result(); }
DType result_type(std::span<const TensorBase> tensors) {
  ResultType r;
  for (const auto& t : tensors) r.add(t);
  return r.result();
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

}  // namespace kiln
