#ifndef LOOM_COST_PROFILE_FIT_H_
#define LOOM_COST_PROFILE_FIT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "cost/profile.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// How the fitted calibration predicts one profile sample.
struct SampleResidual {
  size_t sample = 0;  // index into the samples fitted
  double measured_us = 0;
  double predicted_us = 0;
  double relative_error = 0;  // (predicted - measured) / measured
};

// One kernel class of a profile: GEMMs of one dtype, attention, or memory-bound kernels.
struct KernelClassFit {
  OpKind kind = OpKind::kGemm;
  std::optional<Dtype> dtype;  // none for memory-bound kernels
  MemoryAccess access = MemoryAccess::kStreaming;  // memory-bound kernels: streaming or rows
  std::string key;   // its calibration key: "gemm_efficiency_bf16", "attention_efficiency", ...
  double value = 0;  // the fitted value of |key|
  std::vector<SampleResidual> residuals;
  double mean_abs_relative_error = 0;
  double max_abs_relative_error = 0;
  double median_abs_relative_error = 0;  // nearest rank
  double p90_abs_relative_error = 0;     // nearest rank
  // Mean of (p90 - p10) / median over the samples that state percentiles; nullopt when none does.
  // A fit error well above it is the model's, not the measurement's.
  std::optional<double> spread;
  // Every sample predicted run back to back at the sustained ceiling (ClockRegime::kSustained), as
  // a grid measured after a profile ran them, instead of each at the clocks of its own measurement
  // (HeldAtPowerLimit); |key| and |value| are then the sustained fraction's.
  // CheckComputeCalibration adds such a class for each GEMM dtype whose fraction the calibration
  // has.
  bool sustained = false;
  // cuDNN's attention fitted as attention_tiles (|value|: the forward pass's matmul_efficiency).
  bool tiles = false;

  // "gemm bf16", "attention bf16", "attention bf16 cudnn" (its tiles), "memory", "memory
  // row_reduction"; "gemm bf16 sustained".
  std::string Name() const;
};

// A profile's GEMM that runs at least this long draws the GPU's power limit within its own burst
// (20 timed runs and their warm-ups: 40 ms or more back to back), so it measures the sustained
// rate, not the burst rate: on the committed H100 run (hardware/validation/2026-11-27/
// profile.json) bf16 GEMMs of under 1 ms reach up to 818 TFLOP/s, those of 2 ms and more 627-762,
// and the rate levels off with length (the ceiling fitted to its GEMMs of 0.5 ms and more: 756
// TFLOP/s; of 1 ms and more: 737; of 2 ms and more: 717; the median rate of the grid's 33 GEMMs of
// 2 ms and more, measured back to back after it: 692).
inline constexpr double kSustainedGemmMinUs = 2000;
// Fewer such GEMMs of one tensor-core path than this fit no sustained fraction.
inline constexpr size_t kMinSustainedSamples = 4;

// Whether |sample| is a GEMM that ran long enough to measure the sustained rate.
bool HeldAtPowerLimit(const ProfileSample& sample);

// The sustained fraction one tensor-core path's long GEMMs gave (FitComputeCalibration).
struct SustainedFractionFit {
  Dtype dtype = Dtype::kBf16;  // bf16 stands for bf16 and fp16 together (one tensor-core path)
  size_t samples = 0;          // the HeldAtPowerLimit GEMMs of the path
  // Least squares of their relative errors under ClockRegime::kSustained; nullopt when the
  // ceiling binds none of them (no power limit seen: the fit removes the key).
  std::optional<double> fraction;
  double burst_error = 0;      // their mean |error| under the burst calibration alone
  double sustained_error = 0;  // with the fraction
};

// How the fit settled gemm_epilogue_overlap from GEMM samples that accumulate into fp32.
struct EpilogueOverlapFit {
  bool overlap = false;  // the setting kept
  size_t samples = 0;    // accumulating samples
  // Mean |error| over the accumulating samples of the fit under each setting; nullopt where that
  // fit failed (its error is then the other's reason).
  std::optional<double> serial_error;  // gemm_epilogue_overlap false: epilogue after the main loop
  std::optional<double> overlapped_error;  // true: epilogue under another tile's main loop
};

