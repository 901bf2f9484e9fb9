#include "kiln/cuda/nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "kiln/cuda/load_once.h"
#include "kiln/support/error.h"

namespace kiln::cuda {
namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Api {
  nvrtcResult (*version)(int*, int*) = nullptr;
  const char* (*error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
};

// Directories to look in; "" stands for the dynamic loader's own path.
std::vector<std::string> directories() {
  std::vector<std::string> out;
  if (const char* home = std::getenv("KILN_CUDA_HOME"); home && *home) {
    out.push_back(std::string(home) + "/lib64");
    out.push_back(std::string(home) + "/lib");
  }
  out.push_back("");
  out.push_back("/usr/local/cuda/lib64");
  out.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
#ifdef KILN_NVRTC_DIR
  if (*KILN_NVRTC_DIR) out.push_back(KILN_NVRTC_DIR);
#endif
  return out;
}

template <class F>
void resolve(void* lib, F& fn, const char* name, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  KILN_CHECK_KIND(fn != nullptr, ErrorKind::NotImplemented, "NVRTC: {} has no {}", path, name);
}

struct Loaded {
  Nvrtc info;
  Api api;
};

Loaded load() {
  std::string tried;
  for (const auto& dir : directories()) {
    std::string prefix = dir.empty() ? "" : dir + "/";
    // NVRTC opens its builtins by name; loaded first (global), that name is already resolved.
    if (!dir.empty()) dlopen((prefix + "libnvrtc-builtins.so.13.0").c_str(), RTLD_NOW | RTLD_GLOBAL);
    for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12"}) {
      std::string path = prefix + soname;
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        const char* why = dlerror();
        tried += fmt::format("\n  {}", why ? std::string(why) : path + ": not found");
        continue;
      }
      Loaded l;
      l.info.path = path;
      resolve(lib, l.api.version, "nvrtcVersion", path);
      resolve(lib, l.api.error_string, "nvrtcGetErrorString", path);
      resolve(lib, l.api.create, "nvrtcCreateProgram", path);
      resolve(lib, l.api.destroy, "nvrtcDestroyProgram", path);
      resolve(lib, l.api.compile, "nvrtcCompileProgram", path);
      resolve(lib, l.api.log_size, "nvrtcGetProgramLogSize", path);
      resolve(lib, l.api.log, "nvrtcGetProgramLog", path);
      resolve(lib, l.api.cubin_size, "nvrtcGetCUBINSize", path);
      resolve(lib, l.api.cubin, "nvrtcGetCUBIN", path);
      l.api.version(&l.info.major, &l.info.minor);
      return l;
    }
  }
  KILN_FAIL(ErrorKind::NotImplemented,
            "NVRTC was not found (scripts/setup.sh installs the pinned nvidia-cuda-nvrtc into .venv; set "
            "KILN_CUDA_HOME to a CUDA toolkit); tried:{}",
            tried);
}

const Loaded& loaded() {
  return load_once<Loaded>([] { return load(); });
}

}  // namespace

const Nvrtc& nvrtc() { return loaded().info; }

bool nvrtc_available() {
  try {
    loaded();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string compile_cubin(const std::string& source, const std::string& name, const std::string& arch,
                          const std::vector<SourceHeader>& headers, const std::vector<std::string>& options) {
  const Api& api = loaded().api;
  auto fail = [&](int r, const char* what) {
    KILN_FAIL(ErrorKind::Internal, "NVRTC: {} of {} failed: {}", what, name, api.error_string(r));
  };
  std::vector<const char*> header_texts, header_names;
  for (const auto& h : headers) {
    header_texts.push_back(h.text.c_str());
    header_names.push_back(h.name.c_str());
  }
  nvrtcProgram prog = nullptr;
  if (int r = api.create(&prog, source.c_str(), name.c_str(), static_cast<int>(headers.size()), header_texts.data(),
                         header_names.data());
      r != 0)
    fail(r, "nvrtcCreateProgram");
  struct Destroy {
    const Api& api;
    nvrtcProgram& prog;
    ~Destroy() { api.destroy(&prog); }
  } destroy{api, prog};
  std::vector<std::string> all = {"--gpu-architecture=" + arch};
  all.insert(all.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const auto& o : all) argv.push_back(o.c_str());
  int r = api.compile(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  api.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) api.log(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  KILN_CHECK_KIND(r == 0, ErrorKind::Internal, "NVRTC: {} does not compile for {} ({}):\n{}", name, arch,
                  api.error_string(r), log);
  size_t size = 0;
  if (int e = api.cubin_size(prog, &size); e != 0) fail(e, "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  if (int e = api.cubin(prog, cubin.data()); e != 0) fail(e, "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace kiln::cuda
