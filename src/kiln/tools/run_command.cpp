// `kiln run MODEL.pt2`: loads a torch.export archive and runs it, eagerly or compiled, on inputs
// from .npy files or random ones; prints each output's dtype, shape and checksum and the median
// time, and optionally writes the outputs as .npy files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/api/model.h"
#include "kiln/api/package.h"
#include "kiln/import/npy.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {
namespace {

constexpr const char* kRunUsage =
    "usage: kiln run MODEL.pt2|MODEL.kiln [--input NAME=FILE.npy | --input FILE.npy]... [--random] [--seed N]\n"
    "                [--compile [--device cpu|cuda]] [--repeat N] [--warmup N] [--output-dir DIR]\n";

struct RunOptions {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;  // (name or "", file)
  bool random = false;
  uint64_t seed = 0;
  bool compile = false;
  Device device{DeviceType::CPU};
  int repeat = 1;
  int warmup = 0;
  std::string output_dir;
};

// Parses the arguments; nullopt after printing what was wrong.
std::optional<RunOptions> parse(const std::vector<std::string>& args) {
  RunOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "kiln run: %s needs a value\n", a.c_str());
        return std::nullopt;
      }
      return args[++i];
    };
    if (a == "--input") {
      auto v = value();
      if (!v) return std::nullopt;
      size_t eq = v->find('=');
      o.inputs.emplace_back(eq == std::string::npos ? "" : v->substr(0, eq),
                            eq == std::string::npos ? *v : v->substr(eq + 1));
    } else if (a == "--random") {
      o.random = true;
    } else if (a == "--compile") {
      o.compile = true;
    } else if (a == "--device") {
      auto v = value();
      if (!v) return std::nullopt;
      if (*v != "cpu" && *v != "cuda" && !v->starts_with("cuda:")) {
        std::fprintf(stderr, "kiln run: --device takes cpu, cuda or cuda:N, got '%s'\n", v->c_str());
        return std::nullopt;
      }
      o.device = *v == "cpu"    ? Device(DeviceType::CPU)
                 : *v == "cuda" ? Device(DeviceType::CUDA, 0)
                                : Device(DeviceType::CUDA, static_cast<int8_t>(std::atoi(v->c_str() + 5)));
    } else if (a == "--seed" || a == "--repeat" || a == "--warmup") {
      auto v = value();
      if (!v) return std::nullopt;
      char* end = nullptr;
      long long n = std::strtoll(v->c_str(), &end, 10);
      if (end == v->c_str() || *end || n < (a == "--repeat" ? 1 : 0)) {
        std::fprintf(stderr, "kiln run: %s takes a %s integer, got '%s'\n", a.c_str(),
                     a == "--repeat" ? "positive" : "non-negative", v->c_str());
        return std::nullopt;
      }
      if (a == "--seed") o.seed = static_cast<uint64_t>(n);
      if (a == "--repeat") o.repeat = static_cast<int>(std::min<long long>(n, 1000000));
      if (a == "--warmup") o.warmup = static_cast<int>(std::min<long long>(n, 1000000));
    } else if (a == "--output-dir") {
      auto v = value();
      if (!v) return std::nullopt;
      o.output_dir = *v;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "kiln run: unknown option '%s'\n", a.c_str());
      return std::nullopt;
    } else if (o.model.empty()) {
      o.model = a;
    } else {
      std::fprintf(stderr, "kiln run: one model only ('%s' and '%s')\n", o.model.c_str(), a.c_str());
      return std::nullopt;
    }
  }
  if (o.model.empty()) return std::nullopt;
  bool named = std::any_of(o.inputs.begin(), o.inputs.end(), [](const auto& p) { return !p.first.empty(); });
  bool positional = std::any_of(o.inputs.begin(), o.inputs.end(), [](const auto& p) { return p.first.empty(); });
  if (named && positional) {
    std::fprintf(stderr, "kiln run: give inputs all by name (NAME=FILE.npy) or all by position\n");
    return std::nullopt;
  }
  return o;
}

