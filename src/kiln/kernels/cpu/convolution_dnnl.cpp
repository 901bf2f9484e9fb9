// oneDNN convolution for aten::convolution's forward (see the header).
//
// Layouts. The output is contiguous (NCHW) or channels-last (NHWC), as the meta kernel says; the
// input is used as it is when it already has the output's layout, else copied into it. Which
// formats oneDNN runs in was measured on resnet18 and mobilenet_v3_small's layers (batch 1,
// 64x64 images, float32 and bfloat16):
// - NCHW, groups == 1: the plain formats. oneDNN's GEMM convolution reads kiln's weights in
//   place; the blocked kernels need their weights reordered on every call (kiln cannot know they
//   did not change), which costs more than the blocked kernels save: 2.0 ms for resnet18's
//   convolutions against 2.5 ms (0.9 ms of it without the weight reorders).
// - NCHW, grouped and depthwise: the formats oneDNN picks (format_tag::any), with reorders from
//   and to kiln's layouts; the GEMM convolution is up to 18x slower on depthwise layers.
// - NHWC: kiln's layout for the activations (oneDNN's blocked kernels read NHWC), the weights in
//   oneDNN's format.
// Each falls back to the next choice where oneDNN refuses it. A choice whose only implementation
// is oneDNN's reference kernel counts as refused: those are far slower than the im2col kernel.
#include "kiln/kernels/cpu/convolution_dnnl.h"

#include <dnnl.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/support/hash.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag([] {
    const char* env = std::getenv("KILN_CONV_DNNL");
    return !(env && std::string_view(env) == "0");
  }());
  return flag;
}

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Whether the dims of size > 1, visited from the fastest (`order` lists dims fastest first), are
// dense: each stride the product of the sizes visited before it.
bool dense_in_order(const Tensor& t, const std::vector<int64_t>& order) {
  int64_t expected = 1;
  for (int64_t d : order) {
    int64_t size = t.sizes()[d];
    if (size == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected *= size;
  }
  return true;
}

// Dims fastest first: [N, C, spatial...] channels-last is C, then the spatial dims from the last, then N.
std::vector<int64_t> channels_last_order(int64_t ndim) {
  std::vector<int64_t> order{1};
  for (int64_t d = ndim - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  return order;
}

bool is_channels_last(const Tensor& t) { return t.dim() >= 4 && dense_in_order(t, channels_last_order(t.dim())); }

// The plain tag of `ndim` dims in order (abc...), or channels-last (acb, acdb, acdeb).
Tag plain_tag(int64_t ndim) {
  static constexpr Tag kTags[] = {Tag::a, Tag::ab, Tag::abc, Tag::abcd, Tag::abcde, Tag::abcdef};
  return kTags[ndim - 1];
}
Tag channels_last_tag(int64_t ndim) { return ndim == 3 ? Tag::acb : ndim == 4 ? Tag::acdb : Tag::acdeb; }

memory::data_type dnnl_type(DType t) { return t == DType::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32; }

// Everything that decides the primitives: geometry, dtype, layouts. Flattened to integers.
struct Key {
  std::vector<int64_t> v;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t x : k.v) h = hash_combine(h, std::hash<int64_t>{}(x));
    return h;
  }
};

// The oneDNN side of one case: the primitive, the formats it runs in, and the reorders that bring
// kiln's tensors to them (absent where kiln's layout is the primitive's).
struct Plan {
  bool supported = false;
  std::string impl;
  dnnl::primitive prim;
  memory::desc src, weights, dst, bias, user_src, user_weights, user_dst;
  std::optional<dnnl::reorder> src_reorder, weights_reorder, dst_reorder;
  size_t scratch_bytes = 0;
};

