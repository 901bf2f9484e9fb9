// Value: one boxed argument or result (PyTorch's IValue). The dispatcher, custom ops and every
// generic consumer (graph interpreter, tracer) pass operands as a Stack of Values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/core/memory_format.h"
#include "kiln/ops/schema.h"
#include "kiln/ops/tensor.h"

namespace kiln {

class Value {
 public:
  enum class Tag : uint8_t {
    None,
    Tensor,
    Int,
    Double,
    Bool,
    String,
    IntList,
    DoubleList,
    BoolList,
    TensorList,
    OptionalTensorList,
    DType,
    Device,
    Layout,
    MemoryFormat
  };

  Value() = default;
  Value(std::nullopt_t) {}                                           // NOLINT
  Value(Tensor t) : v_(std::move(t)) {}                              // NOLINT
  Value(int64_t i) : v_(i) {}                                        // NOLINT
  Value(int i) : v_(int64_t{i}) {}                                   // NOLINT
  Value(double d) : v_(d) {}                                         // NOLINT
  Value(bool b) : v_(b) {}                                           // NOLINT
  Value(const Scalar& s);                                            // NOLINT: Int, Double or Bool by the scalar's kind
  Value(std::string s) : v_(std::move(s)) {}                         // NOLINT
  Value(const char* s) : v_(std::string(s)) {}                       // NOLINT
  Value(std::vector<int64_t> l) : v_(std::move(l)) {}                // NOLINT
  Value(std::vector<double> l) : v_(std::move(l)) {}                 // NOLINT
  Value(std::vector<bool> l) : v_(std::move(l)) {}                   // NOLINT
  Value(std::vector<Tensor> l) : v_(std::move(l)) {}                 // NOLINT
  Value(std::vector<std::optional<Tensor>> l) : v_(std::move(l)) {}  // NOLINT
  Value(DType t) : v_(t) {}                                          // NOLINT
  Value(Device d) : v_(d) {}                                         // NOLINT
  Value(Layout l) : v_(l) {}                                         // NOLINT
  Value(MemoryFormat m) : v_(m) {}                                   // NOLINT

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  bool is_none() const { return tag() == Tag::None; }
  bool is_tensor() const { return tag() == Tag::Tensor; }

  // Accessors throw kiln::Error of kind Type when the Value holds something else.
  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  int64_t to_int() const { return get<int64_t>("int"); }
  double to_double() const;  // Double, or Int widened
  bool to_bool() const { return get<bool>("bool"); }
  Scalar to_scalar() const;  // Int, Double or Bool
  const std::string& to_string_value() const { return get<std::string>("str"); }
  const std::vector<int64_t>& to_int_list() const { return get<std::vector<int64_t>>("int[]"); }
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  const std::vector<bool>& to_bool_list() const { return get<std::vector<bool>>("bool[]"); }
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  DType to_dtype() const { return get<DType>("ScalarType"); }
  Device to_device() const { return get<Device>("Device"); }
  Layout to_layout() const { return get<Layout>("Layout"); }
  MemoryFormat to_memory_format() const { return get<MemoryFormat>("MemoryFormat"); }

  // The name of the kind held, as a schema would write it ("Tensor", "int[]", "None", ...).
  std::string_view type_name() const;
  // A short rendering for messages and logs: "float32[2, 3]", "[0, 1]", "'none'", "2.5".
  std::string repr() const;

 private:
  template <class T>
  const T& get(std::string_view want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    KILN_FAIL(ErrorKind::Type, "expected a boxed {}, got {}", want, type_name());
  }

  std::variant<std::monostate, Tensor, int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<bool>, std::vector<Tensor>, std::vector<std::optional<Tensor>>, DType, Device, Layout,
               MemoryFormat>
      v_;
};

using Stack = std::vector<Value>;

// True when `v` can be passed for an argument of type `t` (without conversion).
bool value_matches(const Value& v, const Type& t);
// Converts a value to the canonical form of `t` where PyTorch converts implicitly (an int for a
// float, an int for an int[N], a Tensor[] for a Tensor?[]); returns false when it cannot.
bool coerce_value(Value& v, const Type& t);
// A number where a tensor goes (mul.Tensor(x, 0.5), as decompositions and FX graphs write it)
// becomes a 0-d CPU tensor flagged as a wrapped number, as PyTorch's argument parser makes it, so
// type promotion still treats it as the number it was; false (v unchanged) for anything else.
// PyTorch allows it for a few ops only; the dispatcher decides which (normalize_arguments).
bool number_as_tensor(Value& v, const Type& t);
// Parses a literal of type `t` as schemas write defaults ("1", "[0,1]", "'none'", "None", "long",
// "contiguous_format"); repr() of a non-tensor Value is always accepted back.
Value parse_default(const std::string& text, const Type& t);

}  // namespace kiln
