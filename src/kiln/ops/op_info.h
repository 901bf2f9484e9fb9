// What the registry knows about an op besides its schema: tags (PyTorch's, plus kiln's `prim`,
// `view`, `reduction`), kind (leaf or compound), provenance, and the pattern kind that fusion passes
// query instead of switching on op names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

enum class OpTag : uint8_t {
  Core,                    // in the Core ATen IR
  Prim,                    // a kiln prim (the Prims IR)
  Pointwise,               // elementwise, with broadcasting and type promotion
  Reduction,               // reduces dimensions
  View,                    // result aliases the input (derived from the schema's alias annotations)
  Inplace,                 // writes its first argument (derived from the schema)
  NondeterministicSeeded,  // random, reproducible from the generator's seed
  DynamicOutputShape,      // output size depends on input values
  DataDependentOutput,     // result read from tensor data (a host scalar)
  Metadata,                // result read from tensor metadata only (sym_size, ...): a constant in a trace
  Complex,                 // accepts complex tensors (views, copies, FFT); the dispatcher refuses them elsewhere
};
inline constexpr int kNumOpTags = 11;

std::string_view op_tag_name(OpTag t);
std::optional<OpTag> parse_op_tag(std::string_view name);

class TagSet {
 public:
  constexpr TagSet() = default;
  bool has(OpTag t) const { return bits_ & (1u << static_cast<unsigned>(t)); }
  void add(OpTag t) { bits_ |= 1u << static_cast<unsigned>(t); }
  bool empty() const { return bits_ == 0; }
  // Space-separated tag names in declaration order: "core pointwise".
  std::string to_string() const;
  // Parses space-separated names; throws kiln::Error naming an unknown tag.
  static TagSet parse(std::string_view text);

 private:
  uint32_t bits_ = 0;
};

// Leaf ops have a kernel per device; compound ops are defined by a decomposition into other ops;
// declared ops are PyTorch's ops kiln knows by schema but does not implement (the op table's
// generated part, ops/aten_library/), each with its reason. A declared in-place or out= op whose
// functional op kiln implements still runs, through the generic kernel of kernels/inplace.cpp.
enum class OpKind : uint8_t { Leaf, Compound, Declared };
// Native ops come with kiln; custom ops are registered by users.
enum class Provenance : uint8_t { Native, Custom };

// How an op's output elements depend on its inputs (TVM's classification), for fusion decisions.
enum class PatternKind : uint8_t {
  Elementwise,  // out[i] = f(in[i]) on same-shaped operands
  Broadcast,    // elementwise after broadcasting operands
  Injective,    // each output element reads one input element (views, cat, copies)
  Reduction,    // combines many input elements into one output element
  Opaque,       // anything else (GEMM, sort, softmax as a whole)
};

std::string_view op_kind_name(OpKind k);
std::string_view provenance_name(Provenance p);
std::string_view pattern_kind_name(PatternKind p);

}  // namespace kiln