// The problem described to oneDNN in kiln's layouts.
struct Problem {
  bool transposed;
  memory::desc src, weights, dst, bias;
  memory::dims strides, dilates, padding_l, padding_r;
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Builds the primitive with src/dst and weights either in kiln's formats or in oneDNN's choice
// (`any`); nullopt where oneDNN has only its reference kernel (or nothing) for it.
std::optional<Plan> try_plan(const Problem& p, bool any_activations, bool any_weights) {
  auto any_of = [](const memory::desc& d) { return memory::desc(d.dims(), d.data_type(), Tag::any); };
  memory::desc src = any_activations ? any_of(p.src) : p.src, dst = any_activations ? any_of(p.dst) : p.dst;
  memory::desc weights = any_weights ? any_of(p.weights) : p.weights;
  dnnl::primitive_attr attr = user_scratchpad();
  auto kind = dnnl::prop_kind::forward_inference;
  Plan plan;
  try {
    if (p.transposed) {
      dnnl::deconvolution_forward::desc d(kind, dnnl::algorithm::deconvolution_direct, src, weights, p.bias, dst,
                                          p.strides, p.dilates, p.padding_l, p.padding_r);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine());
      plan.impl = pd.impl_info_str();
      plan.src = pd.src_desc(), plan.weights = pd.weights_desc(), plan.dst = pd.dst_desc();
      plan.scratch_bytes = pd.scratchpad_desc().get_size();
      plan.prim = dnnl::deconvolution_forward(pd);
    } else {
      dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, src, weights, p.bias, dst, p.strides,
                                        p.dilates, p.padding_l, p.padding_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      plan.impl = pd.impl_info_str();
      plan.src = pd.src_desc(), plan.weights = pd.weights_desc(), plan.dst = pd.dst_desc();
      plan.scratch_bytes = pd.scratchpad_desc().get_size();
      plan.prim = dnnl::convolution_forward(pd);
    }
    if (plan.impl.rfind("ref", 0) == 0) return std::nullopt;
    plan.bias = p.bias, plan.user_src = p.src, plan.user_weights = p.weights, plan.user_dst = p.dst;
    auto reorder = [&](const memory::desc& from, const memory::desc& to) -> std::optional<dnnl::reorder> {
      if (from == to) return std::nullopt;
      dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, attr);
      plan.scratch_bytes = std::max(plan.scratch_bytes, pd.scratchpad_desc().get_size());
      return dnnl::reorder(pd);
    };
    plan.src_reorder = reorder(p.src, plan.src);
    plan.weights_reorder = reorder(p.weights, plan.weights);
    plan.dst_reorder = reorder(plan.dst, p.dst);
    plan.supported = true;
    return plan;
  } catch (const dnnl::error&) {
    return std::nullopt;  // oneDNN does not take this case: the next candidate, or im2col
  }
}

// Which formats to offer oneDNN first, as the comment at the top explains: kiln's or oneDNN's
// choice (`any`) for the activations and for the weights.
struct Candidate {
  bool any_activations, any_weights;
};
std::vector<Candidate> candidates(bool channels_last, int64_t groups) {
  if (channels_last) return {{false, true}, {true, true}};
  if (groups == 1) return {{false, false}, {true, true}, {false, true}};
  return {{true, true}, {false, true}};
}

// The first candidate oneDNN takes; an unsupported Plan when it takes none.
Plan make_plan(const Problem& p, const std::vector<Candidate>& order) {
  for (Candidate c : order) {
    if (std::optional<Plan> plan = try_plan(p, c.any_activations, c.any_weights)) return std::move(*plan);
  }
  return Plan{};
}

// The tensors one call runs on, in the layouts the plan was made for.
struct Operands {
  Tensor x, w;
  std::optional<Tensor> b;
  bool channels_last;
};

// A dense copy of `t` in channels-last or contiguous layout.
Tensor dense_copy(const Tensor& t, bool channels_last) {
  Tensor c = channels_last ? Tensor(empty_strided_tensor(t.sizes(), channels_last_strides(t.sizes()), t.dtype(), kCPU))
                           : Tensor(empty_tensor(t.sizes(), t.dtype(), kCPU));
  copy_into(c, t);
  return c;
}

