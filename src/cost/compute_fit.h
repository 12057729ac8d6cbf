#ifndef LOOM_COST_COMPUTE_FIT_H_
#define LOOM_COST_COMPUTE_FIT_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/status.h"
#include "cost/profile.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// One measured GEMM: its shape and its median time.
struct GemmSample {
  GemmShape shape;
  double time_s = 0;
};

// The fitted efficiency of the GEMMs of some dtypes: bf16 and fp16 share one (the same tensor-core
// instructions at the same datasheet rate: NVIDIA A100 and H100 datasheets), every other dtype has
// its own.
struct GemmDtypeEfficiency {
  std::vector<Dtype> dtypes;
  double efficiency = 0;  // of the dtype's dense peak, in the tensor-core main loop
};

// The GEMM part of a GPU's compute calibration, fitted to measurements.
struct GemmFit {
  std::vector<GemmDtypeEfficiency> efficiencies;  // the classes with samples, in kDtypeNames order
  // Bandwidth of the operand loads the main loop does not hide; nullopt when the fit needs no such
  // term (it came out at its bound of 0 seconds per byte).
  std::optional<double> operand_bandwidth_GBps;
  double wave_latency_us = 0;  // per wave of tiles, independent of K
  double overhead_us = 0;      // fixed time per kernel
  // Per sample, (predicted - measured) / measured, in the order given, predicted by
  // RooflineComputeModel::GemmKernel with the fitted values in |gpu|'s calibration.
  std::vector<double> relative_errors;
  double mean_abs_relative_error = 0;

  // |calibration| with the fitted values in place: every dtype's efficiency, the operand bandwidth
  // (removed when nullopt), the wave latency, the overhead, and no fixed tile.
  ComputeCalibration Applied(const ComputeCalibration& calibration) const;
};

// Fits RooflineComputeModel's GEMM kernel, whose tile and split-K come from ChooseGemmTile
// (cost/gemm_tiles.h), to |samples| on |gpu|. For fixed tile choices the time is linear in the
// unknowns,
//   time - split_k_bytes / hbm = overhead + waves * wave_latency + sum over dtype classes c of
//                                (flops_per_sm * sm_count / peak) * (1 / efficiency_c)
//                                + operand_bytes_per_sm / (operand bandwidth / sm_count),
// solved by least squares on relative residuals (weights 1/time^2) under overhead >= 0, wave
// latency >= 0,
// efficiency <= 1 and operand bandwidth > 0 (bounds held by fixing a violating unknown at its bound
// and solving again). The tile choices depend on the unknowns, so the fit alternates: choose every
// sample's tile under the current values, solve, choose again, until the choices stop changing,
// from a few starting points; the values whose model predictions have the least squared relative
// error win. The memory floors are left out of the fit (the samples are taken to be compute-bound)
// and in the reported errors. Takes the samples as given, so that a caller can leave one source's
// rows out and refit. Errors: fewer than 3 samples, a non-positive time or size, a dtype without a
// peak in |gpu|, or fewer samples than unknowns.
Result<GemmFit> FitGemm(const std::vector<GemmSample>& samples, const GpuSpec& gpu);

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
  std::optional<double> memory_wanted;
};

// Fits FitGemm's GEMM model and the efficiencies of attention and memory-bound kernels to
// |samples| at once, with one per-kernel overhead for every class: RooflineComputeModel charges
// kernel_overhead_us to every kernel, so GEMMs and the other classes are fitted with the same
// overhead rather than each with its own (which would leave one key with several values). For
// fixed tile choices the time of every class is linear in the unknowns (attention: overhead +
// AttentionWorkSeconds / efficiency; memory-bound: overhead + MemoryWorkSeconds / fraction), so
// the classes are rows of FitGemm's least squares with a column each, and FitGemm's alternation
// over tile choices solves them together. With memory-bound samples the HBM traffic of GEMMs
// (split-K's partial sums, an accumulating epilogue) is costed at the fitted fraction too.
// GEMM samples with accumulate_fp32 are costed as RooflineComputeModel::GemmKernel costs them
// under |gpu|'s gemm_epilogue_overlap (the caller fits both settings to choose one). Which keys
// are fitted: with GEMMs, the GEMM keys of GemmFit::Applied and kernel_overhead_us; without, the
// overhead stays |gpu|'s (the GEMM calibration was fitted with it, and GEMMs dominate a step);
// attention_efficiency with attention samples (one dtype, the caller checks), and
// memory_bandwidth_fraction with memory-bound ones. Memory floors are left out of the fit, as in
// FitGemm. Efficiencies are bounded by 1; JointComputeFit says which bound held. Errors: no
// unknowns or fewer samples than unknowns, and samples that do not determine the unknowns.
// REQUIRES: every size and time > 0, |gpu| has a peak for every dtype sampled.
Result<JointComputeFit> FitComputeJointly(const std::vector<KernelSample>& samples,
                                          const GpuSpec& gpu);

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
Result<EfficiencyFit> FitMemoryBandwidth(const std::vector<MemorySample>& samples,
                                         const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_COMPUTE_FIT_H_
