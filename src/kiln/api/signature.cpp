#include "kiln/api/signature.h"

#include <algorithm>

#include "kiln/core/generator.h"
#include "kiln/ops/api.h"

namespace kiln {

ModelSignature::ModelSignature(std::vector<import::InputSpec> inputs, std::vector<import::OutputSpec> outputs,
                               std::vector<graph::TensorMeta> metas, std::vector<Tensor> bound, std::string source)
    : inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      metas_(std::move(metas)),
      bound_(std::move(bound)),
      source_(std::move(source)) {
  KILN_ASSERT(inputs_.size() == metas_.size() && inputs_.size() == bound_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].kind == import::InputKind::UserInput) {
      user_.push_back(i);
      continue;
    }
    const Tensor& t = bound_[i];
    const graph::TensorMeta& m = metas_[i];
    KILN_CHECK(t.defined(), "{}: no tensor stored for '{}' (input '{}' of the graph)", source_, inputs_[i].target,
               inputs_[i].name);
    KILN_CHECK(t.dtype() == m.dtype && t.sizes().shape() == m.sizes,
               "{}: the stored '{}' is {}[{}] but the graph's input '{}' is {}[{}]", source_, inputs_[i].target,
               t.dtype(), fmt::join(t.sizes().shape(), ", "), inputs_[i].name, m.dtype, fmt::join(m.sizes, ", "));
  }
}

std::vector<std::string> ModelSignature::input_names() const {
  std::vector<std::string> names;
  for (size_t i : user_) names.push_back(inputs_[i].target);
  return names;
}

std::vector<graph::TensorMeta> ModelSignature::input_metas() const {
  std::vector<graph::TensorMeta> metas;
  for (size_t i : user_) metas.push_back(metas_[i]);
  return metas;
}

size_t ModelSignature::num_outputs() const {
  return static_cast<size_t>(std::count_if(outputs_.begin(), outputs_.end(), [](const import::OutputSpec& o) {
    return o.kind == import::OutputKind::UserOutput || o.kind == import::OutputKind::LossOutput;
  }));
}

namespace {

// `t` laid out as the export's input was (compiled code is specialized to those strides): itself
// when its strides already agree (size-1 dims aside), else a copy in that layout.
Tensor with_strides(const Tensor& t, const Shape& strides) {
  bool same = true;
  for (size_t d = 0; d < strides.size(); ++d) same = same && (t.sizes()[d] == 1 || t.strides()[d] == strides[d]);
  if (same || t.numel() == 0) return t;
  Tensor copy(empty_strided_tensor(t.sizes(), strides, t.dtype(), t.device()));
  copy.copy_(t);
  return copy;
}

}  // namespace

std::vector<std::string> ModelSignature::output_names() const {
  std::vector<std::string> names;
  for (const auto& o : outputs_) {
    if (o.kind == import::OutputKind::UserOutput || o.kind == import::OutputKind::LossOutput) names.push_back(o.name);
  }
  return names;
}

std::vector<Tensor> ModelSignature::graph_inputs(const std::vector<Tensor>& user_inputs) const {
  KILN_CHECK(user_inputs.size() == user_.size(), "{}: the model takes {} inputs ({}), got {}", source_, user_.size(),
             fmt::join(input_names(), ", "), user_inputs.size());
  std::vector<Tensor> all = bound_;
  for (size_t k = 0; k < user_inputs.size(); ++k) {
    size_t i = user_[k];
    const Tensor& t = user_inputs[k];
    const graph::TensorMeta& m = metas_[i];
    KILN_CHECK(t.defined(), "{}: input '{}' is undefined", source_, inputs_[i].target);
    bool device_ok = t.device() == m.device || t.device() == kMeta;  // meta: a trace's stand-in
    KILN_CHECK(t.dtype() == m.dtype && t.sizes().shape() == m.sizes && device_ok,
               "{}: input '{}' is {}[{}] on {}; the model was exported for {}[{}] on {} (kiln loads static shapes)",
               source_, inputs_[i].target, t.dtype(), fmt::join(t.sizes().shape(), ", "), t.device(), m.dtype,
               fmt::join(m.sizes, ", "), m.device);
    all[i] = t.device() == kMeta ? t : with_strides(t, m.strides);
  }
  return all;
}

std::vector<Tensor> ModelSignature::user_outputs(const std::vector<Tensor>& user_inputs,
                                                 const std::vector<Tensor>& outputs) const {
  KILN_ASSERT(outputs.size() == outputs_.size());
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const import::OutputSpec& spec = outputs_[i];
    if (spec.kind == import::OutputKind::UserOutput || spec.kind == import::OutputKind::LossOutput) {
      results.push_back(outputs[i]);
      continue;
    }
    // A mutation: the buffer (a bound input) or the user input of that name takes the new value.
    bool buffer = spec.kind == import::OutputKind::BufferMutation;
    for (size_t k = 0; k < inputs_.size(); ++k) {
      bool user = inputs_[k].kind == import::InputKind::UserInput;
      if (inputs_[k].target != spec.target || user == buffer) continue;
      Tensor target =
          buffer ? bound_[k]
                 : user_inputs.at(static_cast<size_t>(std::find(user_.begin(), user_.end(), k) - user_.begin()));
      target.copy_(outputs[i]);
    }
  }
  return results;
}

std::vector<Tensor> ModelSignature::meta_inputs() const {
  std::vector<Tensor> inputs;
  for (const auto& m : input_metas()) inputs.emplace_back(empty_strided_tensor(m.sizes, m.strides, m.dtype, kMeta));
  return inputs;
}

std::vector<Tensor> ModelSignature::random_inputs(uint64_t seed) const {
  manual_seed(seed);
  std::vector<Tensor> inputs;
  for (const auto& m : input_metas()) {
    Tensor t;
    if (is_floating(m.dtype) || is_complex(m.dtype)) {
      t = randn(m.sizes, TensorOptions(DType::Float32)).to(m.dtype);
    } else if (m.dtype == DType::Bool) {
      t = rand(m.sizes, TensorOptions(DType::Float32)).gt(0.5);
    } else {
      // Small non-negative integers: valid indices for embeddings and gathers of 8 rows or more.
      t = floor(rand(m.sizes, TensorOptions(DType::Float32)).mul(8.0)).to(m.dtype);
    }
    inputs.push_back(t);
  }
  return inputs;
}

}  // namespace kiln
