// Tensor::to_string: PyTorch's repr — tensor([[1.0000, 2.0000], ...]) with summarization of large
// tensors and a dtype suffix when the dtype is not the default for its kind. Complex elements print
// as PyTorch writes them, real and imaginary part with the imaginary sign: 1.0000-0.5000j.
#include <cmath>
#include <complex>
#include <string>

#include "kiln/ops/api.h"

namespace kiln {
namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements; larger tensors print edge items only
constexpr int64_t kEdgeItems = 3;

struct Printer {
  const Tensor& t;
  bool summarize;
  std::string out;

  static std::string real(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    return fmt::format("{:.4f}", d);
  }

  std::string element(const char* p) const {
    return visit_dtype_with_complex(t.dtype(), [&]<class T>() -> std::string {
      T v;
      std::memcpy(&v, p, sizeof(T));
      if constexpr (std::is_same_v<T, bool>) {
        return v ? "True" : "False";
      } else if constexpr (std::is_integral_v<T>) {
        return std::to_string(static_cast<int64_t>(v));
      } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
        double im = static_cast<double>(v.imag());
        // The sign belongs to the imaginary part: "-0.5000j", "+nanj" (as Python prints complex).
        std::string imag = real(std::fabs(im));
        return fmt::format("{}{}{}j", real(static_cast<double>(v.real())), std::signbit(im) ? '-' : '+', imag);
      } else {
        double d = static_cast<double>(static_cast<float>(v));
        if constexpr (std::is_same_v<T, double>) d = static_cast<double>(v);
        return real(d);
      }
    });
  }

  void print(const char* base, int64_t dim, int indent) {
    if (dim == t.dim()) {
      out += element(base);
      return;
    }
    int64_t n = t.sizes()[dim];
    int64_t step = t.strides()[dim] * static_cast<int64_t>(t.element_size());
    out += '[';
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += dim + 1 == t.dim() ? "..., " : fmt::format("...,\n{:{}}", "", indent + 1);
        i = n - kEdgeItems;
      }
      print(base + i * step, dim + 1, indent + 1);
      if (i + 1 < n) out += dim + 1 == t.dim() ? ", " : fmt::format(",\n{:{}}", "", indent + 1);
    }
    out += ']';
  }
};

bool default_dtype_for_kind(DType d) {
  return d == DType::Float32 || d == DType::Int64 || d == DType::Bool || d == DType::ComplexFloat;
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::string suffix;
  if (!default_dtype_for_kind(dtype())) suffix += fmt::format(", dtype=torch.{}", dtype());
  if (device().is_meta()) {
    return fmt::format("tensor(..., device='meta', size=({})){}", fmt::join(sizes(), ", "), suffix);
  }
  if (!device().is_cpu()) suffix += fmt::format(", device='{}'", device());
  Printer p{*this, numel() > kSummarizeAbove, {}};
  if (numel() == 0) {
    p.out = "[]";
    if (dim() != 1) suffix += fmt::format(", size=({})", fmt::join(sizes(), ", "));
  } else {
    p.print(static_cast<const char*>(data_ptr()), 0, 7);
  }
  return fmt::format("tensor({}{})", p.out, suffix);
}

}  // namespace kiln
