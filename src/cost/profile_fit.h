#ifndef LOOM_COST_PROFILE_FIT_H_
#define LOOM_COST_PROFILE_FIT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "cost/profile.h"
#include "spec/cluster.h"
#include "workload/ops.h"

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
  std::string key;             // its calibration key: "gemm_efficiency_bf16", "attention_efficiency", ...
  double value = 0;            // the fitted value of |key|
  std::vector<SampleResidual> residuals;
  double mean_abs_relative_error = 0;
  double max_abs_relative_error = 0;
  double median_abs_relative_error = 0;  // nearest rank
  double p90_abs_relative_error = 0;     // nearest rank
  // Mean of (p90 - p10) / median over the samples that state percentiles; nullopt when none does.
  // A fit error well above it is the model's, not the measurement's.
  std::optional<double> spread;

  // "gemm bf16", "attention bf16", "memory".
  std::string Name() const;
};

struct ComputeFit {
  // The GPU's calibration with the fitted values in place and the others as they were; |source|
  // is left as it was, for the caller to set.
  ComputeCalibration calibration;
  // The keys fitted, in the order of ReadComputeCalibration: gemm_tile_m, gemm_tile_n (with GEMMs),
  // gemm_efficiency_<dtype> per GEMM dtype, kernel_overhead_us, then attention_efficiency and
  // memory_bandwidth_fraction (with such samples).
  std::vector<std::string> fitted_keys;
  std::vector<KernelClassFit> classes;  // GEMM dtypes in kDtypeNames order, attention, memory
  double mean_abs_relative_error = 0;   // over every sample
};

// Fits every compute parameter that |samples| determine on |gpu|, at once. RooflineComputeModel
// charges one kernel_overhead_us to every kernel, so one overhead is fitted for all classes, with
// one efficiency per class (GEMMs per dtype, attention, memory-bound): FitSharedOverhead
// (roofline_fit.h), least squares on the relative residuals of all samples together. Fitting the
// classes apart would give several overheads for one key, and the residuals reported would not be
// those of the calibration written. The GEMM tile (the calibration has one pair, shared by the
// dtypes) is the one of 64, 128 or 256 per side with the smallest total squared error among those
// whose GEMM efficiencies stay at or below 1.
// The residuals are RooflineComputeModel's with the fitted calibration, memory floors included:
// what `loom simulate` will charge. Errors name the samples' files: no samples; a class with fewer
// than 3 distinct shapes, or a non-positive size or time; attention in more than one dtype (the
// calibration has one attention_efficiency); a dtype without a peak in |gpu|; work that does not
// vary enough to tell the overhead from the efficiencies; times that do not grow with the work; an
// efficiency above 1 (measurements beat the datasheet: the message names the GPU file's key).
Result<ComputeFit> FitComputeCalibration(const std::vector<ProfileSample>& samples, const GpuSpec& gpu);

// How |gpu|'s calibration, as it is, predicts |samples|: the residuals of every class as
// FitComputeCalibration reports them, with nothing fitted (|fitted_keys| empty, each class's |value|
// the calibration's own). Samples that were not among those fitted give the held-out error.
// InvalidArgument, naming the samples, when there are none or a dtype has no peak in |gpu|.
Result<ComputeFit> CheckComputeCalibration(const std::vector<ProfileSample>& samples, const GpuSpec& gpu);

// |gpu_file| (a GPU file's JSON) with its "calibration" object holding |fit|'s values: the fitted
// keys replaced in place or added (rounded to 4 significant digits; tiles as integers), the other
// keys kept, "source" set to |fit|.calibration.source and last, naming the earlier source of the
// kept keys (WithCalibration, calibration_file.h).
nlohmann::ordered_json WithComputeCalibration(const nlohmann::ordered_json& gpu_file, const ComputeFit& fit);

}  // namespace loom

#endif  // LOOM_COST_PROFILE_FIT_H_
