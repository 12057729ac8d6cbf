#include "cost/profile_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <utility>

#include "cost/calibration_file.h"
#include "cost/compute_model.h"
#include "cost/roofline_fit.h"

namespace loom {
namespace {

constexpr std::array<Dtype, 5> kAllDtypes = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32};

struct ClassSamples {
  OpKind kind = OpKind::kGemm;
  std::optional<Dtype> dtype;
  std::vector<size_t> index;  // into the samples
};

// GEMMs per dtype in kAllDtypes order, then attention (its dtypes are checked later), then memory.
std::vector<ClassSamples> GroupByClass(const std::vector<ProfileSample>& samples) {
  std::vector<ClassSamples> classes;
  for (Dtype dtype : kAllDtypes) {
    ClassSamples c{OpKind::kGemm, dtype, {}};
    for (size_t i = 0; i < samples.size(); ++i) {
      const GemmShape* g = std::get_if<GemmShape>(&samples[i].shape);
      if (g != nullptr && g->dtype == dtype) c.index.push_back(i);
    }
    if (!c.index.empty()) classes.push_back(c);
  }
  for (OpKind kind : {OpKind::kAttention, OpKind::kMemoryBound}) {
    ClassSamples c{kind, std::nullopt, {}};
    for (size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].Kind() == kind) c.index.push_back(i);
    }
    if (c.index.empty()) continue;
    if (kind == OpKind::kAttention) c.dtype = std::get<AttentionShape>(samples[c.index.front()].shape).dtype;
    classes.push_back(c);
  }
  return classes;
}

// "a.json, b.json: the attention bf16 samples", naming the files the class's samples come from.
std::string ClassWhat(const std::vector<ProfileSample>& samples, const ClassSamples& c) {
  std::set<std::string> files;
  for (size_t i : c.index) {
    const std::string& where = samples[i].where;
    files.insert(where.substr(0, where.rfind(": samples[")));
  }
  std::string out;
  for (const std::string& f : files) out += (out.empty() ? "" : ", ") + (f.empty() ? "the profile" : f);
  KernelClassFit name;
  name.kind = c.kind;
  name.dtype = c.dtype;
  return out + ": the " + name.Name() + " samples";
}

Status CheckClasses(const std::vector<ProfileSample>& samples, const std::vector<ClassSamples>& classes,
                    const GpuSpec& gpu) {
  if (samples.empty()) return Status::InvalidArgument("the profile has no samples to fit; measure some with loom probe");
  for (const ClassSamples& c : classes) {
    std::vector<KernelShape> shapes;
    std::vector<double> times;
    for (size_t i : c.index) {
      shapes.push_back(samples[i].shape);
      times.push_back(samples[i].median_us);
    }
    const std::string what = ClassWhat(samples, c);
    LOOM_RETURN_IF_ERROR(CheckClassSamples(what, shapes, times));
    for (size_t i : c.index) {
      const AttentionShape* a = std::get_if<AttentionShape>(&samples[i].shape);
      if (a == nullptr || a->dtype == *c.dtype) continue;
      return Status::InvalidArgument(samples[i].where + ": attention in " + std::string(kDtypeNames.Name(a->dtype)) +
                                     " after attention in " + std::string(kDtypeNames.Name(*c.dtype)) +
                                     "; the calibration has one attention_efficiency: fit the dtype training uses");
    }
    if (c.dtype && !gpu.PeakTflops(*c.dtype)) {
      const std::string dtype(kDtypeNames.Name(*c.dtype));
      return Status::InvalidArgument(what + " are " + dtype + " but " + gpu.file + " has no peak_tflops." + dtype +
                                     "; add the datasheet's dense rate, or remove those samples");
    }
  }
  return Status::Ok();
}

double WorkSeconds(const KernelShape& shape, int64_t tile_m, int64_t tile_n, const GpuSpec& gpu) {
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) return GemmWorkSeconds(*g, tile_m, tile_n, gpu);
  if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) return AttentionWorkSeconds(*a, gpu);
  return MemoryWorkSeconds(std::get<MemoryShape>(shape), gpu);
}

struct TiledFit {
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  SharedOverheadFit fit;
};

