#ifndef LOOM_COST_COMPUTE_FIT_H_
#define LOOM_COST_COMPUTE_FIT_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "spec/cluster.h"
#include "workload/ops.h"

namespace loom {

// One measured GEMM: its shape and its median time.
struct GemmSample {
  GemmShape shape;
  double time_s = 0;
};

// The GEMM part of a GPU's compute calibration, fitted to measurements.
struct GemmFit {
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  double efficiency = 0;   // asymptotic fraction of the dtype's dense peak
  double overhead_us = 0;  // fixed time per kernel
  // Per sample, (predicted - measured) / measured, in the order given.
  std::vector<double> relative_errors;
  double mean_abs_relative_error = 0;
};

// Fits the tile-and-wave GEMM model of RooflineComputeModel to |samples| of one dtype on |gpu|:
//   time = overhead + waves * (2 * tile_m * tile_n * k) / (peak / sm_count * efficiency),
//   waves = ceil(batch * ceil(m / tile_m) * ceil(n / tile_n) / sm_count).
// For each candidate tile (64, 128 or 256 on each side) the overhead and 1/efficiency follow by
// weighted linear least squares on relative error (weights 1/time^2), clamped to overhead >= 0
// and efficiency <= 1; the tile with the smallest squared relative error wins.
// Errors: fewer than 3 samples, a non-positive time or size, mixed dtypes, or a GPU without a
// peak for the dtype.
Result<GemmFit> FitGemm(const std::vector<GemmSample>& samples, const GpuSpec& gpu);

struct AttentionSample {
  AttentionShape shape;
  double time_s = 0;
};

struct MemorySample {
  MemoryShape shape;
  double time_s = 0;
};

// One kernel class fitted on its own: an efficiency and its own per-kernel overhead. On their own
// the samples say nothing about other kernels' overhead, so none is borrowed from a GEMM fit;
// FitComputeCalibration (profile_fit.h) fits one overhead shared by every class, as the model
// charges it.
struct EfficiencyFit {
  double efficiency = 0;   // of the dense peak (attention) or of the HBM bandwidth (memory-bound)
  double overhead_us = 0;  // fixed time per kernel
  // Per sample, (predicted - measured) / measured, in the order given.
  std::vector<double> relative_errors;
  double mean_abs_relative_error = 0;
};

// Fits RooflineComputeModel's fused attention, time = overhead + AttentionKernelFlops / (peak *
// efficiency), to |samples| of one dtype (forward and backward, causal or not, may mix: the
// kernel FLOPs already count masking and the backward's recomputation). Weighted least squares on
// relative residuals, as FitGemm. Errors: fewer than 3 distinct shapes, a non-positive time or
// size, mixed dtypes, no peak for the dtype, times that do not grow with the FLOPs, or an
// efficiency above 1 (the samples beat the datasheet peak).
Result<EfficiencyFit> FitAttention(const std::vector<AttentionSample>& samples, const GpuSpec& gpu);

// Fits the memory-bound model, time = overhead + bytes / (hbm_bandwidth * fraction), likewise.
// Errors: fewer than 3 distinct sizes, no bytes or a non-positive time, times that do not grow
// with the bytes, or a fraction above 1 (faster than the datasheet HBM bandwidth: the buffers fit
// in L2).
Result<EfficiencyFit> FitMemoryBandwidth(const std::vector<MemorySample>& samples, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_FIT_H_