std::optional<Operands> operands(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                 const meta::ConvGeometry& g, const Tensor& out) {
  DType dt = input.dtype();
  if (dt != DType::Float32 && dt != DType::BFloat16) return std::nullopt;
  if (!enabled_flag().load(std::memory_order_relaxed)) return std::nullopt;
  if (out.numel() == 0 || input.numel() == 0 || weight.numel() == 0 || g.in_channels == 0) return std::nullopt;
  Operands o;
  // A tensor can be both (size-1 dims): contiguous wins, so [N, C, 1, 1] inputs need no copy.
  o.channels_last = !out.is_contiguous() && is_channels_last(out);
  if (!o.channels_last && !out.is_contiguous()) return std::nullopt;
  bool input_ok = o.channels_last ? is_channels_last(input) : input.is_contiguous();
  o.x = input_ok ? input : dense_copy(input, o.channels_last);
  o.w = weight.is_non_overlapping_and_dense() ? weight : dense_copy(weight, false);
  // oneDNN's bias is float32 for both dtypes (the sum is accumulated in float32 either way).
  if (bias) {
    o.b = to_dtype(*bias, DType::Float32);
    if (!o.b->is_contiguous()) o.b = dense_copy(*o.b, false);
  }
  return o;
}

// The weights as oneDNN's dims {[G,] OC/G, IC/G, kernel...} over kiln's memory: [OC, IC/G, k...]
// for a convolution, [IC, OC/G, k...] for a transposed one.
memory::desc weights_desc(const Tensor& w, const meta::ConvGeometry& g) {
  auto t = dnnl_type(w.dtype());
  int64_t k = w.dim() - 2, groups = g.groups;
  int64_t out_g = g.out_channels / groups, in_g = g.in_channels / groups;
  memory::dims dims, strides;
  if (groups > 1) dims.push_back(groups);
  dims.push_back(out_g);
  dims.push_back(in_g);
  for (int64_t d = 0; d < k; ++d) dims.push_back(w.sizes()[d + 2]);
  if (!g.transposed && w.is_contiguous()) return memory::desc(dims, t, plain_tag(static_cast<int64_t>(dims.size())));
  // Strides of size-1 dims address nothing; give them the whole span, as an outermost dim's.
  int64_t span = 1;
  for (int64_t d = 0; d < w.dim(); ++d) span += (w.sizes()[d] - 1) * w.strides()[d];
  auto stride = [&](int64_t d) { return w.sizes()[d] == 1 ? span : w.strides()[d]; };
  int64_t s_out = g.transposed ? stride(1) : stride(0), s_in = g.transposed ? stride(0) : stride(1);
  if (groups > 1) strides.push_back(g.transposed ? in_g * stride(0) : out_g * stride(0));
  strides.push_back(s_out);
  strides.push_back(s_in);
  for (int64_t d = 0; d < k; ++d) strides.push_back(stride(d + 2));
  return memory::desc(dims, t, strides);
}

Problem problem_of(const Operands& o, const meta::ConvGeometry& g, const Tensor& out) {
  Problem p;
  p.transposed = g.transposed;
  auto t = dnnl_type(out.dtype());
  int64_t nd = out.dim();
  Tag tag = o.channels_last ? channels_last_tag(nd) : plain_tag(nd);
  p.src = memory::desc(o.x.sizes().vec(), t, tag);
  p.dst = memory::desc(out.sizes().vec(), t, tag);
  p.weights = weights_desc(o.w, g);
  if (o.b) p.bias = memory::desc({g.out_channels}, memory::data_type::f32, Tag::a);
  for (size_t d = 0; d < g.kernel.size(); ++d) {
    p.strides.push_back(g.stride[d]);
    p.dilates.push_back(g.dilation[d] - 1);
    p.padding_l.push_back(g.padding[d]);
    // oneDNN checks (in + pad_l + pad_r - span) / stride + 1 == out with floor division, which the
    // symmetric padding meets; a transposed one's right padding gives up the output_padding.
    p.padding_r.push_back(g.transposed ? g.padding[d] - g.output_padding[d] : g.padding[d]);
  }
  return p;
}

Key key_of(const Operands& o, const meta::ConvGeometry& g, const Tensor& out) {
  Key k;
  auto add = [&](const std::vector<int64_t>& v) {
    k.v.push_back(static_cast<int64_t>(v.size()));
    k.v.insert(k.v.end(), v.begin(), v.end());
  };
  k.v = {g.transposed,
         static_cast<int64_t>(out.dtype()),
         o.channels_last,
         o.b.has_value(),
         g.batch,
         g.in_channels,
         g.out_channels,
         g.groups,
         o.w.is_contiguous()};
  add(g.in), add(g.kernel), add(g.stride), add(g.padding), add(g.dilation), add(g.output_padding);
  add(o.w.strides().vec());
  return k;
}

