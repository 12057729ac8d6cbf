#ifndef LOOM_COST_ROOFLINE_FIT_H_
#define LOOM_COST_ROOFLINE_FIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "cost/profile.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// RooflineComputeModel's compute calibration fitted to measured kernels (profile_fit.h fits a
// profile with it). The model's terms in the form the fit sees them: the kernel's time at the
// datasheet rate (efficiency 1) without the overhead.

// AttentionKernelFlops at the dtype's dense peak. REQUIRES: |gpu| has a peak for the dtype.
double AttentionWorkSeconds(const AttentionShape& attention, const GpuSpec& gpu);
// Bytes read and written at the datasheet HBM bandwidth.
double MemoryWorkSeconds(const MemoryShape& memory, const GpuSpec& gpu);

// One measured kernel of any class: its shape and its median time.
struct KernelSample {
  KernelShape shape;
  double time_s = 0;
};

// RooflineComputeModel's calibration fitted to kernels of every class together.
struct JointComputeFit {
  // |gpu|'s calibration with the fitted values in place (as FitComputeJointly says which).
  ComputeCalibration calibration;
  // The classes whose efficiency (fraction) a bound held at 1, each with the inverse efficiency
  // the least squares wanted (< 1: the samples beat the datasheet): GEMMs by efficiency class
  // (bf16 standing for bf16 and fp16), attention and memory-bound kernels.
  std::vector<std::pair<Dtype, double>> gemm_wanted;
  std::optional<double> attention_wanted;
  std::optional<double> memory_wanted;  // streaming memory-bound kernels
  std::optional<double> row_reduction_wanted;
};

// Fits RooflineComputeModel to |samples| on |gpu|, every class at once with one per-kernel
// overhead: the model charges kernel_overhead_us to every kernel, so the classes are not fitted
// each with its own (which would leave one key with several values).
// GEMMs: the tile and split-K come from ChooseGemmTile (cost/gemm_tiles.h); for fixed tile choices
// the time is linear in the unknowns,
//   time - split_k_bytes / hbm = overhead + waves * wave_latency + sum over dtype classes c of
//                                (flops_per_sm * sm_count / peak) * (1 / efficiency_c)
//                                + operand_bytes_per_sm / (operand bandwidth / sm_count),
// with one efficiency per class (bf16 and fp16 share one: the same tensor-core instructions at the
// same datasheet rate, NVIDIA A100 and H100 datasheets). Attention is overhead +
// AttentionWorkSeconds / efficiency, memory-bound kernels overhead + MemoryWorkSeconds / fraction:
// rows of the same least squares on relative residuals (weights 1/time^2), under overhead >= 0,
// wave latency >= 0, operand bandwidth > 0 and efficiencies <= 1 (bounds held by fixing a violating
// unknown at its bound and solving again). The tile choices depend on the unknowns, so the fit
// alternates: choose every sample's tile under the current values, solve, choose again, until the
// choices stop changing, from a few starting points; the values whose predictions have the least
// squared relative error win. With memory-bound samples the HBM traffic of GEMMs (split-K's
// partial sums, an accumulating epilogue) is costed at the fitted fraction too. GEMM samples with
// accumulate_fp32 are costed as RooflineComputeModel::GemmKernel costs them under |gpu|'s
// gemm_epilogue_overlap (the caller fits both settings to choose one). Memory floors are left out
// (the samples are taken to be bound by the term they calibrate).
// Which keys are fitted: with GEMMs, the GEMM efficiencies of the classes sampled,
// gemm_operand_bandwidth_GBps (removed when its term comes out at its bound of 0),
// gemm_wave_latency_us and kernel_overhead_us, and the fixed tile (gemm_tile_m/n) removed; without,
// the overhead stays |gpu|'s (the GEMM calibration was fitted with it, and GEMMs dominate a step);
// attention_efficiency with attention samples (one dtype, the caller checks),
// memory_bandwidth_fraction with streaming memory-bound ones and
// memory_bandwidth_fraction_row_reduction with row reductions (MemoryAccess: each its own unknown,
// the other kept at |gpu|'s when it has no samples). JointComputeFit says which bound held.
// Errors: no unknowns or fewer samples than unknowns, and samples that do not determine the
// unknowns. Takes the samples as given, so that a caller can leave one source's rows out and refit.
// REQUIRES: every size and time > 0, |gpu| has a peak for every dtype sampled.
Result<JointComputeFit> FitComputeJointly(const std::vector<KernelSample>& samples,
                                          const GpuSpec& gpu);

// A fitted efficiency may exceed 1 by rounding only.
inline constexpr double kEfficiencyTolerance = 1e-6;

// Checks the samples of one class, |what| naming them in messages ("a.json: the gemm bf16
// samples"): at least 3 distinct shapes, every size and time > 0.
Status CheckClassSamples(const std::string& what, const std::vector<KernelShape>& shapes,
                         const std::vector<double>& times);

// Checks a fitted inverse efficiency of the |kind| samples |what| names: > 0 (times grow with the
// work) and an efficiency of at most 1 (+ kEfficiencyTolerance), else a message naming the key of
// |gpu|'s file the measurements beat (peak_tflops.<dtype>, hbm_bandwidth_GBps) and what to check.
Status CheckInverseEfficiency(double inverse, const std::string& what, OpKind kind,
                              std::optional<Dtype> dtype, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_ROOFLINE_FIT_H_