struct ComputeFit {
  // The GPU's calibration with the fitted values in place and the others as they were; |source|
  // and |fitted_on| are left as they were, for the caller to set (SetFittedOn).
  ComputeCalibration calibration;
  // The keys fitted, in the order of ReadComputeCalibration. With GEMMs:
  // gemm_operand_bandwidth_GBps (when the fit needs one), gemm_wave_latency_us,
  // gemm_epilogue_overlap (with accumulating samples), gemm_efficiency_<dtype> (bf16 and fp16
  // together: one efficiency, as FitComputeJointly fits them), kernel_overhead_us; then
  // attention_efficiency and memory_bandwidth_fraction (with such samples).
  std::vector<std::string> fitted_keys;
  // The keys the written calibration must not hold: with GEMMs, gemm_tile_m and gemm_tile_n (a
  // fixed tile would switch the model off the per-shape tile choice it was fitted with) and
  // gemm_operand_bandwidth_GBps when the fit needs no operand term.
  std::vector<std::string> removed_keys;
  std::vector<KernelClassFit> classes;  // GEMM dtypes in kDtypeNames order, attention, memory
  double mean_abs_relative_error = 0;   // over every sample
  std::optional<EpilogueOverlapFit> epilogue_overlap;  // with accumulating samples
  // One per tensor-core path with at least kMinSustainedSamples HeldAtPowerLimit GEMMs.
  std::vector<SustainedFractionFit> sustained;
};

// Fits every compute parameter that |samples| determine on |gpu|, at once, with the model every
// shipped GPU file uses: FitComputeJointly (roofline_fit.h), its tile-choosing GEMM model
// (cost/gemm_tiles.h) with the efficiencies of attention and memory-bound kernels and one
// kernel_overhead_us for every class, as RooflineComputeModel charges it. Fitting the classes apart
// would give several overheads for one key, and the residuals reported would not be those of the
// calibration written. Without GEMM samples the overhead is kept (the file's GEMM calibration was
// fitted with it) and only the other classes' efficiencies are fitted. With GEMM samples that
// accumulate into fp32 (the probe's weight-gradient pairs), the fit runs with gemm_epilogue_overlap
// false and true and keeps the setting whose mean |error| over those samples is smaller (the file's
// on a tie), reporting both (|epilogue_overlap|); without them the file's setting stays.
// Sustained clocks: where a tensor-core path (bf16 and fp16 together, fp8, tf32) has at least
// kMinSustainedSamples GEMMs that HeldAtPowerLimit, those are left out of the joint fit (they do
// not run at the burst rate it fits) and fit sustained_tensor_fraction_<dtype> instead, by least
// squares of their relative errors under ClockRegime::kSustained with the jointly fitted rest
// (|sustained|); with fewer, the file's fraction is kept.
// The residuals are RooflineComputeModel's with the fitted calibration, memory floors included,
// each sample at the clocks it ran at (the long GEMMs at the sustained ceiling): what
// `loom simulate` will charge. Errors name the samples' files: no samples; a class with fewer
// than 3 distinct shapes, or a non-positive size or time; attention in more than one dtype (the
// calibration has one attention_efficiency); a dtype without a peak in |gpu|; samples that do not
// determine the unknowns; times that do not grow with the work; an efficiency above 1
// (measurements beat the datasheet: the message names the GPU file's key).
Result<ComputeFit> FitComputeCalibration(const std::vector<ProfileSample>& samples,
                                         const GpuSpec& gpu);

// Sets |fit|.calibration.fitted_on to the file names (without folders) of |profile_paths| that
// end in .json, the profiles the values were fitted on. When |fit| fitted no GEMM keys, the GEMM
// values kept were fitted on the earlier fitted_on's tables, which are kept in front.
void SetFittedOn(const std::vector<std::string>& profile_paths, ComputeFit* fit);

// How |gpu|'s calibration, as it is, predicts |samples|: the residuals of every class as
// FitComputeCalibration reports them, with nothing fitted (|fitted_keys| empty, each class's
// |value| the calibration's own), then, for each GEMM dtype whose sustained fraction the
// calibration has, the class again with every sample at the sustained ceiling (|sustained|): the
// rate of a GPU that has run back to back, as a grid measured after a profile has. Samples that
// were not among those fitted give the held-out error.
// InvalidArgument, naming the samples, when there are none or a dtype has no peak in |gpu|.
Result<ComputeFit> CheckComputeCalibration(const std::vector<ProfileSample>& samples,
                                           const GpuSpec& gpu);

// |gpu_file| (a GPU file's JSON) with its "calibration" object holding |fit|'s values: the fitted
// keys replaced in place or added (rounded to 4 significant digits; gemm_epilogue_overlap as a
// boolean), |fit|.removed_keys deleted, "fitted_on" set when |fit|.calibration has one, the other
// keys kept, "source" set to |fit|.calibration.source and last, naming the earlier source of the
// kept keys (WithCalibration, calibration_file.h).
nlohmann::ordered_json WithComputeCalibration(const nlohmann::ordered_json& gpu_file,
                                              const ComputeFit& fit);

}  // namespace loom

#endif  // LOOM_COST_PROFILE_FIT_H_
