#include "device/cuda/gemm_plan.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "op/op_json.h"

namespace loom::cuda {
namespace {

using Preference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, CublasLtDeleter>;

// A column-major |rows| x |cols| matrix with leading dimension |ld|, repeated |batch| times
// |rows| * |cols| elements apart.
Result<MatrixLayout> MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                int64_t batch) {
  cublasLtMatrixLayout_t raw = nullptr;
  LOOM_CUBLAS(cublasLtMatrixLayoutCreate(&raw, type, static_cast<uint64_t>(rows),
                                         static_cast<uint64_t>(cols), ld));
  MatrixLayout layout(raw);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = rows * cols;
    LOOM_CUBLAS(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof count));
    LOOM_CUBLAS(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &stride, sizeof stride));
  }
  return layout;
}

// The operation: fp32 alpha and beta; for fp8, cuBLASLt's A transposed and the per-tensor scales
// of A and B both read from |unit_scale| (a device float of 1.0). Fast fp8 accumulation
// (CUBLASLT_MATMUL_DESC_FAST_ACCUM) stays off, its default: Transformer Engine turns it on for the
// forward GEMM only and accumulates dgrad and wgrad in full precision (_2X_ACC_DGRAD,
// _2X_ACC_WGRAD), so two of a layer's three fp8 GEMMs run as measured here.
Result<MatmulDesc> MakeDesc(const GemmTypes& types, bool fp8, const float* unit_scale) {
  cublasLtMatmulDesc_t raw = nullptr;
  LOOM_CUBLAS(cublasLtMatmulDescCreate(&raw, types.compute, CUDA_R_32F));
  MatmulDesc desc(raw);
  const int32_t trans_a = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t trans_b = CUBLAS_OP_N;
  LOOM_CUBLAS(
      cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  LOOM_CUBLAS(
      cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (fp8) {
    LOOM_CUBLAS(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                               &unit_scale, sizeof unit_scale));
    LOOM_CUBLAS(cublasLtMatmulDescSetAttribute(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                               &unit_scale, sizeof unit_scale));
  }
  return desc;
}

// Up to kGemmHeuristicAlgorithms algorithms the heuristic offers for the plan's descriptors within
// kGemmWorkspaceBytes, best first; Unimplemented, naming |what|, when it offers none.
Result<std::vector<GemmAlgorithm>> AskHeuristic(cublasLtHandle_t handle, const GemmPlan& plan,
                                                const std::string& what) {
  cublasLtMatmulPreference_t raw_preference = nullptr;
  LOOM_CUBLAS(cublasLtMatmulPreferenceCreate(&raw_preference));
  Preference preference(raw_preference);
  const uint64_t workspace_bytes = kGemmWorkspaceBytes;
  LOOM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(raw_preference,
                                                   CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_bytes, sizeof workspace_bytes));
  std::array<cublasLtMatmulHeuristicResult_t, kGemmHeuristicAlgorithms> results = {};
  int returned = 0;
  LOOM_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.a.get(), plan.b.get(),
                                             plan.d.get(), plan.d.get(), raw_preference,
                                             kGemmHeuristicAlgorithms, results.data(), &returned));
  std::vector<GemmAlgorithm> usable =
      UsableAlgorithms(std::span(results).first(
                           static_cast<size_t>(std::clamp(returned, 0, kGemmHeuristicAlgorithms))),
                       kGemmWorkspaceBytes);
  if (usable.empty())
    return Status::Unimplemented(what + ": cuBLASLt's heuristic found no algorithm for it");
  return usable;
}

// The algorithms of |offered| that cublasLtMatmulAlgoCheck accepts for the plan's descriptors, with
// the workspace it says each needs; Unimplemented, naming |what| and the first refusal, when it
// accepts none.
Result<std::vector<GemmAlgorithm>> CheckAlgorithms(cublasLtHandle_t handle, const GemmPlan& plan,
                                                   const std::vector<GemmAlgorithm>& offered,
                                                   const std::string& what) {
  std::vector<GemmAlgorithm> accepted;
  Status first_refusal;
  for (const GemmAlgorithm& algorithm : offered) {
    cublasLtMatmulHeuristicResult_t result = {};
    Status checked =
        CheckCublas(cublasLtMatmulAlgoCheck(handle, plan.desc.get(), plan.a.get(), plan.b.get(),
                                            plan.d.get(), plan.d.get(), &algorithm.algo, &result),
                    "cublasLtMatmulAlgoCheck", __FILE__, __LINE__);
    const int64_t needed = static_cast<int64_t>(result.workspaceSize);
    if (checked.ok() && needed <= kGemmWorkspaceBytes) {
      accepted.push_back({algorithm.algo, std::max(needed, algorithm.workspace_bytes)});
    } else if (first_refusal.ok()) {
      first_refusal = checked.ok() ? Status::Unimplemented(
                                         "cublasLtMatmulAlgoCheck: the algorithm needs a "
                                         "workspace of " +
                                         std::to_string(needed) + " bytes")
                                   : checked;
    }
  }
  if (!accepted.empty()) return accepted;
  return first_refusal.WithContext(what + ": cuBLASLt refused each of the " +
                                   std::to_string(offered.size()) +
                                   " algorithms its heuristic offered; the first");
}