// The tile of smallest error among those whose GEMM efficiencies stay <= 1; when none does, the
// one of smallest error, whose check then fails with the message that says why.
Result<TiledFit> ChooseTile(const std::vector<ProfileSample>& samples, const std::vector<ClassSamples>& classes,
                            const GpuSpec& gpu) {
  std::vector<std::pair<int64_t, int64_t>> tiles = {{gpu.calibration.gemm_tile_m, gpu.calibration.gemm_tile_n}};
  if (classes.front().kind == OpKind::kGemm) {
    tiles.clear();
    for (int64_t m : {64, 128, 256}) {
      for (int64_t n : {64, 128, 256}) tiles.emplace_back(m, n);
    }
  }
  std::optional<TiledFit> best, best_infeasible;
  for (const auto& [tile_m, tile_n] : tiles) {
    std::vector<WorkGroup> groups;
    for (const ClassSamples& c : classes) {
      WorkGroup& g = groups.emplace_back();
      for (size_t i : c.index) {
        g.work_s.push_back(WorkSeconds(samples[i].shape, tile_m, tile_n, gpu));
        g.time_s.push_back(samples[i].median_us * 1e-6);
      }
    }
    TiledFit t{tile_m, tile_n, FitSharedOverhead(groups)};
    if (!t.fit.determined) continue;
    bool feasible = true;
    for (size_t c = 0; c < classes.size(); ++c) {
      if (classes[c].kind == OpKind::kGemm && t.fit.inverse_efficiency[c] < 1.0 - kEfficiencyTolerance) {
        feasible = false;
      }
    }
    std::optional<TiledFit>& slot = feasible ? best : best_infeasible;
    if (!slot || t.fit.sse < slot->fit.sse) slot = t;
  }
  if (best) return *best;
  if (best_infeasible) return *best_infeasible;
  return Status::InvalidArgument(ClassWhat(samples, classes.front()) +
                                 " (and every other class) have too little spread in work to tell the per-kernel "
                                 "overhead from the efficiencies; profile sizes whose times differ several-fold");
}

std::string KeyOf(OpKind kind, std::optional<Dtype> dtype) {
  if (kind == OpKind::kGemm) return GemmEfficiencyKey(*dtype);
  return kind == OpKind::kAttention ? "attention_efficiency" : "memory_bandwidth_fraction";
}

// A profile times GEMM kernels on operands already in their dtype, so fp8 samples are predicted
// without Transformer Engine's casts (GemmKernel, not Gemm).
double PredictedUs(const RooflineComputeModel& model, const KernelShape& shape) {
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) return model.GemmKernel(*g).ToMicros();
  if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) return model.Attention(*a).ToMicros();
  return model.MemoryBound(std::get<MemoryShape>(shape)).ToMicros();
}

// Fills the residuals of |fit|'s classes under its calibration, and the mean |error| of all.
void Score(const std::vector<ProfileSample>& samples, const std::vector<ClassSamples>& members, const GpuSpec& gpu,
           ComputeFit* fit) {
  GpuSpec calibrated = gpu;
  calibrated.calibration = fit->calibration;
  const RooflineComputeModel model(calibrated);
  double total = 0;
  for (size_t c = 0; c < members.size(); ++c) {
    KernelClassFit& out = fit->classes[c];
    double spread_sum = 0;
    int with_spread = 0;
    for (size_t i : members[c].index) {
      const ProfileSample& s = samples[i];
      const double predicted = PredictedUs(model, s.shape);
      const double error = (predicted - s.median_us) / s.median_us;
      out.residuals.push_back({i, s.median_us, predicted, error});
      out.mean_abs_relative_error += std::fabs(error) / static_cast<double>(members[c].index.size());
      out.max_abs_relative_error = std::max(out.max_abs_relative_error, std::fabs(error));
      total += std::fabs(error);
      if (s.p10_us && s.p90_us) spread_sum += (*s.p90_us - *s.p10_us) / s.median_us, ++with_spread;
    }
    if (with_spread > 0) out.spread = spread_sum / with_spread;
    std::vector<double> magnitudes;
    for (const SampleResidual& r : out.residuals) magnitudes.push_back(std::fabs(r.relative_error));
    std::sort(magnitudes.begin(), magnitudes.end());
    // Nearest rank: the smallest error at least q of the samples do not exceed.
    auto rank = [&](double q) {
      const size_t at = static_cast<size_t>(std::ceil(q * static_cast<double>(magnitudes.size())));
      return magnitudes[std::clamp<size_t>(at, 1, magnitudes.size()) - 1];
    };
    out.median_abs_relative_error = rank(0.5);
    out.p90_abs_relative_error = rank(0.9);
  }
  fit->mean_abs_relative_error = total / static_cast<double>(samples.size());
}

}  // namespace

std::string KernelClassFit::Name() const {
  std::string name(kOpKindNames.Name(kind));
  if (dtype) name += " " + std::string(kDtypeNames.Name(*dtype));
  return name;
}

