#include "kiln/ops/op_info.h"

#include <vector>

#include "kiln/support/error.h"

namespace kiln {
namespace {
constexpr std::string_view kTagNames[kNumOpTags] = {"core",
                                                    "prim",
                                                    "pointwise",
                                                    "reduction",
                                                    "view",
                                                    "inplace",
                                                    "nondeterministic_seeded",
                                                    "dynamic_output_shape",
                                                    "data_dependent_output",
                                                    "metadata",
                                                    "complex"};
}

std::string_view op_tag_name(OpTag t) { return kTagNames[static_cast<int>(t)]; }

std::optional<OpTag> parse_op_tag(std::string_view name) {
  for (int i = 0; i < kNumOpTags; ++i) {
    if (kTagNames[i] == name) return static_cast<OpTag>(i);
  }
  return std::nullopt;
}

std::string TagSet::to_string() const {
  std::string out;
  for (int i = 0; i < kNumOpTags; ++i) {
    if (!has(static_cast<OpTag>(i))) continue;
    if (!out.empty()) out += ' ';
    out += kTagNames[i];
  }
  return out;
}

TagSet TagSet::parse(std::string_view text) {
  TagSet set;
  while (!text.empty()) {
    size_t space = text.find(' ');
    std::string_view word = text.substr(0, space);
    if (!word.empty()) {
      auto tag = parse_op_tag(word);
      KILN_CHECK(tag.has_value(), "unknown op tag '{}'", word);
      set.add(*tag);
    }
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
  return set;
}

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Leaf: return "leaf";
    case OpKind::Compound: return "compound";
    case OpKind::Declared: return "declared";
  }
  return "?";
}
std::string_view provenance_name(Provenance p) { return p == Provenance::Native ? "native" : "custom"; }
std::string_view pattern_kind_name(PatternKind p) {
  switch (p) {
    case PatternKind::Elementwise: return "elementwise";
    case PatternKind::Broadcast: return "broadcast";
    case PatternKind::Injective: return "injective";
    case PatternKind::Reduction: return "reduction";
    case PatternKind::Opaque: return "opaque";
  }
  return "?";
}

}  // namespace kiln
