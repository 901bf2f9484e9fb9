// `kiln`: the command line. Subcommands are listed in kUsage; docs/cli.md describes them.
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/core/device_hooks.h"
#include "kiln/support/error.h"
#include "kiln/tools/commands.h"

namespace {

constexpr const char* kUsage = R"(kiln: PyTorch 2's compiler stack in C++

usage: kiln <command> [options]

commands:
  ops     list the op registry: name, schema, tags, kind, devices with kernels
          --format table|tsv|md   output format (default: table)
          --tag TAG               only ops with this tag (repeatable; all must match)
          --kind leaf|compound|declared  only ops of this kind (declared: PyTorch ops kiln
                                  knows by schema but does not implement, with the reason)
          --coverage              each Core ATen overload's eager and compiled path, and totals;
                                  then every aten:: overload's count by kind and the reasons
                                  the declared ones do not run (--all: a row per overload)
          --coverage --samples DIR  also the recorded PyTorch samples passed eagerly and compiled,
                                  and whether each is differentiable through kiln
                                  (DIR: a recording kiln_opinfo_test replayed, e.g. build/opinfo)
  demo    a guided tour of kiln's tensor API: tensors, broadcasting, type promotion,
          views, a small MLP, meta tensors, and what errors look like
  explain MODEL | MODEL.pt2 [--cuda [sm_XY]]
          a built-in model (mlp, ln_gelu_mlp, attention, convnet) or a torch.export archive,
          traced at the aten, core and prims levels: its graph, op counts per level, what each
          op decomposed into, then the fused kernels kiln::compile makes, its memory plan and
          the generated C++; with --cuda, the CUDA target's kernels for that GPU architecture
          (default sm_90) and their launch configurations (no GPU needed)
  run MODEL.pt2|MODEL.kiln [--input NAME=FILE.npy | --input FILE.npy]... [--random] [--seed N]
                [--compile [--device cpu|cuda]] [--repeat N] [--warmup N] [--output-dir DIR]
          load a model exported with torch.export.save (or a package from kiln compile) and run
          it on inputs from .npy files (by the exported input names, or in order) or random ones;
          --compile runs a .pt2 through kiln::compile (--device cuda: for the GPU, weights and
          inputs copied there, outputs back). Prints each output's dtype, shape and
          checksum and the median time of N runs (after --warmup runs); --output-dir writes
          output_0.npy, output_1.npy, ...
  compile MODEL.pt2 -o MODEL.kiln [--emulate-precision-casts]
          compile a torch.export archive ahead of time into a package (kernels, weights,
          manifest) that kiln run and kiln::load_package run with no tracing and no compiler
  check DIR [--emulate-precision-casts]
          replay a program the check mode (KILN_CHECK=1) reduced and wrote to DIR: compiled
          against eager on its inputs; exit status 1 while they differ
  version kiln's version, and the CUDA driver and devices it found or why none (also --version)
  help    this text (also -h, --help)

environment:
  KILN_LOG=dispatch       log every op call that goes through the dispatcher
  KILN_CPU_CACHE=0        return freed CPU blocks to the system at once (no caching)
  KILN_LOG=graph,fusion,schedule,memory,output_code,recompiles,compile,loop_ir,passes
                          what kiln::compile does: traced graphs, fusion decisions, kernels,
                          memory plan, generated C++, why it recompiled, cache hits and builds,
                          the loop IR, every compiler pass's result and time
  KILN_VERIFY=1           verify every IR after every compiler pass (on in debug builds)
  KILN_CACHE_DIR=DIR      where compiled kernels, and with GCC their precompiled headers,
                          are cached (default ~/.cache/kiln)
  KILN_CHECK=1            each compiled signature's first call also runs eagerly and is
                          compared; a mismatch raises an error with the program reduced to
                          the fewest calls that still differ, written to KILN_CHECK_DIR
                          (default ./kiln-check)
  KILN_EMULATE_PRECISION_CASTS=1
                          compiled code rounds every float16/bfloat16 op's result as eager
                          does (default: a chain in one kernel rounds once, as torch.compile)
  KILN_STREAM_STORES=0|1  compiled row kernels never / always write rows with streaming
                          stores (default: light kernels whose data outgrow the last-level cache)
  KILN_GEMM=kiln          float32 matrix products on kiln's own GEMM instead of oneDNN's
                          (KILN_SGEMM_KC=N, KILN_SGEMM_GRID=rows|cols: its blocking)
  CXX=COMPILER            the C++ compiler for generated code (default c++)
  KILN_CUDA_HOME=DIR      where to look first for the CUDA driver (DIR/lib64/libcuda.so.1)
  KILN_CUDA_PROFILE=1     time every GPU kernel kiln launches (generated, attention, cuBLASLt)
                          and print each kernel's calls and device time at exit (stderr)
  KILN_CUBLASLT_CANDIDATES=N  GPU GEMMs time cuBLASLt's first N algorithms once per shape and
                          keep the fastest (default 4; 1: the heuristic's first, untimed)
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  if (command == "version" || command == "--version") {
    std::printf("kiln %s\n", KILN_VERSION);
    std::string reason = kiln::device_unavailable_reason(kiln::DeviceType::CUDA);
    std::printf("cuda: %s\n", reason.empty() ? kiln::device_hooks(kiln::DeviceType::CUDA, "version").describe().c_str()
                                             : reason.c_str());
    return 0;
  }
  try {
    if (command == "ops") return kiln::tools::ops_command(args);
    if (command == "demo") return kiln::tools::demo_command(args);
    if (command == "explain") return kiln::tools::explain_command(args);
    if (command == "run") return kiln::tools::run_command(args);
    if (command == "compile") return kiln::tools::compile_command(args);
    if (command == "check") return kiln::tools::check_command(args);
  } catch (const std::exception& e) {  // kiln::Error, and the file system's errors
    std::fprintf(stderr, "kiln %s: %s\n", command.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "kiln: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
