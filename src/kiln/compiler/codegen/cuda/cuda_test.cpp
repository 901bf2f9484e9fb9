// The CUDA generator without a GPU: every kernel kind it writes — pointwise (with masked loads,
// integer division and 16-bit floats), row kernels (softmax, layer_norm, sums and means over the
// last dim), column reductions, empty kernels — compiles with NVRTC to a cubin for sm_90, and the
// scheduler reads the target's fusion limits. Running the kernels is the GPU tests' part
// (kernels/cuda_device_test.cpp, make test-gpu).
#include "kiln/compiler/codegen/cuda/cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "kiln/compiler/codegen/codegen_testing.h"
#include "kiln/compiler/codegen/cuda/build_cuda.h"
#include "kiln/compiler/target.h"
#include "kiln/cuda/nvrtc.h"
#include "kiln/ops/api.h"
#include "scoped_env.h"

namespace kiln::compiler {
namespace {

const Target& sm90() {
  static const Target t = cuda_target_for_arch("sm_90");
  return t;
}

// The CUDA source of `fn` on `inputs`, checked to compile with NVRTC.
GeneratedSource cuda_source(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  testing::Compiled c = testing::compiled(fn, inputs, &sm90());
  GeneratedSource g = generate_cuda(c.program, c.schedule, sm90());
  EXPECT_TRUE(cuda::nvrtc_available()) << "NVRTC is installed by the project's set-up (scripts/requirements.txt)";
  CudaBuild b = compile_cuda(g.code, sm90().arch);
  EXPECT_GT(b.cubin.size(), 0u);
  EXPECT_EQ(b.cubin.substr(0, 4), std::string("\x7f"
                                              "ELF",
                                              4))
      << "a cubin is an ELF image";
  return g;
}

std::vector<Tensor> pointwise_fn(const std::vector<Tensor>& in) {
  Tensor x = in[0];
  Tensor g = gelu(x, "tanh") * exp(x) + tanh(x) / (x * x + 1);
  Tensor half = add(x.to(DType::BFloat16), x.to(DType::Float16).to(DType::BFloat16));
  return {g, half, cat(std::vector<Tensor>{x, g}, 1), div(x, x.to(DType::Int64))};
}

TEST(CudaCodegen, PointwiseKernelsCompile) {
  GeneratedSource g = cuda_source(&pointwise_fn, {randn({33, 70})});
  ASSERT_GE(g.kernels.size(), 1u);
  for (const auto& k : g.kernels) {
    EXPECT_EQ(k.launch.block, 256) << k.name;
    EXPECT_GT(k.launch.grid, 0) << k.name;
  }
  EXPECT_NE(g.code.find("extern \"C\" __global__ void __launch_bounds__(256)"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("k_to_bf16("), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("k_from_f16("), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("k_float_through_int<int64_t>("), std::string::npos) << g.code;
  EXPECT_EQ(g.code.find("std::"), std::string::npos) << "no standard library on the device:\n" << g.code;
}

// The launch knobs (KILN_CUDA_POINTWISE_GROUPS, KILN_CUDA_COLUMN_THREADS, KILN_CUDA_ROW_ELEMENTS)
// replace the target's defaults where positive, and are ignored otherwise.
TEST(CudaCodegen, LaunchKnobsComeFromTheEnvironment) {
  EXPECT_EQ(cuda_target_for_arch("sm_90").pointwise_groups, 2);
  {
    kiln::testing::ScopedEnv groups("KILN_CUDA_POINTWISE_GROUPS", "4"), threads("KILN_CUDA_COLUMN_THREADS", "512"),
        elements("KILN_CUDA_ROW_ELEMENTS", "0");
    Target t = cuda_target_for_arch("sm_90");
    EXPECT_EQ(t.pointwise_groups, 4);
    EXPECT_EQ(t.column_sum_threads, 512);
    EXPECT_EQ(t.row_elements_per_thread, 16) << "0 is not a positive value";
  }
  EXPECT_EQ(cuda_target_for_arch("sm_90").column_sum_threads, 1024);
  {
    kiln::testing::ScopedEnv partials("KILN_CUDA_FLOAT_PARTIALS", "0");
    EXPECT_FALSE(cuda_target_for_arch("sm_90").float_partials);
  }
  EXPECT_TRUE(cuda_target_for_arch("sm_90").float_partials);
  {
    kiln::testing::ScopedEnv prefetch("KILN_CUDA_ROW_PREFETCH", "0");
    EXPECT_FALSE(cuda_target_for_arch("sm_90").row_prefetch);
  }
  EXPECT_TRUE(cuda_target_for_arch("sm_90").row_prefetch);
  EXPECT_TRUE(cuda_target_for_arch("sm_90").dependent_launch);
  EXPECT_FALSE(cuda_target_for_arch("sm_80").dependent_launch) << "griddepcontrol is sm_90's";
  {
    kiln::testing::ScopedEnv dependent("KILN_CUDA_DEPENDENT_LAUNCH", "0");
    EXPECT_FALSE(cuda_target_for_arch("sm_90").dependent_launch);
  }
}

// The special functions: kernels/special_math.h compiles on the device (NVRTC, no system header) in
// double, float and bfloat16 kernels (ndtri, erfcx and zeta have no 16-bit version, as in PyTorch).
std::vector<Tensor> special_fn(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& x : {in[0], in[0].to(DType::Float64), in[0].to(DType::BFloat16)}) {
    Tensor unit = tanh(x);
    Tensor sum = add(add(lgamma(x), digamma(x)), add(erfc(x), erfinv(unit)));
    Tensor bessel = add(add(i0(x), special_i0e(x)), add(special_i1(x), special_i1e(x)));
    out.push_back(add(sum, bessel));
    if (x.dtype() == DType::BFloat16) continue;
    Tensor normal = add(special_ndtri(sigmoid(x)), special_erfcx(x));
    out.push_back(add(normal, special_zeta(add(abs(x), Scalar(1.5)), x)));
  }
  return out;
}

TEST(CudaCodegen, SpecialFunctionsCompile) {
  GeneratedSource g = cuda_source(&special_fn, {randn({33, 70})});
  for (const char* call : {"kiln::special::digamma(", "kiln::special::zeta(", "kiln::special::ndtri(", "lgamma("})
    EXPECT_NE(g.code.find(call), std::string::npos) << call << "\n" << g.code;
}

std::vector<Tensor> integer_fn(const std::vector<Tensor>& in) {
  Tensor a = in[0], b = in[1];
  return {div(a, b, "floor"), remainder(a, b), a * b - b, abs(a)};
}

TEST(CudaCodegen, IntegerDivisionReportsThroughTheStatusWord) {
  Tensor a = full({5, 9}, 7, TensorOptions(DType::Int64)), b = full({5, 9}, 3, TensorOptions(DType::Int32));
  GeneratedSource g = cuda_source(&integer_fn, {a, b});
  EXPECT_FALSE(g.error_sites.empty());
  EXPECT_NE(g.code.find("kiln_status, 1)"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("k_mul("), std::string::npos) << "int64 products wrap around:\n" << g.code;
}

std::vector<Tensor> rows_fn(const std::vector<Tensor>& in) {
  Tensor x = in[0];
  return {softmax(x, -1), layer_norm(x, {x.size(1)}, in[1], in[2], 1e-5), mean(x, {1}), amax(x, {1})};
}

TEST(CudaCodegen, RowKernelsCompile) {
  Tensor x = randn({6, 1500});
  GeneratedSource g = cuda_source(&rows_fn, {x, randn({1500}), randn({1500})});
  bool softmax_seen = false;
  for (const auto& k : g.kernels) {
    if (k.name.find("exp") == std::string::npos) continue;
    softmax_seen = true;
    // The smallest power of two of threads that covers 1500 cols with 16 elements each.
    EXPECT_EQ(k.launch.block, 128) << k.name;
    EXPECT_EQ(k.launch.grid, 6) << k.name;  // a block per row
  }
  EXPECT_TRUE(softmax_seen) << g.code;
  EXPECT_NE(g.code.find("k_block_reduce<4>("), std::string::npos) << "128 threads, 4 warps:\n" << g.code;
  EXPECT_NE(g.code.find("__syncthreads();"), std::string::npos) << g.code;
  // 1500 = 4 * 375: groups of 4 floats, one vector load of the row each (into the register array
  // the later passes read), where every buffer is 16-byte aligned.
  EXPECT_NE(g.code.find("k_load_vec<4, kAlign>(&buf0[(col0 + (1500 * row))])"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("if (k_aligned<16>(buf0, "), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("_body<1>("), std::string::npos) << "a path for unaligned buffers:\n" << g.code;
}

// A row kept in registers: each thread's float values of a sum (var's widened ones too) are added
// in a float partial, widened once to the double accumulator; a partial that is not finite has the
// thread's values added again in double. Off (Target::float_partials), each value is widened.
std::vector<Tensor> statistics_fn(const std::vector<Tensor>& in) {
  auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
  return {v, m, mean(mul(in[0], in[0]), {1})};
}

TEST(CudaCodegen, FloatSumsOfARowInRegistersAddAFloatPartialFirst) {
  const std::vector<Tensor> inputs{randn({8, 2048})};
  GeneratedSource g = cuda_source(&statistics_fn, inputs);
  EXPECT_NE(g.code.find("float part"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("= static_cast<double>(part"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("if (__builtin_expect(!isfinite(part"), std::string::npos) << g.code;
  Target off = sm90();
  off.float_partials = false;
  testing::Compiled c = testing::compiled(&statistics_fn, inputs, &off);
  std::string plain = generate_cuda(c.program, c.schedule, off).code;
  EXPECT_EQ(plain.find("part"), std::string::npos) << plain;
  EXPECT_NE(plain.find("static_cast<double>(kept0[j])"), std::string::npos) << plain;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A reduction of values an earlier one of the row reduced takes that one's total: var_mean's mean
// and its var's sum of the row are one block exchange (four here: sum(x), the squared deviations,
// the deviations, x * x).
TEST(CudaCodegen, ASumOfTheSameValuesIsExchangedOnce) {
  GeneratedSource g = cuda_source(&statistics_fn, {randn({8, 2048})});
  EXPECT_EQ(occurrences(g.code, "k_block_reduce<"), 4u) << g.code;
}

TEST(CudaCodegen, ShortRowsTakeAWarpEach) {
  // 64 cols: a warp covers a row with 2 elements a lane; 8 rows a block, reduced within warps.
  GeneratedSource g = cuda_source(&rows_fn, {randn({100, 64}), randn({64}), randn({64})});
  for (const auto& k : g.kernels) {
    EXPECT_EQ(k.launch.block, 256) << k.name;
    EXPECT_EQ(k.launch.grid, 13) << k.name;
  }
  EXPECT_NE(g.code.find("k_warp_reduce("), std::string::npos) << g.code;
  EXPECT_EQ(g.code.find("k_block_reduce"), std::string::npos) << g.code;
  EXPECT_EQ(g.code.find("__syncthreads"), std::string::npos) << g.code;
}

std::vector<Tensor> gather_rows_fn(const std::vector<Tensor>& in) {
  Tensor x = in[0];
  return {softmax(add(x, x.transpose(0, 1)), -1), sum(x, {1}), mul(x, in[1])};
}

std::vector<Tensor> repeated_rows_fn(const std::vector<Tensor>& in) {
  return {mul(in[0].slice(1, 0, 4).unsqueeze(1).expand({3, 2, 4}), 2.0)};
}

TEST(CudaCodegen, OnlyConsecutiveAlignedElementsAreLoadedAsVectors) {
  // Rows of 4 floats read at (row // 2) * 6: row 2's starts at element 6, not a multiple of 4, so
  // no vector load (a 16-byte load there would fault on the GPU).
  GeneratedSource repeated = cuda_source(&repeated_rows_fn, {randn({3, 6})});
  EXPECT_EQ(repeated.code.find("k_load_vec"), std::string::npos) << repeated.code;
  // 1501 cols: not a multiple of any vector width, so elements one by one and no aligned path.
  GeneratedSource odd = cuda_source(&rows_fn, {randn({6, 1501}), randn({1501}), randn({1501})});
  EXPECT_EQ(odd.code.find("k_load_vec"), std::string::npos) << odd.code;
  EXPECT_EQ(odd.code.find("k_aligned"), std::string::npos) << odd.code;
  // A transposed operand (stride 64 along col) is read element by element in the same group as a
  // vector load of the other; bfloat16 groups are 8 wide (16 bytes).
  GeneratedSource square = cuda_source(&gather_rows_fn, {randn({64, 64}), randn({64})});
  EXPECT_NE(square.code.find("k_load_vec<4, kAlign>(&buf0[(col0 + (64 * row))])"), std::string::npos) << square.code;
  EXPECT_NE(square.code.find("buf0[((64 * col) + row)]"), std::string::npos) << square.code;
  GeneratedSource half =
      cuda_source(&gather_rows_fn, {randn({64, 64}).to(DType::BFloat16), randn({64}).to(DType::BFloat16)});
  EXPECT_NE(half.code.find("k_load_vec<8, kAlign>"), std::string::npos) << half.code;
  EXPECT_NE(half.code.find("k_store_vec<8, kAlign>"), std::string::npos) << half.code;
}

std::vector<Tensor> columns_fn(const std::vector<Tensor>& in) {
  auto [var, mean] = var_mean(in[0], {1});
  return {sum(in[0], {0}), var, mean, amax(in[0], {0})};
}

// A row kernel with column sums takes rows one after another in each block: the next row's loads
// are copied into shared memory (cp.async) while it computes this one, and read back from there.
// Target::row_prefetch off, or a row past the staging bytes (40 KB), reads them from global memory.
TEST(CudaCodegen, ColumnSumKernelsStageTheNextRow) {
  GeneratedSource g = cuda_source(&columns_fn, {randn({1024, 256})});
  const std::string& code = g.code;
  EXPECT_NE(code.find("__shared__ __align__(16) float stage0[256];"), std::string::npos) << code;
  EXPECT_NE(code.find("k_staged_vec<4, kAlign>(&buf0[(col0 + (256 * row))], &stage0[col0])"), std::string::npos)
      << code;
  EXPECT_NE(code.find("k_copy_async<4, kAlign>(&stage0[col0], &buf0[(col0 + (256 * next))]);"), std::string::npos)
      << code;
  EXPECT_NE(code.find("const int64_t next = blockIdx.x;"), std::string::npos) << "the first row, before the loop:\n"
                                                                              << code;
  EXPECT_NE(code.find("    k_staged_wait();"), std::string::npos) << code;
  Target off = sm90();
  off.row_prefetch = false;
  testing::Compiled c = testing::compiled(&columns_fn, {randn({1024, 256})}, &off);
  const std::string plain = generate_cuda(c.program, c.schedule, off).code;
  EXPECT_EQ(plain.find("stage"), std::string::npos) << plain;
  EXPECT_NE(plain.find("k_load_vec<4, kAlign>(&buf0[(col0 + (256 * row))])"), std::string::npos) << plain;
  GeneratedSource wide = cuda_source(&columns_fn, {randn({64, 16384})});
  EXPECT_EQ(wide.code.find("stage"), std::string::npos) << wide.code;
  // Target::row_prefetch 2 (a trial): the copies of the next row come before the row's first block
  // exchange, not after it.
  auto first_copy_before_exchange = [](const Target& t) {
    testing::Compiled c = testing::compiled(&columns_fn, {randn({1024, 256})}, &t);
    const std::string code = generate_cuda(c.program, c.schedule, t).code;
    const size_t loop = code.find("k_staged_wait();");
    return code.find("const int64_t next = row + gridDim.x;", loop) < code.find("k_block_reduce<", loop);
  };
  Target early = sm90();
  early.row_prefetch = 2;
  EXPECT_TRUE(first_copy_before_exchange(early));
  EXPECT_FALSE(first_copy_before_exchange(sm90()));
  testing::Compiled c2 = testing::compiled(&columns_fn, {randn({1024, 256})}, &early);
  EXPECT_GT(compile_cuda(generate_cuda(c2.program, c2.schedule, early).code, early.arch).cubin.size(), 0u);
}

// On sm_90 every generated kernel (a column-sum kernel's finish too) waits for the previous kernel
// of the stream before it touches memory, and is launched as a programmatic dependent; for sm_80,
// neither.
TEST(CudaCodegen, KernelsWaitForThePreviousKernelOnSm90) {
  GeneratedSource g = cuda_source(&columns_fn, {randn({1024, 256})});
  size_t launches = 0;
  for (const auto& k : g.kernels) {
    EXPECT_TRUE(k.launch.dependent) << k.name;
    ++launches;
    if (k.finish.grid > 0) {
      EXPECT_TRUE(k.finish.dependent) << k.name;
      ++launches;
    }
  }
  EXPECT_EQ(occurrences(g.code, "k_wait_prior_grids();"), launches) << g.code;
  static const Target sm80 = cuda_target_for_arch("sm_80");
  testing::Compiled c = testing::compiled(&columns_fn, {randn({1024, 256})}, &sm80);
  GeneratedSource old = generate_cuda(c.program, c.schedule, sm80);
  EXPECT_EQ(old.code.find("k_wait_prior_grids"), std::string::npos) << old.code;
  for (const auto& k : old.kernels) EXPECT_FALSE(k.launch.dependent || k.finish.dependent) << k.name;
  EXPECT_GT(compile_cuda(old.code, sm80.arch).cubin.size(), 0u);
}

// Two inputs of different widths staged: a bfloat16 group of 4 (8 bytes, cp.async.ca) beside a float
// one (16 bytes, cp.async.cg), in arrays of their storage types.
std::vector<Tensor> mixed_inputs_fn(const std::vector<Tensor>& in) {
  Tensor h = add(in[0].to(DType::Float32), in[1]);
  auto [var, mean] = var_mean(h, {1});
  return {sum(in[1], {0}), var, mean};
}

TEST(CudaCodegen, InputsOfTwoWidthsAreStaged) {
  GeneratedSource g = cuda_source(&mixed_inputs_fn, {randn({512, 256}).to(DType::BFloat16), randn({512, 256})});
  EXPECT_NE(g.code.find("__shared__ __align__(16) uint16_t stage"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("__shared__ __align__(16) float stage"), std::string::npos) << g.code;
  EXPECT_EQ(occurrences(g.code, "k_copy_async<4, kAlign>(&stage"), 4u) << "two inputs, the first row and the next:\n"
                                                                       << g.code;
}

// A buffer the kernel writes is never staged: a later pass reads back this row's stores (h = 2x
// stored, layer_norm(h) beside sum(x, 0)), which a copy made during the previous row would miss.
std::vector<Tensor> stored_then_read_fn(const std::vector<Tensor>& in) {
  Tensor h = mul(in[0], Scalar(2.0));
  return {h, layer_norm(h, {h.size(-1)}, std::nullopt, std::nullopt, 1e-5), sum(in[0], {0})};
}

TEST(CudaCodegen, BuffersTheKernelWritesAreNotStaged) {
  GeneratedSource g = cuda_source(&stored_then_read_fn, {randn({2048, 2048}).to(DType::BFloat16)});
  // Each copy "k_copy_async<N, kAlign>(&stageS[col0], &bufB[...": the buffer B it copies from.
  int copies = 0;
  for (size_t at = g.code.find("k_copy_async<"); at != std::string::npos; at = g.code.find("k_copy_async<", at + 1)) {
    const size_t from = g.code.find("], &buf", at) + 7, end = g.code.find('[', from);
    ASSERT_LT(end, g.code.find(';', at)) << g.code.substr(at, 80);
    const std::string b = g.code.substr(from, end - from);
    EXPECT_EQ(g.code.find("k_store_vec<8, kAlign>(&buf" + b + "["), std::string::npos) << "buf" << b << ":\n" << g.code;
    ++copies;
  }
  EXPECT_GT(copies, 0) << "the inputs are staged:\n" << g.code;
}

// A load that is the same for every row (a weight at col) is not staged: only loads along the rows
// are, whose next row is new data; the weight's group is read from global memory (L1 and L2 hold it).
std::vector<Tensor> weighted_rows_fn(const std::vector<Tensor>& in) {
  auto [var, mean] = var_mean(mul(in[0], in[1]), {1});
  return {sum(in[0], {0}), var, mean};
}

TEST(CudaCodegen, LoadsTheSameForEveryRowAreNotStaged) {
  GeneratedSource g = cuda_source(&weighted_rows_fn, {randn({1024, 256}), randn({256})});
  EXPECT_NE(g.code.find("k_copy_async<4, kAlign>(&stage0[col0], &buf0["), std::string::npos) << g.code;
  EXPECT_EQ(g.code.find("stage1"), std::string::npos) << "one input staged:\n" << g.code;
  EXPECT_NE(g.code.find("k_load_vec<4, kAlign>(&buf1["), std::string::npos) << g.code;
}

// A row kernel's static shared memory stays under 48 KB: the exchanges' arrays (twenty row sums
// beside a column sum of rows of 10240 floats) leave the stages less room.
std::vector<Tensor> many_sums_fn(const std::vector<Tensor>& in) {
  std::vector<Tensor> out{sum(in[0], {0})};
  for (int i = 0; i < 20; ++i) out.push_back(sum(mul(in[0], Scalar(double(i + 2))), {1}));
  return out;
}

TEST(CudaCodegen, StagesLeaveRoomForTheExchanges) {
  GeneratedSource g = cuda_source(&many_sums_fn, {randn({256, 10240})});  // compiles (ptxas checks the bytes)
  EXPECT_EQ(g.code.find("stage0"), std::string::npos) << g.code;
}

std::vector<Tensor> column_means_fn(const std::vector<Tensor>& in) {
  return {amax(in[0], {1}), mean(in[0], {0}), sum(exp(in[0]), {0})};
}

TEST(CudaCodegen, ColumnSumsRideTheRowKernel) {
  // sum(x, 0) is a column sum of var_mean's row kernel on both targets (the input read once);
  // amax(x, 0) is a column reduction of its own.
  testing::Compiled cpu = testing::compiled(&columns_fn, {randn({64, 48})});
  EXPECT_EQ(cpu.kernel(0).columns.size(), 1u);
  testing::Compiled gpu = testing::compiled(&columns_fn, {randn({64, 48})}, &sm90());
  EXPECT_EQ(gpu.kernel(0).columns.size(), 1u);
  GeneratedSource g = cuda_source(&columns_fn, {randn({64, 48})});
  // var_mean's row kernel and amax(x, 0): var's last step, written after amax, joins the row
  // kernel (Kernel::per_row), which wrote all it reads.
  ASSERT_EQ(g.kernels.size(), 2u) << g.code;
  const GeneratedKernel& rows = g.kernels[0];
  // 64 rows: 4 blocks of at least 16 rows each, each leaving 48 float partial sums; the finish
  // adds them (a warp per 32 columns, 4 slices of blocks).
  EXPECT_EQ(rows.launch.grid, 4);
  EXPECT_EQ(rows.workspace_bytes, 4 * 48 * 4);
  EXPECT_EQ(rows.finish.grid, 2);
  EXPECT_EQ(rows.finish.block, 32 * 4);
  EXPECT_LT(g.code.find(rows.name + "("), g.code.find(rows.name + "_finish(")) << "the finish after its kernel:\n"
                                                                               << g.code;
  EXPECT_NE(g.code.find("colsum"), std::string::npos) << g.code;
  EXPECT_NE(launch_summary(g).find("then " + rows.name + "_finish: 2 blocks of 128 threads"), std::string::npos)
      << launch_summary(g);
  EXPECT_EQ(g.kernels[1].finish.grid, 0);
  // 2 tiles of 32 outputs: 32 slices (warps) split each output's 64 elements, to fill the GPU.
  EXPECT_NE(g.code.find("for (int64_t col = slice; col < 64; col += 32)"), std::string::npos) << g.code;

  // Many rows: blocks of 32 threads (301 columns, 10 a thread; odd, so no vector groups), as many as
  // keep target.column_sum_threads resident (1024: 32 a multiprocessor) but at least 16 rows each.
  GeneratedSource many = cuda_source(&column_means_fn, {randn({8192, 301})});
  EXPECT_EQ(many.kernels[0].launch.block, 32);
  EXPECT_EQ(many.kernels[0].launch.grid, 8192 / 16);
  EXPECT_EQ(many.kernels[0].workspace_bytes, 2 * 512 * 301 * 4) << "two column sums";
  EXPECT_NE(many.code.find("(total / double(8192.0))"), std::string::npos) << "the mean's divisor:\n" << many.code;
  // Rows of 8192 floats: blocks of 512 threads, 2 a multiprocessor (bounded so): 264 blocks would
  // take 31 or 32 rows, so 256 take 32 each.
  GeneratedSource wide = cuda_source(&columns_fn, {empty({8192, 8192})});
  EXPECT_EQ(wide.kernels[0].launch.block, 512);
  EXPECT_EQ(wide.kernels[0].launch.grid, 256);
  EXPECT_NE(wide.code.find("__launch_bounds__(512, 2)"), std::string::npos) << wide.code;
  // More rows than 64 a block at that grid (a GPU of 4 multiprocessors: 64 blocks of 64 threads):
  // more blocks, so each float partial adds at most 64 rows.
  static const Target small = cuda_target_for_arch("sm_90", 4);
  testing::Compiled tall = testing::compiled(&columns_fn, {empty({8192, 1024})}, &small);
  GeneratedSource tall_source = generate_cuda(tall.program, tall.schedule, small);
  EXPECT_EQ(tall_source.kernels[0].launch.block, 64);
  EXPECT_EQ(tall_source.kernels[0].launch.grid, 8192 / 64);
  // float64 values: double partials.
  GeneratedSource doubles = cuda_source(&columns_fn, {empty({256, 64}, TensorOptions(DType::Float64))});
  EXPECT_NE(doubles.code.find("double colsum"), std::string::npos) << doubles.code;
  EXPECT_EQ(doubles.kernels[0].workspace_bytes, 16 * 64 * 8);
}

TEST(CudaCodegen, ColumnSumsOfLongerRowsThanRegistersHoldRunAlone) {
  // 1024 threads x 16 columns: rows of 16385 take the column reduction's kernel.
  testing::Compiled gpu = testing::compiled(&columns_fn, {randn({2, 16385})}, &sm90());
  EXPECT_TRUE(gpu.kernel(0).columns.empty());
  testing::Compiled fits = testing::compiled(&columns_fn, {randn({2, 16384})}, &sm90());
  EXPECT_EQ(fits.kernel(0).columns.size(), 1u);
}

// The target's builder compiles the source in parts at once (one per hardware thread at most),
// each part's cubin holding the next kernels in order.
TEST(CudaCodegen, PartsOfASourceCompileAtOnce) {
  testing::Compiled c = testing::compiled(&columns_fn, {randn({64, 48})}, &sm90());
  GeneratedSource g = generate_cuda(c.program, c.schedule, sm90());
  ASSERT_GE(g.kernels.size(), 2u) << g.code;
  BuiltCode b = sm90().build(g, sm90(), BuildPlan{g.kernel_offsets, {}});
  ASSERT_EQ(b.cubins.size(), b.cubin_kernels.size());
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(b.cubins.size(), std::min(threads, g.kernels.size()));
  size_t kernels = 0;
  for (size_t i = 0; i < b.cubins.size(); ++i) {
    EXPECT_EQ(b.cubins[i].substr(0, 4), std::string("\x7f"
                                                    "ELF",
                                                    4))
        << i;
    EXPECT_GE(b.cubin_kernels[i], 1u) << i;
    kernels += b.cubin_kernels[i];
  }
  EXPECT_EQ(kernels, g.kernels.size());
}

std::vector<Tensor> full_fn(const std::vector<Tensor>& in) { return {sum(in[0]), mean(in[1], {1})}; }

TEST(CudaCodegen, FullReductionsAreSplitAmongBlocks) {
  // 4M elements in one row: blocks of 1024 threads, each chunk at least 16 elements a thread, as
  // many as the GPU keeps resident (132 SMs x 2) at most: 256 chunks; 3 rows of 300000: 18 each.
  GeneratedSource g = cuda_source(&full_fn, {randn({1 << 22}), randn({3, 300000})});
  ASSERT_EQ(g.kernels.size(), 2u) << g.code;
  EXPECT_EQ(g.kernels[0].launch.grid, 256) << g.code;
  EXPECT_EQ(g.kernels[1].launch.grid, 3 * 18) << g.code;
  for (const auto& k : g.kernels) EXPECT_GT(k.workspace_bytes, 0) << k.name;
  EXPECT_NE(g.code.find("last = atomicAdd(&arrived[row], 1u) == 255u;"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("if (threadIdx.x == 0) arrived[row] = 0;"), std::string::npos) << g.code;
  EXPECT_NE(g.code.find("unsigned char* __restrict__ kiln_workspace"), std::string::npos) << g.code;
  // What explain and KILN_LOG=output_code print beside the source.
  EXPECT_NE(launch_summary(g).find(fmt::format("// launch {}: 256 blocks of 1024 threads, workspace {} bytes\n",
                                               g.kernels[0].name, g.kernels[0].workspace_bytes)),
            std::string::npos)
      << launch_summary(g);
  // Enough rows to fill the GPU: a block per row, no workspace.
  GeneratedSource rows = cuda_source(&full_fn, {randn({4}), randn({4096, 4096})});
  EXPECT_EQ(rows.kernels.back().workspace_bytes, 0) << rows.code;
}

// Values of each row from its reductions (var's last step, a sum scaled by a value per row from
// outside, a keepdim max read again by the row's elements) are computed once per row by the row
// kernel in each of its forms — a warp per row, a block per row kept in registers or read again,
// one row split among blocks — and stored by its first thread.
std::vector<Tensor> per_row_fn(const std::vector<Tensor>& in) {
  auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
  Tensor scaled = mul(sum(in[0], {1}), in[1]);
  Tensor peak = add(amax(in[0], {1}, true), 1.0);
  return {v, m, scaled, mul(scaled, scaled), peak, div(in[0], peak)};
}
std::vector<Tensor> scaled_total_fn(const std::vector<Tensor>& in) { return {add(mul(sum(in[0]), 2.0), 1.0)}; }

TEST(CudaCodegen, ValuesOfEachRowAreComputedByTheRowKernel) {
  for (int64_t cols : {31, 1500, 20000}) {
    SCOPED_TRACE(cols);
    GeneratedSource g = cuda_source(&per_row_fn, {randn({6, cols}), randn({6})});
    EXPECT_EQ(g.kernels.size(), 1u) << g.code;
    const std::string first = cols == 31 ? "if (lane == 0) buf" : "if (threadIdx.x == 0) buf";
    EXPECT_NE(g.code.find(first), std::string::npos) << g.code;
  }
  GeneratedSource split = cuda_source(&scaled_total_fn, {randn({1 << 22})});
  ASSERT_EQ(split.kernels.size(), 1u) << split.code;
  EXPECT_GT(split.kernels[0].workspace_bytes, 0) << "split among blocks:\n" << split.code;
  // The last block of the row computes and stores it, after the row's total (kept in the kernel).
  const size_t last = split.code.find("if (last) {"), stored = split.code.find("if (threadIdx.x == 0) buf", last);
  ASSERT_NE(last, std::string::npos) << split.code;
  EXPECT_LT(stored, split.code.find("arrived[row] = 0;", last)) << split.code;
}

std::vector<Tensor> empty_fn(const std::vector<Tensor>& in) { return {exp(in[0]), sum(in[0], {1})}; }

TEST(CudaCodegen, EmptyKernelsAreNotLaunched) {
  GeneratedSource g = cuda_source(&empty_fn, {randn({0, 5})});
  for (const auto& k : g.kernels) EXPECT_EQ(k.launch.grid, 0) << k.name;
  // A row of no elements still has a sum: 4 rows of 0 cols.
  GeneratedSource rows = cuda_source(&empty_fn, {randn({4, 0})});
  bool launched = false;
  for (const auto& k : rows.kernels) launched = launched || k.launch.grid > 0;
  EXPECT_TRUE(launched) << rows.code;
}

TEST(CudaCodegen, NvrtcErrorsNameTheSourceAndCarryTheLog) {
  try {
    cuda::compile_cubin("extern \"C\" __global__ void k() { undeclared(); }", "bad.cu", "sm_90", {}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("bad.cu does not compile for sm_90"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kiln::compiler
