// Linear algebra (kernels/cpu/linalg_*.cpp and decomp/linalg_*.cpp) against PyTorch 2.13
// (tests/torch_cases.h): values, dtypes, sizes and strides of every op whose result is unique;
// the decompositions whose vectors are unique only up to sign (svd, eigh) by what defines them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::TorchCase;

std::vector<Tensor> run(const char* op, Stack args) { return call_by_name(op, std::move(args)); }
Tensor one(const char* op, Stack args) { return run(op, std::move(args)).at(0); }
Tensor eye(int64_t m, int64_t n) {
  return to(eq(unsqueeze(arange(Scalar(m), DType::Int64), -1), arange(Scalar(n), DType::Int64)), DType::Float64);
}
Tensor eye(int64_t n) { return eye(n, n); }
Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

// Python spellings and kiln values of the matrices the cases use.
const std::string kG = "(inp([2,3,4,4],1) + 4 * torch.eye(4, dtype=torch.float64))";  // a batch, well conditioned
const std::string kP =                                                                // pivots happen
    "(inp([4,4],2) + torch.diag(torch.tensor([0.5, -1.0, 0.25, 2.0], dtype=torch.float64)))";
const std::string kS = "(inp([4,4],3) @ inp([4,4],3).mT + torch.eye(4, dtype=torch.float64))";  // SPD
const std::string kB = "inp([2,3,4,2],5)";
const std::string kTall = "(inp([5,3],6) + torch.eye(5, 3, dtype=torch.float64))";  // full rank
const std::string kWide = "(inp([3,5],7) - torch.eye(3, 5, dtype=torch.float64))";
Tensor G() { return add(case_input({2, 3, 4, 4}, 1), mul(eye(4), Scalar(4))); }
Tensor P() { return add(case_input({4, 4}, 2), diag_embed(from_vector<double>({0.5, -1.0, 0.25, 2.0}))); }
Tensor S() {
  Tensor a = case_input({4, 4}, 3);
  return add(matmul(a, mT(a)), eye(4));
}
Tensor B() { return case_input({2, 3, 4, 2}, 5); }
Tensor Tall() { return add(case_input({5, 3}, 6), eye(5, 3)); }
Tensor Wide() { return sub(case_input({3, 5}, 7), eye(3, 5)); }

TEST(Linalg, FactorizationsAndSolvesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor g = G(), p = P(), s = S(), b = B();
  Tensor v = case_input({4}, 8), bt = case_input({2, 4}, 9);
  auto lu = run("aten::linalg_lu_factor", {p, true});
  Tensor l = one("aten::linalg_cholesky", {s, false});
  Tensor up = triu(p);
  std::vector<TorchCase> cases = {
      {"torch.linalg.det(" + kG + ")", {linalg_det(g)}},
      {"torch.linalg.det(" + kP + ")", {linalg_det(p)}},
      {"torch.linalg.slogdet(" + kP + ")", run("aten::linalg_slogdet", {p})},
      {"torch.logdet(" + kS + ")", {one("aten::logdet", {s})}},
      {"torch.logdet(" + kP + ")", {one("aten::logdet", {p})}},
      {"torch.linalg.inv(" + kG + ")", {linalg_inv(g)}},
      {"torch.linalg.inv_ex(" + kP + ")", run("aten::linalg_inv_ex", {p, false})},
      {"torch.linalg.solve(" + kG + ", " + kB + ")", {linalg_solve(g, b)}},
      {"torch.linalg.solve(" + kP + ", inp([4],8))", {linalg_solve(p, v)}},
      {"torch.linalg.solve(" + kP + ", inp([2,4],9), left=False)", {linalg_solve(p, bt, false)}},
      {"torch.linalg.cholesky(" + kS + ")", {l}},
      {"torch.linalg.cholesky(" + kS + ", upper=True)", {linalg_cholesky(s, true)}},
      {"torch.cholesky_solve(" + kB + ", torch.linalg.cholesky(" + kS + "))",
       {one("aten::cholesky_solve", {b, l, false})}},
      {"torch.cholesky_solve(" + kB + ", torch.linalg.cholesky(" + kS + ").mT, upper=True)",
       {one("aten::cholesky_solve", {b, mT(l), true})}},
      {"torch.cholesky_inverse(torch.linalg.cholesky(" + kS + "))", {one("aten::cholesky_inverse", {l, false})}},
      {"torch.linalg.solve_triangular(torch.triu(" + kP + "), " + kB + ", upper=True)",
       {linalg_solve_triangular(up, b, true)}},
      {"torch.linalg.solve_triangular(" + kP + ", inp([2,4],9), upper=False, left=False, unitriangular=True)",
       {linalg_solve_triangular(p, bt, false, false, true)}},
      {"torch.triangular_solve(" + kB + ", " + kP + ", upper=False, transpose=True)",
       run("aten::triangular_solve", {b, p, false, true, false})},
      {"torch.linalg.lu_factor(" + kP + ")", lu},
      {"torch.lu_unpack(*torch.linalg.lu_factor(" + kP + "))", run("aten::lu_unpack", {lu[0], lu[1], true, true})},
      {"torch.linalg.lu(" + kTall + ")", run("aten::linalg_lu", {Tall(), true})},
      {"torch.linalg.lu_solve(*torch.linalg.lu_factor(" + kP + "), " + kB + ")",
       {one("aten::linalg_lu_solve", {lu[0], lu[1], b, true, false})}},
      {"torch.linalg.lu_solve(*torch.linalg.lu_factor(" + kP + "), " + kB + ", adjoint=True)",
       {one("aten::linalg_lu_solve", {lu[0], lu[1], b, true, true})}},
      {"torch.linalg.lu_solve(*torch.linalg.lu_factor(" + kP + "), inp([2,4],9), left=False)",
       {one("aten::linalg_lu_solve", {lu[0], lu[1], bt, false, false})}},
      {"torch.lu_solve(" + kB + ", *torch.linalg.lu_factor(" + kP + "))", {one("aten::lu_solve", {b, lu[0], lu[1]})}},
      // LAPACK's LDL^T factors as torch.linalg.ldl_factor writes them: 1x1 blocks with row swaps, a
      // 2x2 block (negative pivots) with one.
      {"torch.linalg.ldl_solve(" + kP + ", torch.tensor([2, -4, -4, 4], dtype=torch.int32), " + kB + ")",
       {one("aten::linalg_ldl_solve", {p, from_vector<int32_t>({2, -4, -4, 4}), b, false})}},
      {"torch.linalg.ldl_solve(" + kP + ", torch.tensor([1, 3, 3, 4], dtype=torch.int32), inp([2,4],9).mT)",
       {one("aten::linalg_ldl_solve", {p, from_vector<int32_t>({1, 3, 3, 4}), mT(bt), false})}},
      {"torch.linalg.matrix_exp(0.5 * " + kP + ")", {linalg_matrix_exp(mul(p, Scalar(0.5)))}},
      {"torch.linalg.matrix_exp(40 * " + kP + ")", {linalg_matrix_exp(mul(p, Scalar(40)))}},
      // float32: PyTorch's float64 value on the same float32 input, rounded (kiln computes in double).
      {"torch.linalg.matrix_exp(" + kG + ".float().double()).float()", {linalg_matrix_exp(to(g, DType::Float32))}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

TEST(Linalg, QrAndReflectorsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor tall = Tall(), wide = Wide();
  auto qrf = run("aten::geqrf", {tall});
  Tensor c = case_input({5, 2}, 10), cr = case_input({2, 5}, 11);
  std::vector<TorchCase> cases = {
      {"torch.geqrf(" + kTall + ")", qrf},
      {"torch.linalg.householder_product(*torch.geqrf(" + kTall + "))",
       {one("aten::linalg_householder_product", {qrf[0], qrf[1]})}},
      {"torch.linalg.qr(" + kTall + ")", run("aten::linalg_qr", {tall, "reduced"})},
      {"torch.linalg.qr(" + kTall + ", mode=\"complete\")", run("aten::linalg_qr", {tall, "complete"})},
      {"torch.linalg.qr(" + kWide + ")", run("aten::linalg_qr", {wide, "reduced"})},
      {"torch.linalg.qr(" + kTall + ", mode=\"r\")", run("aten::linalg_qr", {tall, "r"})},
      {"torch.ormqr(*torch.geqrf(" + kTall + "), inp([5,2],10))",
       {one("aten::ormqr", {qrf[0], qrf[1], c, true, false})}},
      {"torch.ormqr(*torch.geqrf(" + kTall + "), inp([2,5],11), left=False, transpose=True)",
       {one("aten::ormqr", {qrf[0], qrf[1], cr, false, true})}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

TEST(Linalg, SpectralOpsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor s = S(), tall = Tall(), wide = Wide(), g = G();
  Tensor low_rank = matmul(tall, mT(tall));  // 5 x 5 of rank 3
  Tensor x = case_input({2, 4}, 12);
  Tensor t = reshape(add(case_input({8, 8}, 13), mul(eye(8), Scalar(4))), {4, 2, 2, 4});
  Tensor a3 = add(case_input({2, 3, 6}, 14), reshape(mul(eye(6), Scalar(3)), {2, 3, 6}));
  Tensor b2 = case_input({2, 3}, 15);
  const std::string kLowRank = "(" + kTall + " @ " + kTall + ".mT)";
  std::vector<TorchCase> cases = {
      {"torch.linalg.eigvalsh(" + kS + ")", {one("aten::linalg_eigvalsh", {s, "L"})}},
      {"torch.linalg.eigvalsh(torch.triu(" + kS + " + inp([4,4],4)), UPLO=\"U\")",
       {one("aten::linalg_eigvalsh", {triu(add(s, case_input({4, 4}, 4))), "U"})}},
      {"torch.linalg.svdvals(" + kTall + ")", {linalg_svdvals(tall)}},
      {"torch.linalg.svdvals(" + kWide + ")", {linalg_svdvals(wide)}},
      {"torch.linalg.svdvals(" + kG + ")", {linalg_svdvals(g)}},
      {"torch.linalg.pinv(" + kTall + ")",
       {one("aten::linalg_pinv.atol_rtol_tensor", {tall, Value(), Value(), false})}},
      {"torch.linalg.pinv(" + kLowRank + ", hermitian=True)",
       {one("aten::linalg_pinv.atol_rtol_tensor", {low_rank, Value(), Value(), true})}},
      {"torch.linalg.pinv(" + kWide + ", atol=0.5)",
       {one("aten::linalg_pinv.atol_rtol_float", {wide, 0.5, Value(), false})}},
      {"torch.pinverse(" + kLowRank + ")", {one("aten::pinverse", {low_rank, 1e-15})}},
      {"torch.linalg.matrix_rank(" + kLowRank + ")",
       {one("aten::linalg_matrix_rank.atol_rtol_tensor", {low_rank, Value(), Value(), false})}},
      {"torch.linalg.matrix_rank(" + kLowRank + ", hermitian=True)",
       {one("aten::linalg_matrix_rank.atol_rtol_tensor", {low_rank, Value(), Value(), true})}},
      {"torch.linalg.matrix_rank(" + kG + ", rtol=0.6)",
       {one("aten::linalg_matrix_rank.atol_rtol_float", {g, Value(), 0.6, false})}},
      {"torch.linalg.cond(" + kG + ")", {one("aten::linalg_cond", {g, Value()})}},
      {"torch.linalg.cond(" + kG + ", -2)", {one("aten::linalg_cond", {g, Scalar(-2)})}},
      {"torch.linalg.cond(" + kG + ", 1)", {one("aten::linalg_cond", {g, Scalar(1)})}},
      {"torch.linalg.cond(" + kG + ", float(\"inf\"))",
       {one("aten::linalg_cond", {g, Scalar(std::numeric_limits<double>::infinity())})}},
      {"torch.linalg.cond(" + kG + ", \"nuc\")", {one("aten::linalg_cond.p_str", {g, "nuc"})}},
      {"torch.linalg.cond(torch.zeros(3, 3, dtype=torch.float64), \"fro\")",
       {one("aten::linalg_cond.p_str", {zeros({3, 3}, DType::Float64), "fro"})}},
      {"torch.linalg.vander(inp([2,4],12))", {one("aten::linalg_vander", {x, Value()})}},
      {"torch.linalg.vander(torch.tensor([1, 2, 3]), N=5)",
       {one("aten::linalg_vander", {from_vector<int64_t>({1, 2, 3}), int64_t{5}})}},
      {"torch.linalg.tensorinv((inp([8,8],13) + 4 * torch.eye(8, dtype=torch.float64)).reshape(4,2,2,4))",
       {one("aten::linalg_tensorinv", {t, int64_t{2}})}},
      {"torch.linalg.tensorsolve(inp([2,3,6],14) + (3 * torch.eye(6, dtype=torch.float64)).reshape(2,3,6), inp([2,3],15))",
       {one("aten::linalg_tensorsolve", {a3, b2, Value()})}},
  };
  const char* ords[] = {"fro", "nuc"};
  for (const char* o : ords)
    cases.push_back(
        {std::string("torch.linalg.matrix_norm(") + kTall + ", \"" + o + "\")",
         {one("aten::linalg_matrix_norm.str_ord", {tall, o, std::vector<int64_t>{-2, -1}, false, Value()})}});
  const double inf = std::numeric_limits<double>::infinity();
  for (double o : std::initializer_list<double>{1.0, -1.0, 2.0, -2.0, inf, -inf}) {
    std::string spelled = std::isinf(o) ? (o > 0 ? "float(\"inf\")" : "-float(\"inf\")") : std::to_string(o);
    // (The strides of the kept size-1 dims are not compared: they address nothing.)
    cases.push_back({"torch.linalg.matrix_norm(" + kG + ", " + spelled + ", dim=(1, 3), keepdim=True)",
                     {one("aten::linalg_matrix_norm", {g, Scalar(o), std::vector<int64_t>{1, 3}, true, Value()})},
                     false});
    cases.push_back({"torch.linalg.norm(" + kWide + ", " + spelled + ")",
                     {one("aten::linalg_norm", {wide, Scalar(o), Value(), false, Value()})}});
  }
  cases.push_back({"torch.linalg.norm(" + kG + ")", {one("aten::linalg_norm", {g, Value(), Value(), false, Value()})}});
  cases.push_back({"torch.linalg.norm(" + kG + ", 3, dim=1)",
                   {one("aten::linalg_norm", {g, Scalar(3.0), std::vector<int64_t>{1}, false, Value()})}});
  cases.push_back({"torch.linalg.norm(" + kG + ", dim=(2, 0))",
                   {one("aten::linalg_norm", {g, Value(), std::vector<int64_t>{2, 0}, false, Value()})}});
  cases.push_back({"torch.linalg.norm(" + kTall + ", \"nuc\")",
                   {one("aten::linalg_norm.ord_str", {tall, "nuc", Value(), false, Value()})}});
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

// The largest |x - y| over all elements.
double max_diff(const Tensor& x, const Tensor& y) { return amax(abs(sub(x, y))).item<double>(); }

// svd and eigh: the vectors are unique only up to sign, so they are checked by what defines them
// (orthonormal, reconstructing the input) and the values against PyTorch's (above).
TEST(Linalg, SvdAndEighReconstructTheirInputs) {
  for (const Tensor& a : {Tall(), Wide(), G(), matmul(Tall(), mT(Tall())), zeros({3, 2}, DType::Float64)}) {
    SCOPED_TRACE(a.describe());
    for (bool full : {false, true}) {
      auto [u, s, vh] = linalg_svd(a, full);
      int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
      EXPECT_EQ(u.size(-1), full ? m : k);
      EXPECT_EQ(vh.size(-2), full ? n : k);
      EXPECT_LT(max_diff(matmul(mT(u), u), eye(u.size(-1))), 1e-12);
      EXPECT_LT(max_diff(matmul(vh, mT(vh)), eye(vh.size(-2))), 1e-12);
      Tensor us = mul(slice(u, -1, 0, k), unsqueeze(s, -2));
      EXPECT_LT(max_diff(matmul(us, slice(vh, -2, 0, k)), a), 1e-12);
      // Descending and non-negative.
      EXPECT_EQ(lt(s, Scalar(0)).sum().item<int64_t>(), 0);
      if (k > 1) {
        EXPECT_EQ(lt(slice(s, -1, 0, k - 1), slice(s, -1, 1, k)).sum().item<int64_t>(), 0);
      }
    }
  }
  Tensor sym = S();
  auto [w, v] = linalg_eigh(sym);
  EXPECT_LT(max_diff(matmul(mul(v, unsqueeze(w, -2)), mT(v)), sym), 1e-12);
  EXPECT_LT(max_diff(matmul(mT(v), v), eye(4)), 1e-12);
  // float32 results round the double computation once.
  auto [u32, s32, vh32] = linalg_svd(to(Tall(), DType::Float32), false);
  EXPECT_EQ(u32.dtype(), DType::Float32);
  EXPECT_LT(max_diff(to(s32, DType::Float64), linalg_svdvals(Tall())), 1e-6);
}

TEST(Linalg, BadInputsRaiseNamingTheOp) {
  Tensor singular = zeros({3, 3}, DType::Float64);
  EXPECT_KILN_ERROR(linalg_inv(singular), "linalg.inv", "singular");
  EXPECT_KILN_ERROR(linalg_inv(stack(std::vector<Tensor>{eye(3), singular})), "linalg.inv", "(Batch element 1)");
  EXPECT_KILN_ERROR(linalg_solve(singular, eye(3)), "linalg.solve", "singular");
  EXPECT_KILN_ERROR(linalg_cholesky(neg(eye(3))), "linalg.cholesky", "positive-definite", "order 1");
  EXPECT_KILN_ERROR(linalg_det(Tall()), "linalg.det", "square", "5 by 3");
  EXPECT_KILN_ERROR(linalg_inv(to(eye(3), DType::Int64)), "float32 or float64", "int64");
  EXPECT_KILN_ERROR(linalg_inv(to(eye(3), DType::BFloat16)), "float32 or float64");
  EXPECT_KILN_ERROR(run("aten::linalg_eigh", {S(), "X"}), "linalg.eigh", "UPLO");
  EXPECT_KILN_ERROR(linalg_solve(P(), case_input({3, 2}, 1)), "Incompatible shapes", "4x4", "3x2");
  EXPECT_KILN_ERROR(linalg_solve_triangular(P(), case_input({2, 3}, 1), true, false), "linalg.solve_triangular",
                    "XA = B");
  EXPECT_KILN_ERROR(run("aten::linalg_householder_product", {Wide(), case_input({3}, 1)}), "householder_product",
                    "input.shape[-2]");
  EXPECT_KILN_ERROR(run("aten::linalg_qr", {Tall(), "full"}), "qr", "'full'");
  EXPECT_KILN_ERROR(
      one("aten::linalg_matrix_norm", {Tall(), Scalar(3.0), std::vector<int64_t>{-2, -1}, false, Value()}),
      "linalg.matrix_norm", "Order 3");
  EXPECT_KILN_ERROR(linalg_svdvals(to(Tall(), DType::Int32)), "linalg.svd", "int32");
  EXPECT_KILN_ERROR(one("aten::linalg_tensorinv", {case_input({2, 3}, 1), int64_t{1}}), "tensorinv", "3 != 2");
  // A singular matrix's LU is returned (info names the zero pivot); lu_factor itself refuses it.
  auto ex = run("aten::linalg_lu_factor_ex", {singular, true, false});
  EXPECT_EQ(ex[2].item<int64_t>(), 1);
  EXPECT_KILN_ERROR(run("aten::linalg_lu_factor", {singular, true}), "linalg.lu_factor", "U[1,1] is zero");
}

// Empty matrices and batches give results of the right sizes, as PyTorch's.
TEST(Linalg, EmptyInputs) {
  Tensor none = zeros({0, 0}, DType::Float64), batch0 = zeros({0, 3, 3}, DType::Float64);
  EXPECT_EQ(linalg_det(none).item<double>(), 1.0);
  EXPECT_EQ(linalg_inv(batch0).sizes().vec(), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(linalg_svdvals(zeros({2, 0, 4}, DType::Float64)).sizes().vec(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(linalg_solve(none, zeros({0, 2}, DType::Float64)).sizes().vec(), (std::vector<int64_t>{0, 2}));
}

}  // namespace
}  // namespace kiln
