#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device/cuda/gemm_plan.h"

// How a GEMM plan chooses among cuBLASLt's heuristic results and falls back when cublasLtMatmul
// refuses an algorithm, with a fake matmul: no GPU.

namespace loom::cuda {
namespace {

// An algorithm told apart by |id| (the first word of cuBLASLt's opaque algo).
GemmAlgorithm Algorithm(uint64_t id, int64_t workspace_bytes = 0) {
  GemmAlgorithm algorithm;
  algorithm.algo.data[0] = id;
  algorithm.workspace_bytes = workspace_bytes;
  return algorithm;
}

cublasLtMatmulHeuristicResult_t HeuristicResult(uint64_t id, cublasStatus_t state,
                                                size_t workspace_bytes) {
  cublasLtMatmulHeuristicResult_t result = {};
  result.algo.data[0] = id;
  result.state = state;
  result.workspaceSize = workspace_bytes;
  return result;
}

std::vector<uint64_t> Ids(const std::vector<GemmAlgorithm>& algorithms) {
  std::vector<uint64_t> ids;
  for (const GemmAlgorithm& algorithm : algorithms) ids.push_back(algorithm.algo.data[0]);
  return ids;
}

// A matmul that refuses the algorithms in |refused|, fails with Internal for |broken|, and records
// the algorithms it was called with.
struct FakeMatmul {
  std::vector<uint64_t> refused;
  uint64_t broken = 0;
  std::vector<uint64_t> calls;

  GemmMatmulCall Call() {
    return [this](const GemmAlgorithm& algorithm) {
      const uint64_t id = algorithm.algo.data[0];
      calls.push_back(id);
      if (id == broken) return Status::Internal("cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED");
      for (uint64_t r : refused) {
        if (r == id)
          return Status::Unimplemented("cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED for " +
                                       std::to_string(id));
      }
      return Status::Ok();
    };
  }
};

TEST(UsableAlgorithms, KeepsTheOfferedOnesThatFitInTheHeuristicsOrder) {
  const std::vector<cublasLtMatmulHeuristicResult_t> results = {
      HeuristicResult(1, CUBLAS_STATUS_SUCCESS, 1 << 20),
      HeuristicResult(2, CUBLAS_STATUS_NOT_SUPPORTED, 0),
      HeuristicResult(3, CUBLAS_STATUS_SUCCESS, 64 << 20),
      HeuristicResult(4, CUBLAS_STATUS_SUCCESS, 0),
      HeuristicResult(5, CUBLAS_STATUS_SUCCESS, kGemmWorkspaceBytes)};
  const std::vector<GemmAlgorithm> usable = UsableAlgorithms(results, kGemmWorkspaceBytes);
  EXPECT_EQ(Ids(usable), (std::vector<uint64_t>{1, 4, 5}));
  ASSERT_EQ(usable.size(), 3u);
  EXPECT_EQ(usable[0].workspace_bytes, 1 << 20);
  EXPECT_EQ(usable[2].workspace_bytes, kGemmWorkspaceBytes);
  EXPECT_TRUE(UsableAlgorithms({}, kGemmWorkspaceBytes).empty());
}

TEST(RunFirstAccepted, RunsTheFirstAlgorithmOnceWhenItIsAccepted) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1), Algorithm(2)};
  FakeMatmul matmul;
  EXPECT_TRUE(RunFirstAccepted(algorithms, kGemmWorkspaceBytes, matmul.Call()).ok());
  EXPECT_EQ(matmul.calls, (std::vector<uint64_t>{1}));
  EXPECT_EQ(Ids(algorithms), (std::vector<uint64_t>{1, 2}));
}

TEST(RunFirstAccepted, FallsBackPastRefusedAlgorithmsAndForgetsThem) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1), Algorithm(2), Algorithm(3), Algorithm(4)};
  FakeMatmul matmul;
  matmul.refused = {1, 2};
  EXPECT_TRUE(RunFirstAccepted(algorithms, kGemmWorkspaceBytes, matmul.Call()).ok());
  EXPECT_EQ(matmul.calls, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Ids(algorithms), (std::vector<uint64_t>{3, 4}));
  // The next run goes straight to the algorithm that ran.
  matmul.calls.clear();
  EXPECT_TRUE(RunFirstAccepted(algorithms, kGemmWorkspaceBytes, matmul.Call()).ok());
  EXPECT_EQ(matmul.calls, (std::vector<uint64_t>{3}));
}

TEST(RunFirstAccepted, SkipsWithoutForgettingAlgorithmsThatNeedMoreWorkspace) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1, 8 << 20), Algorithm(2, 1 << 20)};
  FakeMatmul matmul;
  EXPECT_TRUE(RunFirstAccepted(algorithms, 4 << 20, matmul.Call()).ok());
  EXPECT_EQ(matmul.calls, (std::vector<uint64_t>{2}));
  EXPECT_EQ(Ids(algorithms), (std::vector<uint64_t>{1, 2}));
}

TEST(RunFirstAccepted, SaysWhatWorkspaceIsNeededWhenNoneFits) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1, 8 << 20), Algorithm(2, 2 << 20)};
  FakeMatmul matmul;
  Status status = RunFirstAccepted(algorithms, 1 << 20, matmul.Call());
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "RunGemm: the GEMM's algorithms need a workspace of at least 2097152 bytes; 1048576 "
            "were given");
  EXPECT_TRUE(matmul.calls.empty());
}

TEST(RunFirstAccepted, ReportsTheFirstRefusalAndKeepsThePlanWhenAllAreRefused) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1), Algorithm(2)};
  FakeMatmul matmul;
  matmul.refused = {1, 2};
  Status status = RunFirstAccepted(algorithms, kGemmWorkspaceBytes, matmul.Call());
  EXPECT_EQ(status.code(), Status::Code::kUnimplemented);
  EXPECT_EQ(status.message(),
            "cuBLASLt refused each of the 2 algorithms of the GEMM's plan that fit in the "
            "workspace; the first: cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED for 1");
  EXPECT_EQ(Ids(algorithms), (std::vector<uint64_t>{1, 2}));
}

TEST(RunFirstAccepted, ReturnsOtherFailuresWithoutFallingBack) {
  std::vector<GemmAlgorithm> algorithms = {Algorithm(1), Algorithm(2), Algorithm(3)};
  FakeMatmul matmul;
  matmul.refused = {1};
  matmul.broken = 2;
  Status status = RunFirstAccepted(algorithms, kGemmWorkspaceBytes, matmul.Call());
  EXPECT_EQ(status.code(), Status::Code::kInternal);
  EXPECT_EQ(matmul.calls, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Ids(algorithms), (std::vector<uint64_t>{2, 3}));
}

TEST(GemmOutputBytes, AccumulatingIntoFp32WritesFourBytesOnlyWhenHonoured) {
  GemmShape shape{4096, 1280, 8192, 1, Dtype::kBf16};
  EXPECT_EQ(GemmOutputBytes(shape, Fp32Accumulation::kHonour), 2);
  shape.accumulate_fp32 = true;
  EXPECT_EQ(GemmOutputBytes(shape, Fp32Accumulation::kHonour), 4);
  // The executor's operand arena sizes C by the dtype; its plans ignore the flag.
  EXPECT_EQ(GemmOutputBytes(shape, Fp32Accumulation::kIgnore), 2);
  shape.dtype = Dtype::kFp8;
  EXPECT_EQ(GemmOutputBytes(shape, Fp32Accumulation::kHonour), 4);
  EXPECT_EQ(GemmOutputBytes(shape, Fp32Accumulation::kIgnore), 2);
}

}  // namespace
}  // namespace loom::cuda