bool Accumulates(const GemmShape& shape, Fp32Accumulation accumulation) {
  return shape.accumulate_fp32 && accumulation == Fp32Accumulation::kHonour;
}

}  // namespace

std::vector<GemmAlgorithm> UsableAlgorithms(
    std::span<const cublasLtMatmulHeuristicResult_t> results, int64_t max_workspace_bytes) {
  std::vector<GemmAlgorithm> usable;
  for (const cublasLtMatmulHeuristicResult_t& result : results) {
    const int64_t workspace_bytes = static_cast<int64_t>(result.workspaceSize);
    if (result.state == CUBLAS_STATUS_SUCCESS && workspace_bytes <= max_workspace_bytes) {
      usable.push_back({result.algo, workspace_bytes});
    }
  }
  return usable;
}

Status RunFirstAccepted(std::vector<GemmAlgorithm>& algorithms, int64_t workspace_bytes,
                        const GemmMatmulCall& matmul) {
  std::vector<size_t> refused;
  Status first_refusal;
  for (size_t i = 0; i < algorithms.size(); ++i) {
    if (algorithms[i].workspace_bytes > workspace_bytes) continue;
    Status status = matmul(algorithms[i]);
    if (status.code() != Status::Code::kUnimplemented) {
      for (auto at = refused.rbegin(); at != refused.rend(); ++at)
        algorithms.erase(algorithms.begin() + *at);
      return status;
    }
    if (first_refusal.ok()) first_refusal = status;
    refused.push_back(i);
  }
  if (!refused.empty()) {
    return first_refusal.WithContext(
        "cuBLASLt refused each of the " + std::to_string(refused.size()) +
        " algorithms of the GEMM's plan that fit in the workspace; the first");
  }
  int64_t least_bytes = INT64_MAX;
  for (const GemmAlgorithm& algorithm : algorithms)
    least_bytes = std::min(least_bytes, algorithm.workspace_bytes);
  return Status::InvalidArgument("RunGemm: the GEMM's algorithms need a workspace of at least " +
                                 std::to_string(least_bytes) + " bytes; " +
                                 std::to_string(workspace_bytes) + " were given");
}

GemmTypes GemmTypesOf(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, Dtype::kBf16, 2, 2};
    case Dtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, Dtype::kFp16, 2, 2};
    case Dtype::kFp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, Dtype::kFp8, 1, 2};
    case Dtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, Dtype::kTf32, 4, 4};
    case Dtype::kFp32:
      break;
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, Dtype::kFp32, 4, 4};
}

Status CheckGemmShape(const GemmShape& shape, int compute_capability) {
  const std::string what = DescribeShape(shape);
  for (int64_t dim : {shape.m, shape.n, shape.k, shape.batch}) {
    if (dim <= 0 || dim > INT_MAX) {
      return Status::InvalidArgument(
          what + ": m, n, k and batch must be positive and below 2^31 (cuBLASLt's limit)");
    }
  }
  // Guards the byte counts of the callers against overflow: no GPU holds a matrix of 2^40 elements.
  const double batch = static_cast<double>(shape.batch);
  const double m = static_cast<double>(shape.m), n = static_cast<double>(shape.n),
               k = static_cast<double>(shape.k);
  if (batch * std::max({m * k, k * n, m * n}) > 0x1p40) {
    return Status::ResourceExhausted(
        what + ": a matrix of more than 2^40 elements does not fit in GPU memory");
  }
  if (shape.dtype != Dtype::kFp8) return Status::Ok();
  if (compute_capability < 89) {
    return Status::Unimplemented(
        what +
        ": fp8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, Hopper); "
        "this one is " +
        std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10));
  }
  if (shape.m % 16 != 0 || shape.n % 16 != 0 || shape.k % 16 != 0) {
    return Status::Unimplemented(what +
                                 ": cuBLASLt's fp8 GEMMs need m, n and k to be multiples of 16");
  }
  return Status::Ok();
}

