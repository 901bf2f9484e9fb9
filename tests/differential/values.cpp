#include "values.h"

#include <cstring>

#include <fmt/format.h>

namespace kiln::difftest {

Values read_values(const Tensor& t) {
  Values v;
  v.integral = !is_floating(t.dtype());
  if (t.numel() == 0) return v;
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  const char* base = static_cast<const char*>(t.data_ptr());
  auto esize = static_cast<int64_t>(t.element_size());
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    const char* p = base + off * esize;
    visit_dtype(t.dtype(), [&]<class T>() {
      T x;
      std::memcpy(&x, p, sizeof(T));
      if constexpr (std::is_integral_v<T>) {
        v.i.push_back(static_cast<int64_t>(x));
      } else {
        v.f.push_back(static_cast<double>(static_cast<opmath_t<T>>(x)));
      }
    });
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return v;
}

std::optional<Tensor> probe_value(const Program& p, const std::string& name, const std::vector<Tensor>& inputs,
                                  Precision precision) {
  Program probe = p;
  probe.outputs = {name};
  // Only the calls `name` needs: a later call that raises (an integer division by zero in another
  // merged program) must not hide the value.
  probe = live_calls(std::move(probe));
  try {
    return run_program(probe, inputs, precision).at(0);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace kiln::difftest