// The user inputs in the model's order, from the files (or random where --random allows).
std::vector<Tensor> gather_inputs(const ModelSignature& model, const RunOptions& o) {
  std::vector<std::string> names = model.input_names();
  std::vector<Tensor> random = o.random ? model.random_inputs(o.seed) : std::vector<Tensor>{};
  std::vector<std::optional<Tensor>> inputs(names.size());
  for (size_t k = 0; k < o.inputs.size(); ++k) {
    const auto& [name, file] = o.inputs[k];
    size_t index = k;
    if (!name.empty()) {
      auto it = std::find(names.begin(), names.end(), name);
      KILN_CHECK(it != names.end(), "{}: no input named '{}' (the inputs: {})", model.source(), name,
                 fmt::join(names, ", "));
      index = static_cast<size_t>(it - names.begin());
    }
    KILN_CHECK(index < names.size(), "{}: {} input files for {} inputs ({})", model.source(), o.inputs.size(),
               names.size(), fmt::join(names, ", "));
    KILN_CHECK(!inputs[index], "{}: input '{}' is given twice", model.source(), names[index]);
    inputs[index] = read_npy(file);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < names.size(); ++i) {
    KILN_CHECK(inputs[i] || o.random, "{}: input '{}' is not given (--input {}=FILE.npy, or --random)", model.source(),
               names[i], names[i]);
    out.push_back(inputs[i] ? *inputs[i] : random[i]);
  }
  return out;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void print_outputs(const std::vector<Tensor>& outputs, const std::vector<std::string>& names) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    std::string checksum = "-";
    if (!is_complex(t.dtype()) && t.numel() > 0) {
      Tensor d = t.to(DType::Float64);
      checksum = fmt::format("sum={:.9g} abs_sum={:.9g}", d.sum().item<double>(), d.abs().sum().item<double>());
    }
    std::printf("output_%zu (%s): %s[%s] %s\n", i, i < names.size() ? names[i].c_str() : "?",
                std::string(dtype_name(t.dtype())).c_str(),
                fmt::format("{}", fmt::join(t.sizes().shape(), ", ")).c_str(), checksum.c_str());
  }
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  std::optional<RunOptions> o = parse(args);
  if (!o) {
    std::fputs(kRunUsage, stderr);
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  // A compiled package runs as it is; a .pt2 archive eagerly, or compiled with --compile.
  bool package = o->model.ends_with(".kiln");
  if (package && o->compile) {
    std::fprintf(stderr, "kiln run: %s is a compiled package; --compile is for .pt2 archives\n", o->model.c_str());
    return 2;
  }
  // kiln's eager kernels run on the CPU; a GPU runs what the compiler's CUDA target generates.
  if (!o->device.is_cpu() && !o->compile) {
    std::fprintf(stderr, "kiln run: --device %s runs compiled code: add --compile\n",
                 fmt::format("{}", o->device).c_str());
    return 2;
  }
  std::optional<Model> model;
  std::optional<Package> loaded_package;
  if (package) {
    loaded_package = load_package(o->model);
  } else {
    model = load(o->model);
  }
  const ModelSignature& signature = package ? loaded_package->signature() : model->signature();
  std::printf("loaded %s in %.1f ms: %zu inputs (%s), %zu outputs\n", o->model.c_str(), milliseconds_since(start),
              signature.input_names().size(), fmt::format("{}", fmt::join(signature.input_names(), ", ")).c_str(),
              signature.num_outputs());
  std::vector<Tensor> inputs = gather_inputs(signature, *o);

  std::optional<CompiledModel> compiled;
  if (o->compile) {
    compiled = model->compile({}, o->device);
    start = std::chrono::steady_clock::now();
    compiled->run(inputs);
    std::printf("compiled (first run, tracing and compiling) in %.1f ms\n", milliseconds_since(start));
  }
  auto run_once = [&] {
    if (package) return loaded_package->run(inputs);
    return compiled ? compiled->run(inputs) : model->run(inputs);
  };
  for (int r = 0; r < o->warmup; ++r) run_once();
  std::vector<Tensor> outputs;
  std::vector<double> times;
  for (int r = 0; r < o->repeat; ++r) {
    start = std::chrono::steady_clock::now();
    outputs = run_once();
    times.push_back(milliseconds_since(start));
  }
  std::sort(times.begin(), times.end());
  print_outputs(outputs, signature.output_names());
  std::printf("%s: median %.3f ms over %d run%s (min %.3f, max %.3f)\n",
              package ? "package" : (compiled ? "compiled" : "eager"), times[times.size() / 2], o->repeat,
              o->repeat == 1 ? "" : "s", times.front(), times.back());
  if (!o->output_dir.empty()) {
    std::filesystem::create_directories(o->output_dir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      write_npy((std::filesystem::path(o->output_dir) / fmt::format("output_{}.npy", i)).string(), outputs[i]);
    }
    std::printf("wrote %zu outputs to %s\n", outputs.size(), o->output_dir.c_str());
  }
  return 0;
}

}  // namespace kiln::tools
