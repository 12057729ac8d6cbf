#ifndef LOOM_DEVICE_CUDA_GEMM_PLAN_H_
#define LOOM_DEVICE_CUDA_GEMM_PLAN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/dtype.h"
#include "core/status.h"
#include "device/cuda/device_buffer.h"
#include "op/op.h"

namespace loom::cuda {

// One GEMM of loom's op stream as cuBLASLt runs it, planned once and run on any buffers: the
// GEMM bench times it, the CUDA executor's op runner enqueues it.
//
// C[m, n] = A[m, k] * B[k, n], row-major, |batch| independent products, 256-byte aligned buffers.
// cuBLASLt is column-major, and a row-major matrix is the column-major view of its transpose, so
// the plan asks cuBLASLt for C^T[n, m] = B^T[n, k] * A^T[k, m]: cuBLASLt's "A" is loom's B and its
// "B" is loom's A, with cuBLASLt's (m, n, k) = loom's (n, m, k). The FLOPs are 2 * batch * m * n *
// k either way (GemmFlops).
//
// Types: bf16 and fp16 inputs and output with fp32 accumulation; tf32 is fp32 storage with
// CUBLAS_COMPUTE_32F_FAST_TF32; fp32 is plain CUBLAS_COMPUTE_32F; fp8 is e4m3 A and B with
// per-tensor scales of 1.0 and a bf16 output. cuBLASLt runs fp8 only in the "TN" layout, so for
// fp8 loom's B is stored transposed, as [n, k] (nn.Linear's weight layout: C = A * W^T).

// The workspace cuBLAS recommends for Hopper (cuBLAS documentation, cublasSetWorkspace: 32 MiB on
// Hopper, 4 MiB before), as Transformer Engine's get_cublas_workspace_size_bytes gives its GEMMs;
// it is more than older GPUs need, so one size serves every GPU. Plans pick only algorithms that
// fit in it.
inline constexpr int64_t kGemmWorkspaceBytes = 32ll << 20;

// The cuBLASLt types of a GEMM of |dtype|; the scale type (alpha, beta) is fp32 throughout.
struct GemmTypes {
  cudaDataType_t input;   // A and B
  cudaDataType_t output;  // C and D
  cublasComputeType_t compute;
  Dtype input_dtype;    // what FillRandom writes into A and B
  int64_t input_bytes;  // per element
  int64_t output_bytes;
};
GemmTypes GemmTypesOf(Dtype dtype);

// OK when cuBLASLt can run |shape| on a GPU of |compute_capability| (major * 10 + minor).
// InvalidArgument for a dimension that is not positive or does not fit in 32 bits;
// ResourceExhausted for a matrix of more than 2^40 elements; Unimplemented for fp8 below compute
// capability 8.9 or with a dimension that is not a multiple of 16. Messages start with the shape.
Status CheckGemmShape(const GemmShape& shape, int compute_capability);

// The compute capability of the current device as major * 10 + minor: 90 for Hopper.
Result<int> CurrentComputeCapability();

// A device float of 1.0, the per-tensor scale of A and B of fp8 GEMMs, copied on |stream|. The
// copy's source is static, so it outlives the asynchronous copy.
Result<DeviceBuffer> MakeUnitScale(cudaStream_t stream);

// Owners of cuBLASLt's objects, destroyed with them (the statuses of the destroy calls are not
// checked there: a destructor cannot return them).
struct CublasLtDeleter {
  void operator()(std::remove_pointer_t<cublasLtHandle_t>* handle) const {
    cublasLtDestroy(handle);
  }
  void operator()(std::remove_pointer_t<cublasLtMatmulDesc_t>* desc) const {
    cublasLtMatmulDescDestroy(desc);
  }
  void operator()(std::remove_pointer_t<cublasLtMatrixLayout_t>* layout) const {
    cublasLtMatrixLayoutDestroy(layout);
  }
  void operator()(std::remove_pointer_t<cublasLtMatmulPreference_t>* preference) const {
    cublasLtMatmulPreferenceDestroy(preference);
  }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, CublasLtDeleter>;
using MatrixLayout =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, CublasLtDeleter>;
using CublasLtHandle = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, CublasLtDeleter>;

// How many algorithms PlanGemm asks cuBLASLt's heuristic for: the one it ranks first, and the next
// ones to fall back to when cuBLASLt refuses it. The heuristic returns them "ordered in increasing
// estimated compute time" and each with its own state (cublasLt.h, cublasLtMatmulAlgoGetHeuristic);
// an algorithm it offers may still fail to run ("CUBLAS_STATUS_SUCCESS doesn't fully guarantee algo
// will run", cublasLtMatmulAlgoCheck).
inline constexpr int kGemmHeuristicAlgorithms = 8;

// One of a plan's algorithms and the workspace it needs.
struct GemmAlgorithm {
  cublasLtMatmulAlgo_t algo = {};
  int64_t workspace_bytes = 0;
};

// The algorithms among the heuristic's |results| that cuBLASLt offers (state
// CUBLAS_STATUS_SUCCESS) and that need at most |max_workspace_bytes|, in the heuristic's order,
// best first.
std::vector<GemmAlgorithm> UsableAlgorithms(
    std::span<const cublasLtMatmulHeuristicResult_t> results, int64_t max_workspace_bytes);

// Runs |matmul| with the first of |algorithms| that needs at most |workspace_bytes|. When it
// returns Unimplemented (cuBLASLt refused the algorithm: CUBLAS_STATUS_NOT_SUPPORTED,
// _ARCH_MISMATCH), tries the next. Once one runs, the refused ones are dropped from |algorithms|,
// so that later calls start with the one that ran. Returns the first status that is not
// Unimplemented; when every algorithm was refused, the first refusal with the count in front, and
// |algorithms| unchanged; InvalidArgument when none fits in |workspace_bytes|.
using GemmMatmulCall = std::function<Status(const GemmAlgorithm&)>;
Status RunFirstAccepted(std::vector<GemmAlgorithm>& algorithms, int64_t workspace_bytes,
                        const GemmMatmulCall& matmul);

// Whether a plan honours GemmShape::accumulate_fp32: C = A * B + C with C (and D, the same
// buffer) in fp32 while A and B keep the shape's dtype, fp32 compute and beta = 1, as APEX's
// fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32 runs Megatron-LM's weight-gradient GEMMs
// into main_grad (cuBLASLt's "A/B bf16 or fp16, C/D fp32" and fp8 "C/D fp32" type combinations).
// The probe and the CUDA executor honour it (the executor's operand arena holds the fp32 C:
// exec/op_operands.cc, GemmOutputBytesPerElement).
enum class Fp32Accumulation { kIgnore, kHonour };

// The bytes of one element of the C (and D) matrix |shape| is planned with under |accumulation|.
int64_t GemmOutputBytes(const GemmShape& shape, Fp32Accumulation accumulation);

// Everything cublasLtMatmul needs of a shape besides its buffers. a, b and d are cuBLASLt's
// matrices: a holds loom's B, b loom's A, d loom's C (see above); d also serves as C, which is
// read only when the plan accumulates (beta 1), else not (beta 0).
struct GemmPlan {
  MatmulDesc desc;
  MatrixLayout a, b, d;
  float beta = 0.0f;
  // The heuristic's algorithms that cuBLASLt accepts for the shape (cublasLtMatmulAlgoCheck), each
  // within kGemmWorkspaceBytes, best first; never empty. RunGemm runs the first it can
  // (RunFirstAccepted), and drops the ones cublasLtMatmul refuses.
  std::vector<GemmAlgorithm> algorithms;
};

// Plans |shape| on |handle| with up to kGemmHeuristicAlgorithms algorithms that cuBLASLt's
// heuristic offers within kGemmWorkspaceBytes and that cublasLtMatmulAlgoCheck accepts.
// |unit_scale| is a device float of 1.0 (MakeUnitScale) that fp8 GEMMs read as the scales of A and
// B; it is not used for other dtypes and may be null for them. Errors as CheckGemmShape, and
// Unimplemented when the heuristic has no algorithm for the shape or cuBLASLt refuses each one it
// has. With Fp32Accumulation::kHonour and shape.accumulate_fp32, C and D are fp32 and beta is 1.
// REQUIRES: |unit_scale| outlives the plan.
Result<GemmPlan> PlanGemm(cublasLtHandle_t handle, const GemmShape& shape, int compute_capability,
                          const float* unit_scale,
                          Fp32Accumulation accumulation = Fp32Accumulation::kIgnore);

// Enqueues C = A * B (C = A * B + C when |plan| accumulates) of |plan| on |stream|: |a| is loom's
// A[m, k], |b| loom's B[k, n] ([n, k] for fp8), |c| loom's C[m, n], each |batch| matrices one after
// another, on 256-byte boundaries. Falls back to the plan's next algorithm when cublasLtMatmul
// refuses one (RunFirstAccepted), which changes |plan|. InvalidArgument when |workspace_bytes| is
// less than every algorithm needs. REQUIRES: |plan| was planned on |handle|; no other thread uses
// |plan| during the call.
Status RunGemm(GemmPlan& plan, cublasLtHandle_t handle, const void* a, const void* b, void* c,
               void* workspace, int64_t workspace_bytes, cudaStream_t stream);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_GEMM_PLAN_H_
