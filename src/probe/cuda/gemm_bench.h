#ifndef LOOM_PROBE_CUDA_GEMM_BENCH_H_
#define LOOM_PROBE_CUDA_GEMM_BENCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/status.h"
#include "device/cuda/device_buffer.h"
#include "op/op.h"
#include "probe/bench.h"

namespace loom::cuda {

// Times C[m, n] = A[m, k] * B[k, n] (row-major, |batch| independent products) through cuBLASLt
// on one stream of the current device, with the best-ranked of cuBLASLt's heuristic algorithms
// that cuBLASLt runs for it (PlanGemm, RunGemm: the next one when it refuses an algorithm). The
// layouts and types, and how cuBLASLt's column-major view maps to loom's row-major GEMM, are
// gemm_plan.h's (PlanGemm, RunGemm), shared with the CUDA executor. A shape with accumulate_fp32
// is timed as C = A * B + C into an fp32 C (Fp32Accumulation::kHonour): the weight-gradient GEMM
// of Megatron-LM's gradient-accumulation fusion.
class GemmBench {
 public:
  // Creates the cuBLASLt handle and the workspace on the current device; every GEMM runs on
  // |stream|, which must outlive the bench.
  static Result<std::unique_ptr<GemmBench>> Create(cudaStream_t stream);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  // One time per timed repeat, in microseconds, of one (batched) GEMM of |shape|. Its buffers are
  // allocated for this call and freed before it returns. InvalidArgument for a dimension that is
  // not positive or does not fit in 32 bits; Unimplemented for fp8 on a GPU older than compute
  // capability 8.9 or with a dimension that is not a multiple of 16, and when cuBLASLt has no
  // algorithm for the shape or refuses each one its heuristic offers; ResourceExhausted when A, B
  // and C do not fit.
  Result<std::vector<double>> Time(const GemmShape& shape, const BenchSettings& settings);

 private:
  GemmBench(cudaStream_t stream, cublasLtHandle_t handle, DeviceBuffer workspace,
            int compute_capability, int64_t l2_bytes);

  cudaStream_t stream_;
  cublasLtHandle_t handle_;
  DeviceBuffer workspace_;
  int compute_capability_;  // major * 10 + minor: 90 for Hopper
  int64_t l2_bytes_;
};

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_GEMM_BENCH_H_
