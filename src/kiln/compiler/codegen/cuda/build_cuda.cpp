#include "kiln/compiler/codegen/cuda/build_cuda.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/compiler/codegen/build.h"
#include "kiln/cuda/nvrtc.h"
#include "kiln/support/error.h"
#include "kiln/support/log.h"

namespace kiln::compiler {

const std::vector<std::string>& cuda_compile_options() {
  static const std::vector<std::string> options = {"-std=c++17", "--fmad=false"};
  return options;
}

CudaBuild compile_cuda(const std::string& source, const std::string& arch) {
  const cuda::Nvrtc& nvrtc = cuda::nvrtc();
  Toolchain t;
  t.command = fmt::format("nvrtc {}", fmt::join(cuda_compile_options(), " "));
  t.include_dir = include_dir();
  t.identity = fmt::format("NVRTC {}.{}", nvrtc.major, nvrtc.minor);
  t.target = arch;
  // NVRTC is handed the headers the source includes, by the names it includes them with.
  std::vector<cuda::SourceHeader> headers;
  for (const auto& path : included_headers(source, t.include_dir)) {
    std::filesystem::path p(path);
    KILN_CHECK_KIND(p.is_absolute(), ErrorKind::Internal, "CUDA build: header {} not found under {}", path,
                    t.include_dir);
    std::ifstream f(p, std::ios::binary);
    std::ostringstream text;
    text << f.rdbuf();
    headers.push_back({std::filesystem::relative(p, t.include_dir).string(), text.str()});
  }
  CudaBuild b;
  std::string key = cache_key(source, t);
  b.cubin = cached_bytes(
      key, ".cubin",
      [&] { return cuda::compile_cubin(source, key.substr(0, 16) + ".cu", arch, headers, cuda_compile_options()); },
      b.from_cache);
  KILN_LOG("compile", "{} cubin {} for {}", b.from_cache ? "cache hit" : "built", key, arch);
  return b;
}

}  // namespace kiln::compiler
