#include "inputs.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "kiln/support/error.h"
#include "rng.h"

namespace kiln::difftest {
namespace {

// Largest finite value, smallest normal and smallest subnormal of a floating dtype.
struct FloatLimits {
  double max, min_normal, denorm_min;
};
FloatLimits float_limits(DType t) {
  switch (t) {
    case DType::Float16: return {65504.0, 0x1p-14, 0x1p-24};
    case DType::BFloat16: return {0x1.fep127, 0x1p-126, 0x1p-133};
    case DType::Float32: return {std::numeric_limits<float>::max(), 0x1p-126, 0x1p-149};
    default: return {std::numeric_limits<double>::max(), 0x1p-1022, 0x1p-1074};
  }
}

// One storage element, either as a double (floats) or as an exact int64 (integers, bool).
struct Element {
  bool is_int;
  double f;
  int64_t i;
};

Element float_element(const std::string& fill, DType t, Rng& r) {
  double u = r.uniform();
  if (fill == "pos") return {false, 0.25 + 3.75 * u, 0};
  if (fill == "nonzero") {
    double v = 0.25 + 2.75 * u;
    return {false, (r.next() & 1) ? v : -v, 0};
  }
  if (fill == "small") return {false, (u - 0.5) * 2e-3, 0};
  if (fill == "special" && r.uniform() < 0.6) {
    FloatLimits l = float_limits(t);
    const double inf = std::numeric_limits<double>::infinity();
    const double specials[] = {
        0.0,          -0.0,  std::nan(""), inf, -inf, 1.0, -1.0, l.denorm_min, -l.denorm_min, l.denorm_min * 37,
        l.min_normal, l.max, -l.max,       0.5, -2.5, 2.5};
    return {false, specials[r.next() % std::size(specials)], 0};
  }
  return {false, -3.0 + 6.0 * u, 0};
}

Element int_element(const std::string& fill, DType t, Rng& r) {
  if (t == DType::Bool) return {true, 0, fill == "pos" || fill == "nonzero" ? 1 : static_cast<int64_t>(r.next() & 1)};
  int64_t lo = t == DType::UInt8 ? 0 : -9;
  if (fill == "pos" || (fill == "nonzero" && t == DType::UInt8)) return {true, 0, r.between(1, 9)};
  if (fill == "nonzero") {
    int64_t v = r.between(1, 9);
    return {true, 0, (r.next() & 1) ? v : -v};
  }
  if ((fill == "special" && r.uniform() < 0.6) || fill == "limits") {
    int64_t min = 0, max = 0;
    switch (t) {
      case DType::UInt8: max = 255; break;
      case DType::Int8: min = -128, max = 127; break;
      case DType::Int16: min = -32768, max = 32767; break;
      case DType::Int32: min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max(); break;
      default: min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max(); break;
    }
    std::vector<int64_t> specials = {0, 1, -1, min, max, min + 1, max - 1, 2};
    if (t == DType::Int64)
      specials.insert(specials.end(), {(int64_t{1} << 53) + 1, -(int64_t{1} << 53) - 1, int64_t{1} << 62});
    if (t == DType::UInt8) specials = {0, 1, 255, 254, 128, 127};
    if (fill == "limits") std::erase(specials, 0);  // the extremes, never a zero divisor
    return {true, 0, specials[r.next() % specials.size()]};
  }
  return {true, 0, r.between(lo, 9)};
}

void store(const Element& e, DType t, uint8_t* dst) {
  visit_dtype(t, [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = e.i != 0;
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(e.i);
    } else {
      v = T(static_cast<opmath_t<T>>(e.f));
    }
    std::memcpy(dst, &v, sizeof(T));
  });
}

}  // namespace

std::vector<uint8_t> input_bytes(const InputSpec& spec) {
  int64_t n = spec.storage_elements();
  size_t esize = element_size(spec.dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * esize);
  Rng r = Rng::from_seed(spec.seed);
  // "constant": one element (drawn as "special" draws, so an extreme half the time) everywhere.
  bool constant = spec.fill == "constant";
  const std::string fill = constant ? "special" : spec.fill;
  auto draw = [&] {
    return is_floating(spec.dtype) ? float_element(fill, spec.dtype, r) : int_element(fill, spec.dtype, r);
  };
  Element e = draw();
  for (int64_t k = 0; k < n; ++k) {
    if (k > 0 && !constant) e = draw();
    store(e, spec.dtype, bytes.data() + static_cast<size_t>(k) * esize);
  }
  return bytes;
}

Tensor guarded_input(const InputSpec& spec) {
  std::vector<uint8_t> bytes = input_bytes(spec);
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t data_pages = (bytes.size() + page - 1) / page;
  size_t total = (data_pages + 2) * page;
  void* map = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  KILN_CHECK(map != MAP_FAILED, "difftest: mmap of {} bytes for input {} failed", total, spec.name);
  auto* base = static_cast<uint8_t*>(map);
  uint8_t* data_begin = base + page;
  uint8_t* guard = data_begin + data_pages * page;
  uint8_t* data = guard - bytes.size();
  if (data_pages > 0) {
    KILN_CHECK(mprotect(data_begin, data_pages * page, PROT_READ | PROT_WRITE) == 0, "difftest: mprotect failed");
    std::memcpy(data, bytes.data(), bytes.size());
    KILN_CHECK(mprotect(data_begin, data_pages * page, PROT_READ) == 0, "difftest: mprotect failed");
  }
  auto storage = StorageImpl::wrap(data, bytes.size(), kCPU, [map, total](void*) { munmap(map, total); });
  return make_tensor(std::move(storage), spec.sizes, spec.strides, spec.offset, spec.dtype);
}

Tensor widened(const Tensor& t) { return is_floating(t.dtype()) ? t.to(DType::Float64) : t; }

void write_input_files(const Program& p, const std::string& dir) {
  for (const auto& in : p.inputs) {
    std::vector<uint8_t> bytes = input_bytes(in);
    std::ofstream f(dir + "/" + in.name + ".bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    KILN_CHECK(f.good(), "difftest: cannot write {}/{}.bin", dir, in.name);
  }
}

}  // namespace kiln::difftest