std::shared_ptr<const Plan> plan_for(const Operands& o, const meta::ConvGeometry& g, const Tensor& out) {
  static std::mutex mu;
  static std::unordered_map<Key, std::shared_ptr<const Plan>, KeyHash> cache;
  Key key = key_of(o, g, out);
  std::lock_guard lock(mu);  // guards the cache; primitives run unlocked
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto plan = std::make_shared<const Plan>(make_plan(problem_of(o, g, out), candidates(o.channels_last, g.groups)));
  cache.emplace(std::move(key), plan);
  return plan;
}

Tensor bytes(size_t n) { return empty_tensor({static_cast<int64_t>(n)}, DType::UInt8, kCPU); }

void execute(const Plan& plan, const Operands& o, const Tensor& out) {
  const dnnl::engine& e = engine();
  dnnl::stream stream(e);
  Tensor scratch = bytes(plan.scratch_bytes);
  std::unordered_map<int, dnnl::memory> args;
  if (plan.scratch_bytes > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(memory::desc({static_cast<int64_t>(plan.scratch_bytes)}, memory::data_type::u8, Tag::a), e,
                        scratch.data_ptr()));
  }
  // A kiln tensor as oneDNN memory, or (when the plan has a reorder for it) a buffer in the
  // primitive's format with the tensor reordered into it.
  std::vector<Tensor> buffers;
  auto in_format = [&](const Tensor& t, const memory::desc& user, const memory::desc& want,
                       const std::optional<dnnl::reorder>& reorder) {
    memory m(user, e, t.data_ptr());
    if (!reorder) return m;
    buffers.push_back(bytes(want.get_size()));
    memory r(want, e, buffers.back().data_ptr());
    std::unordered_map<int, memory> rargs{{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, r}};
    if (plan.scratch_bytes > 0) rargs.emplace(DNNL_ARG_SCRATCHPAD, args.at(DNNL_ARG_SCRATCHPAD));
    reorder->execute(stream, rargs);
    return r;
  };
  args.emplace(DNNL_ARG_SRC, in_format(o.x, plan.user_src, plan.src, plan.src_reorder));
  args.emplace(DNNL_ARG_WEIGHTS, in_format(o.w, plan.user_weights, plan.weights, plan.weights_reorder));
  if (o.b) args.emplace(DNNL_ARG_BIAS, memory(plan.bias, e, o.b->data_ptr()));
  memory user_dst(plan.user_dst, e, out.data_ptr());
  memory dst = user_dst;
  if (plan.dst_reorder) {
    buffers.push_back(bytes(plan.dst.get_size()));
    dst = memory(plan.dst, e, buffers.back().data_ptr());
  }
  args.emplace(DNNL_ARG_DST, dst);
  plan.prim.execute(stream, args);
  if (plan.dst_reorder) {
    std::unordered_map<int, memory> rargs{{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, user_dst}};
    if (plan.scratch_bytes > 0) rargs.emplace(DNNL_ARG_SCRATCHPAD, args.at(DNNL_ARG_SCRATCHPAD));
    plan.dst_reorder->execute(stream, rargs);
  }
  stream.wait();
}

}  // namespace

bool dnnl_convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      const meta::ConvGeometry& g, const Tensor& out) {
  std::optional<Operands> o = operands(input, weight, bias, g, out);
  if (!o) return false;
  try {
    std::shared_ptr<const Plan> plan = plan_for(*o, g, out);
    if (!plan->supported) return false;
    execute(*plan, *o, out);
  } catch (const dnnl::error& e) {
    KILN_FAIL(ErrorKind::Internal, "convolution: oneDNN failed on input {} and weight {}: {}", input.describe(),
              weight.describe(), e.what());
  }
  return true;
}

std::string dnnl_convolution_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                  const meta::ConvGeometry& g, const Tensor& out) {
  std::optional<Operands> o = operands(input, weight, bias, g, out);
  if (!o) return {};
  try {
    std::shared_ptr<const Plan> plan = plan_for(*o, g, out);
    return plan->supported ? plan->impl : std::string();
  } catch (const dnnl::error&) {
    return {};
  }
}

bool set_dnnl_convolution_enabled(bool enabled) { return enabled_flag().exchange(enabled); }

}  // namespace kiln::cpu