Result<int> CurrentComputeCapability() {
  int device = 0, major = 0, minor = 0;
  LOOM_CUDA(cudaGetDevice(&device));
  LOOM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  LOOM_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

Result<DeviceBuffer> MakeUnitScale(cudaStream_t stream) {
  static constexpr float kOne = 1.0f;
  Result<DeviceBuffer> scale = AllocateDevice(sizeof kOne);
  if (!scale.ok()) return scale;
  LOOM_CUDA(cudaMemcpyAsync(scale->get(), &kOne, sizeof kOne, cudaMemcpyHostToDevice, stream));
  return scale;
}

int64_t GemmOutputBytes(const GemmShape& shape, Fp32Accumulation accumulation) {
  return Accumulates(shape, accumulation) ? 4 : GemmTypesOf(shape.dtype).output_bytes;
}

Result<GemmPlan> PlanGemm(cublasLtHandle_t handle, const GemmShape& shape, int compute_capability,
                          const float* unit_scale, Fp32Accumulation accumulation) {
  LOOM_RETURN_IF_ERROR(CheckGemmShape(shape, compute_capability));
  const GemmTypes types = GemmTypesOf(shape.dtype);
  const bool fp8 = shape.dtype == Dtype::kFp8;
  if (fp8 && unit_scale == nullptr) {
    return Status::InvalidArgument(DescribeShape(shape) +
                                   ": an fp8 GEMM needs the device scale of 1.0 "
                                   "(MakeUnitScale); none was given");
  }
  LOOM_ASSIGN_OR_RETURN(MatmulDesc desc, MakeDesc(types, fp8, unit_scale));
  // loom's B: [k, n] row-major is column-major n x k (ld n); for fp8, [n, k] row-major is
  // column-major k x n (ld k), which cuBLASLt transposes.
  LOOM_ASSIGN_OR_RETURN(MatrixLayout a,
                        fp8 ? MakeLayout(types.input, shape.k, shape.n, shape.k, shape.batch)
                            : MakeLayout(types.input, shape.n, shape.k, shape.n, shape.batch));
  LOOM_ASSIGN_OR_RETURN(MatrixLayout b, MakeLayout(types.input, shape.k, shape.m, shape.k,
                                                   shape.batch));  // loom's A[m, k]
  const bool accumulate = Accumulates(shape, accumulation);
  const cudaDataType_t output = accumulate ? CUDA_R_32F : types.output;
  LOOM_ASSIGN_OR_RETURN(MatrixLayout d, MakeLayout(output, shape.n, shape.m, shape.n,
                                                   shape.batch));  // loom's C[m, n]

  GemmPlan plan{
      std::move(desc), std::move(a), std::move(b), std::move(d), accumulate ? 1.0f : 0.0f, {}};
  const std::string what = DescribeShape(shape);
  LOOM_ASSIGN_OR_RETURN(std::vector<GemmAlgorithm> offered, AskHeuristic(handle, plan, what));
  LOOM_ASSIGN_OR_RETURN(plan.algorithms, CheckAlgorithms(handle, plan, offered, what));
  return plan;
}

Status RunGemm(GemmPlan& plan, cublasLtHandle_t handle, const void* a, const void* b, void* c,
               void* workspace, int64_t workspace_bytes, cudaStream_t stream) {
  // alpha and beta are read from host memory before cublasLtMatmul returns (the default pointer
  // mode, CUBLASLT_POINTER_MODE_HOST). A refusal (CUBLAS_STATUS_NOT_SUPPORTED) comes before any
  // launch, so the next algorithm runs in its place.
  const float alpha = 1.0f, beta = plan.beta;
  const auto matmul = [&](const GemmAlgorithm& algorithm) {
    return CheckCublas(
        cublasLtMatmul(handle, plan.desc.get(), &alpha, b, plan.a.get(), a, plan.b.get(), &beta, c,
                       plan.d.get(), c, plan.d.get(), &algorithm.algo, workspace,
                       static_cast<size_t>(workspace_bytes), stream),
        "cublasLtMatmul", __FILE__, __LINE__);
  };
  return RunFirstAccepted(plan.algorithms, workspace_bytes, matmul);
}

}  // namespace loom::cuda