Result<ComputeFit> FitComputeCalibration(const std::vector<ProfileSample>& samples, const GpuSpec& gpu) {
  const std::vector<ClassSamples> classes = GroupByClass(samples);
  LOOM_RETURN_IF_ERROR(CheckClasses(samples, classes, gpu));
  Result<TiledFit> tiled = ChooseTile(samples, classes, gpu);
  if (!tiled.ok()) return tiled.status();
  const SharedOverheadFit& shared = tiled->fit;
  ComputeFit fit;
  ComputeCalibration& cal = fit.calibration;
  cal = gpu.calibration;
  if (classes.front().kind == OpKind::kGemm) {
    cal.gemm_tile_m = tiled->tile_m;
    cal.gemm_tile_n = tiled->tile_n;
    fit.fitted_keys = {"gemm_tile_m", "gemm_tile_n"};
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    const ClassSamples& k = classes[c];
    LOOM_RETURN_IF_ERROR(
        CheckInverseEfficiency(shared.inverse_efficiency[c], ClassWhat(samples, k), k.kind, k.dtype, gpu));
    const double value = std::min(1.0, 1.0 / shared.inverse_efficiency[c]);
    if (k.kind == OpKind::kGemm) cal.GemmEfficiencySlot(*k.dtype) = value;
    if (k.kind == OpKind::kAttention) cal.attention_efficiency = value;
    if (k.kind == OpKind::kMemoryBound) cal.memory_bandwidth_fraction = value;
    KernelClassFit& out = fit.classes.emplace_back();
    out.kind = k.kind;
    out.dtype = k.dtype;
    out.key = KeyOf(k.kind, k.dtype);
    out.value = value;
    if (k.kind == OpKind::kGemm) fit.fitted_keys.push_back(out.key);
  }
  cal.kernel_overhead_us = shared.overhead_s * 1e6;
  fit.fitted_keys.push_back("kernel_overhead_us");
  for (const KernelClassFit& c : fit.classes) {
    if (c.kind != OpKind::kGemm) fit.fitted_keys.push_back(c.key);
  }
  Score(samples, classes, gpu, &fit);
  return fit;
}

Result<ComputeFit> CheckComputeCalibration(const std::vector<ProfileSample>& samples, const GpuSpec& gpu) {
  if (samples.empty()) return Status::InvalidArgument("the profile has no samples to check the calibration against");
  const std::vector<ClassSamples> classes = GroupByClass(samples);
  ComputeFit check;
  check.calibration = gpu.calibration;
  for (const ClassSamples& k : classes) {
    if (k.dtype && !gpu.PeakTflops(*k.dtype)) {
      const std::string dtype(kDtypeNames.Name(*k.dtype));
      return Status::InvalidArgument(ClassWhat(samples, k) + " are " + dtype + " but " + gpu.file +
                                     " has no peak_tflops." + dtype + " to predict them with");
    }
    KernelClassFit& out = check.classes.emplace_back();
    out.kind = k.kind;
    out.dtype = k.dtype;
    out.key = KeyOf(k.kind, k.dtype);
    const ComputeCalibration& cal = gpu.calibration;
    if (k.kind == OpKind::kGemm) out.value = cal.GemmEfficiency(*k.dtype).value_or(0);
    if (k.kind == OpKind::kAttention) out.value = cal.attention_efficiency.value_or(0);
    if (k.kind == OpKind::kMemoryBound) out.value = cal.memory_bandwidth_fraction.value_or(0);
  }
  Score(samples, classes, gpu, &check);
  return check;
}

nlohmann::ordered_json WithComputeCalibration(const nlohmann::ordered_json& gpu_file, const ComputeFit& fit) {
  ComputeCalibration c = fit.calibration;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (const std::string& key : fit.fitted_keys) {
    if (key == "gemm_tile_m") values[key] = c.gemm_tile_m;
    if (key == "gemm_tile_n") values[key] = c.gemm_tile_n;
    if (key == "kernel_overhead_us") values[key] = RoundSignificant(c.kernel_overhead_us, 4);
    if (key == "attention_efficiency") values[key] = RoundSignificant(c.attention_efficiency.value_or(1), 4);
    if (key == "memory_bandwidth_fraction") values[key] = RoundSignificant(c.memory_bandwidth_fraction.value_or(1), 4);
    for (Dtype dtype : kAllDtypes) {
      if (key == KeyOf(OpKind::kGemm, dtype)) values[key] = RoundSignificant(c.GemmEfficiencySlot(dtype).value_or(1), 4);
    }
  }
  return WithCalibration(gpu_file, values, fit.calibration.source);
}

}  // namespace loom
