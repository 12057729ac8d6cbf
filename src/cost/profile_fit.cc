#include "cost/profile_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/attention_tiles.h"
#include "cost/calibration_file.h"
#include "cost/compute_model.h"
#include "cost/gemm_tiles.h"
#include "cost/roofline_fit.h"

namespace loom {
namespace {

constexpr std::array<Dtype, 5> kAllDtypes = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32,
                                             Dtype::kFp32};

// |sample|'s shape when it is cuDNN's fused attention (AttentionFamily::kCudnn, what loom probe
// runs, whose rates the calibration's attention_tiles model), else nullptr.
const AttentionShape* CudnnAttention(const ProfileSample& sample) {
  const AttentionShape* a = std::get_if<AttentionShape>(&sample.shape);
  return a != nullptr && a->family == AttentionFamily::kCudnn ? a : nullptr;
}

bool HasAttentionTiles(const ComputeCalibration& c) {
  return c.attention_forward_tiles || c.attention_backward_tiles;
}

// Whether |sample| is an attention kernel of |family|.
bool AttentionOf(const ProfileSample& sample, AttentionFamily family) {
  const AttentionShape* a = std::get_if<AttentionShape>(&sample.shape);
  return a != nullptr && a->family == family;
}

struct ClassSamples {
  OpKind kind = OpKind::kGemm;
  std::optional<Dtype> dtype;
  std::vector<size_t> index;                      // into the samples
  MemoryAccess access = MemoryAccess::kStreaming;  // memory-bound classes
  // Attention: cuDNN's samples as their own class, fitted (or checked) as attention_tiles.
  bool tiles = false;
};

// GEMMs per dtype in kAllDtypes order, then attention (its dtypes are checked later), with
// cuDNN's apart where |cudnn_tiles| (they fit or check attention_tiles), then memory-bound
// kernels, streaming then row reductions (each its own fraction).
std::vector<ClassSamples> GroupByClass(const std::vector<ProfileSample>& samples,
                                       bool cudnn_tiles = false) {
  std::vector<ClassSamples> classes;
  for (Dtype dtype : kAllDtypes) {
    ClassSamples c{OpKind::kGemm, dtype, {}};
    for (size_t i = 0; i < samples.size(); ++i) {
      const GemmShape* g = std::get_if<GemmShape>(&samples[i].shape);
      if (g != nullptr && g->dtype == dtype) c.index.push_back(i);
    }
    if (!c.index.empty()) classes.push_back(c);
  }
  for (bool tiled : {false, true}) {
    ClassSamples attention{OpKind::kAttention, std::nullopt, {}};
    attention.tiles = tiled;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].Kind() == OpKind::kAttention &&
          (cudnn_tiles && CudnnAttention(samples[i]) != nullptr) == tiled)
        attention.index.push_back(i);
    }
    if (!attention.index.empty()) {
      attention.dtype = std::get<AttentionShape>(samples[attention.index.front()].shape).dtype;
      classes.push_back(attention);
    }
  }
  for (MemoryAccess access : {MemoryAccess::kStreaming, MemoryAccess::kRowReduction}) {
    ClassSamples c{OpKind::kMemoryBound, std::nullopt, {}, access};
    for (size_t i = 0; i < samples.size(); ++i) {
      const MemoryShape* m = std::get_if<MemoryShape>(&samples[i].shape);
      if (m != nullptr && m->access == access) c.index.push_back(i);
    }
    if (!c.index.empty()) classes.push_back(c);
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
  for (const std::string& f : files)
    out += (out.empty() ? "" : ", ") + (f.empty() ? "the profile" : f);
  KernelClassFit name;
  name.kind = c.kind;
  name.dtype = c.dtype;
  name.access = c.access;
  return out + ": the " + name.Name() + " samples";
}

Status CheckClasses(const std::vector<ProfileSample>& samples,
                    const std::vector<ClassSamples>& classes, const GpuSpec& gpu) {
  if (samples.empty())
    return Status::InvalidArgument(
        "the profile has no samples to fit; measure some with loom probe");
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
      return Status::InvalidArgument(
          samples[i].where + ": attention in " + std::string(kDtypeNames.Name(a->dtype)) +
          " after attention in " + std::string(kDtypeNames.Name(*c.dtype)) +
          "; the calibration has one attention_efficiency: fit the dtype training uses");
    }
    if (c.dtype && !gpu.PeakTflops(*c.dtype)) {
      const std::string dtype(kDtypeNames.Name(*c.dtype));
      return Status::InvalidArgument(what + " are " + dtype + " but " + gpu.file +
                                     " has no peak_tflops." + dtype +
                                     "; add the datasheet's dense rate, or remove those samples");
    }
  }
  return Status::Ok();
}

std::string KeyOf(const ClassSamples& c) {
  if (c.kind == OpKind::kGemm) return GemmEfficiencyKey(*c.dtype);
  if (c.kind == OpKind::kAttention) return c.tiles ? "attention_tiles" : "attention_efficiency";
  return c.access == MemoryAccess::kRowReduction ? "memory_bandwidth_fraction_row_reduction"
                                                 : "memory_bandwidth_fraction";
}

// The class's row of the report: its kind, dtype and access, its key and |cal|'s value of it (0
// where the calibration has none; row reductions without their own fraction show the streaming
// one they are timed at).
KernelClassFit ClassFitOf(const ClassSamples& c, const ComputeCalibration& cal) {
  KernelClassFit out;
  out.kind = c.kind;
  out.dtype = c.dtype;
  out.access = c.access;
  out.key = KeyOf(c);
  if (c.kind == OpKind::kGemm) out.value = cal.GemmEfficiency(*c.dtype).value_or(0);
  if (c.kind == OpKind::kAttention && !c.tiles) out.value = cal.attention_efficiency.value_or(0);
  // The tiles' headline figure: the forward block loop's share of the tensor peak.
  if (c.kind == OpKind::kAttention && c.tiles) {
    const std::optional<AttentionTileParams>& t =
        cal.attention_forward_tiles ? cal.attention_forward_tiles : cal.attention_backward_tiles;
    out.value = t ? t->matmul_efficiency : 0;
  }
  out.tiles = c.tiles;
  if (c.kind == OpKind::kMemoryBound) {
    const std::optional<double>& own = c.access == MemoryAccess::kRowReduction
                                           ? cal.memory_bandwidth_fraction_row_reduction
                                           : cal.memory_bandwidth_fraction;
    out.value = own.value_or(cal.memory_bandwidth_fraction.value_or(0));
  }
  return out;
}

// A profile times GEMM kernels on operands already in their dtype, so fp8 samples are predicted
// without Transformer Engine's casts (GemmKernel, not Gemm).
double PredictedUs(const RooflineComputeModel& model, const KernelShape& shape) {
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) return model.GemmKernel(*g).ToMicros();
  if (const AttentionShape* a = std::get_if<AttentionShape>(&shape))
    return model.Attention(*a).ToMicros();
  return model.MemoryBound(std::get<MemoryShape>(shape)).ToMicros();
}

// Fills the residuals of |fit|'s classes under its calibration, each sample at the clocks it ran
// at (HeldAtPowerLimit) or, in a |sustained| class, at the sustained ceiling, and the mean |error|
// of the samples (each counted once: a sustained class repeats samples of another).
void Score(const std::vector<ProfileSample>& samples, const std::vector<ClassSamples>& members,
           const GpuSpec& gpu, ComputeFit* fit) {
  GpuSpec calibrated = gpu;
  calibrated.calibration = fit->calibration;
  const RooflineComputeModel burst(calibrated, ClockRegime::kBurst);
  const RooflineComputeModel sustained(calibrated, ClockRegime::kSustained);
  double total = 0;
  for (size_t c = 0; c < members.size(); ++c) {
    KernelClassFit& out = fit->classes[c];
    out.residuals.clear();
    out.mean_abs_relative_error = out.max_abs_relative_error = 0;
    out.spread.reset();
    double spread_sum = 0;
    int with_spread = 0;
    for (size_t i : members[c].index) {
      const ProfileSample& s = samples[i];
      const bool at_ceiling = out.sustained || HeldAtPowerLimit(s);
      const double predicted = PredictedUs(at_ceiling ? sustained : burst, s.shape);
      const double error = (predicted - s.median_us) / s.median_us;
      out.residuals.push_back({i, s.median_us, predicted, error});
      out.mean_abs_relative_error +=
          std::fabs(error) / static_cast<double>(members[c].index.size());
      out.max_abs_relative_error = std::max(out.max_abs_relative_error, std::fabs(error));
      if (!out.sustained) total += std::fabs(error);
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

bool Accumulates(const ProfileSample& s) {
  const GemmShape* g = std::get_if<GemmShape>(&s.shape);
  return g != nullptr && g->accumulate_fp32;
}

// Mean |error| of |fit| over the samples that accumulate into fp32.
double AccumulatingError(const std::vector<ProfileSample>& samples, const ComputeFit& fit) {
  double sum = 0;
  size_t count = 0;
  for (const KernelClassFit& c : fit.classes) {
    for (const SampleResidual& r : c.residuals) {
      if (Accumulates(samples[r.sample])) sum += std::fabs(r.relative_error), ++count;
    }
  }
  return count == 0 ? 0.0 : sum / static_cast<double>(count);
}

// bf16 and fp16 GEMMs share one fitted efficiency (FitComputeJointly), so a bound on either is the
// bf16 class's.
bool SameGemmClass(Dtype a, Dtype b) {
  auto cls = [](Dtype d) { return d == Dtype::kFp16 ? Dtype::kBf16 : d; };
  return cls(a) == cls(b);
}

// The error of a class whose efficiency the bound held at 1 (FitComputeJointly), naming its
// samples.
Status CheckBounds(const std::vector<ProfileSample>& samples,
                   const std::vector<ClassSamples>& classes, const JointComputeFit& joint,
                   const GpuSpec& gpu) {
  for (const ClassSamples& c : classes) {
    std::optional<double> wanted;
    if (c.kind == OpKind::kGemm) {
      for (const auto& [dtype, inverse] : joint.gemm_wanted) {
        if (SameGemmClass(dtype, *c.dtype)) wanted = inverse;
      }
    }
    if (c.kind == OpKind::kAttention) wanted = joint.attention_wanted;
    if (c.kind == OpKind::kMemoryBound) {
      wanted = c.access == MemoryAccess::kRowReduction ? joint.row_reduction_wanted
                                                       : joint.memory_wanted;
    }
    if (wanted)
      LOOM_RETURN_IF_ERROR(
          CheckInverseEfficiency(*wanted, ClassWhat(samples, c), c.kind, c.dtype, gpu));
  }
  return Status::Ok();
}

// The keys FitComputeJointly fitted, in the order of ReadComputeCalibration, and those it removes.
void SetKeys(const std::vector<ClassSamples>& classes, ComputeFit* fit) {
  const bool gemms = classes.front().kind == OpKind::kGemm;
  if (gemms) {
    fit->removed_keys = {"gemm_tile_m", "gemm_tile_n"};
    const bool operand = fit->calibration.gemm_operand_bandwidth_GBps.has_value();
    if (operand) fit->fitted_keys.push_back("gemm_operand_bandwidth_GBps");
    if (!operand) fit->removed_keys.push_back("gemm_operand_bandwidth_GBps");
    fit->fitted_keys.push_back("gemm_wave_latency_us");
    for (Dtype dtype : kAllDtypes) {
      for (const ClassSamples& c : classes) {
        if (c.kind == OpKind::kGemm && SameGemmClass(*c.dtype, dtype)) {
          fit->fitted_keys.push_back(GemmEfficiencyKey(dtype));
          break;
        }
      }
    }
    fit->fitted_keys.push_back("kernel_overhead_us");
  }
  for (const ClassSamples& c : classes) {
    if (c.kind != OpKind::kGemm) fit->fitted_keys.push_back(KeyOf(c));
  }
}

// Whether |gpu|'s operand term is below 1e-4 of every GEMM sample's time: a least-squares fit of
// times rounded to the nanosecond leaves such a term where the truth has none, and a file should
// not carry a bandwidth (of petabytes per second) that changes no prediction.
bool NegligibleOperandTerm(const std::vector<ProfileSample>& samples, const GpuSpec& gpu) {
  if (!gpu.calibration.gemm_operand_bandwidth_GBps) return false;
  for (const ProfileSample& s : samples) {
    const GemmShape* g = std::get_if<GemmShape>(&s.shape);
    if (g == nullptr) continue;
    const GemmRates rates = GemmRatesOf(gpu, g->dtype);
    const double operand_s =
        ChooseGemmTile(*g, rates).operand_bytes_per_sm * rates.seconds_per_operand_byte;
    if (operand_s > 1e-4 * s.median_us * 1e-6) return false;
  }
  return true;
}

// FitComputeJointly with gemm_epilogue_overlap set to |overlap|, its bounds checked and its
// residuals scored.
Result<ComputeFit> FitWithOverlap(const std::vector<ProfileSample>& samples,
                                  const std::vector<ClassSamples>& classes, const GpuSpec& gpu,
                                  bool overlap) {
  GpuSpec trial = gpu;
  trial.calibration.gemm_epilogue_overlap = overlap;
  // cuDNN attention samples too few for tiles (FitComputeCalibration), and FlashAttention-2's, fit
  // the single attention_efficiency, which the file's tiles of their family
  // (cost/attention_tiles.h) would override for them: the fit drops those tiles (SetKeys removes
  // the key).
  std::vector<AttentionFamily> dropped;
  for (AttentionFamily family : {AttentionFamily::kCudnn, AttentionFamily::kFlashAttention2}) {
    const bool sampled = std::any_of(samples.begin(), samples.end(), [&](const ProfileSample& s) {
      return AttentionOf(s, family);
    });
    const ComputeCalibration& file = gpu.calibration;
    if (!sampled || !(file.AttentionTiles(family, false) || file.AttentionTiles(family, true)))
      continue;
    trial.calibration.AttentionTilesSlot(family, false).reset();
    trial.calibration.AttentionTilesSlot(family, true).reset();
    dropped.push_back(family);
  }
  std::vector<KernelSample> kernels;
  for (const ProfileSample& s : samples) kernels.push_back({s.shape, s.median_us * 1e-6});
  Result<JointComputeFit> joint = FitComputeJointly(kernels, trial);
  if (!joint.ok()) {
    return Status::InvalidArgument(ClassWhat(samples, classes.front()) +
                                   " (and every other class): " + joint.status().message());
  }
  LOOM_RETURN_IF_ERROR(CheckBounds(samples, classes, *joint, gpu));
  ComputeFit fit;
  fit.calibration = joint->calibration;
  trial.calibration = fit.calibration;
  if (NegligibleOperandTerm(samples, trial)) fit.calibration.gemm_operand_bandwidth_GBps.reset();
  for (const ClassSamples& k : classes) fit.classes.push_back(ClassFitOf(k, fit.calibration));
  SetKeys(classes, &fit);
  for (AttentionFamily family : dropped)
    fit.removed_keys.push_back(ComputeCalibration::AttentionTilesKey(family));
  Score(samples, classes, gpu, &fit);
  return fit;
}

// The joint fit of every class at the burst clocks a profile's samples ran at.
Result<ComputeFit> FitAtBurstClocks(const std::vector<ProfileSample>& samples, const GpuSpec& gpu) {
  const std::vector<ClassSamples> classes = GroupByClass(samples);
  LOOM_RETURN_IF_ERROR(CheckClasses(samples, classes, gpu));
  const size_t accumulating =
      static_cast<size_t>(std::count_if(samples.begin(), samples.end(), Accumulates));
  if (accumulating == 0)
    return FitWithOverlap(samples, classes, gpu, gpu.calibration.gemm_epilogue_overlap);
  // The model costs an accumulating epilogue per gemm_epilogue_overlap, a fact of the GPU's
  // kernels that the probe's pairs (each weight-gradient GEMM accumulating and plain) settle: fit
  // under each setting, keep the one that predicts the accumulating samples better (the file's on
  // a tie).
  std::optional<Result<ComputeFit>> serial, overlapped;
  serial.emplace(FitWithOverlap(samples, classes, gpu, false));
  overlapped.emplace(FitWithOverlap(samples, classes, gpu, true));
  if (!serial->ok() && !overlapped->ok())
    return gpu.calibration.gemm_epilogue_overlap ? *overlapped : *serial;
  EpilogueOverlapFit choice;
  choice.samples = accumulating;
  if (serial->ok()) choice.serial_error = AccumulatingError(samples, **serial);
  if (overlapped->ok()) choice.overlapped_error = AccumulatingError(samples, **overlapped);
  const double serial_error = choice.serial_error.value_or(std::numeric_limits<double>::infinity());
  const double overlapped_error =
      choice.overlapped_error.value_or(std::numeric_limits<double>::infinity());
  choice.overlap = serial_error == overlapped_error ? gpu.calibration.gemm_epilogue_overlap
                                                    : overlapped_error < serial_error;
  ComputeFit fit = (choice.overlap ? *overlapped : *serial).value();
  fit.epilogue_overlap = choice;
  fit.fitted_keys.insert(
      std::find(fit.fitted_keys.begin(), fit.fitted_keys.end(), "gemm_wave_latency_us") + 1,
      "gemm_epilogue_overlap");
  return fit;
}

// The dtypes that share |path|'s sustained fraction: bf16 and fp16 (one tensor-core path), or
// |path| alone.
std::vector<Dtype> PathDtypes(Dtype path) {
  if (path == Dtype::kBf16 || path == Dtype::kFp16) return {Dtype::kBf16, Dtype::kFp16};
  return {path};
}

// Whether |s| is a GEMM of |path|'s tensor-core path (SameGemmClass: bf16 and fp16 share one).
bool OnPath(const ProfileSample& s, Dtype path) {
  const GemmShape* g = std::get_if<GemmShape>(&s.shape);
  return g != nullptr && SameGemmClass(g->dtype, path);
}

// The tensor-core paths (bf16 for bf16 and fp16) with at least kMinSustainedSamples GEMMs that
// HeldAtPowerLimit, in kAllDtypes order.
std::vector<Dtype> SustainedPaths(const std::vector<ProfileSample>& samples) {
  std::vector<Dtype> paths;
  for (Dtype path : {Dtype::kBf16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32}) {
    const auto held = std::count_if(samples.begin(), samples.end(), [&](const ProfileSample& s) {
      return OnPath(s, path) && HeldAtPowerLimit(s);
    });
    if (static_cast<size_t>(held) >= kMinSustainedSamples) paths.push_back(path);
  }
  return paths;
}

// The sustained fraction of |path| that predicts its HeldAtPowerLimit GEMMs best (least squares of
// their relative errors under ClockRegime::kSustained, |gpu|'s calibration otherwise as it is):
// a scan of the fraction in steps of 0.01, then of 0.0001 around the best.
SustainedFractionFit FitSustainedFraction(const std::vector<ProfileSample>& samples, Dtype path,
                                          const GpuSpec& gpu) {
  std::vector<const ProfileSample*> held;
  for (const ProfileSample& s : samples) {
    if (OnPath(s, path) && HeldAtPowerLimit(s)) held.push_back(&s);
  }
  auto errors = [&](std::optional<double> fraction, ClockRegime clocks) {
    GpuSpec trial = gpu;
    for (Dtype d : PathDtypes(path)) trial.calibration.SustainedTensorFractionSlot(d) = fraction;
    const RooflineComputeModel model(trial, clocks);
    std::vector<double> out;
    for (const ProfileSample* s : held)
      out.push_back((PredictedUs(model, s->shape) - s->median_us) / s->median_us);
    return out;
  };
  auto squares = [&](double fraction) {
    double sum = 0;
    for (double e : errors(fraction, ClockRegime::kSustained)) sum += e * e;
    return sum;
  };
  auto mean_abs = [](const std::vector<double>& v) {
    double sum = 0;
    for (double e : v) sum += std::fabs(e);
    return sum / static_cast<double>(v.size());
  };
  double best = 1.0;
  for (double step : {0.01, 0.0001}) {
    const double from = step == 0.01 ? 0.05 : std::max(0.05, best - 0.01);
    const double to = step == 0.01 ? 1.0 : std::min(1.0, best + 0.01);
    double best_squares = squares(best);
    for (int i = 0; from + i * step <= to + 1e-12; ++i) {
      const double f = from + i * step;
      if (const double q = squares(f); q < best_squares) best = f, best_squares = q;
    }
  }
  SustainedFractionFit fit;
  fit.dtype = path;
  fit.samples = held.size();
  const std::vector<double> burst = errors(std::nullopt, ClockRegime::kBurst);
  const std::vector<double> capped = errors(best, ClockRegime::kSustained);
  fit.burst_error = mean_abs(burst);
  fit.sustained_error = mean_abs(capped);
  bool binds = false;
  for (size_t i = 0; i < held.size(); ++i) binds = binds || capped[i] != burst[i];
  if (binds) fit.fraction = best;
  return fit;
}

}  // namespace

bool HeldAtPowerLimit(const ProfileSample& sample) {
  return sample.Kind() == OpKind::kGemm && sample.median_us >= kSustainedGemmMinUs;
}

std::string KernelClassFit::Name() const {
  std::string name(kOpKindNames.Name(kind));
  if (dtype) name += " " + std::string(kDtypeNames.Name(*dtype));
  if (kind == OpKind::kMemoryBound && access != MemoryAccess::kStreaming)
    name += " " + std::string(kMemoryAccessNames.Name(access));
  if (tiles) name += " cudnn";
  return sustained ? name + " sustained" : name;
}

namespace {

// FitComputeCalibration of every sample by the joint fit (the sustained fraction apart).
Result<ComputeFit> FitJointly(const std::vector<ProfileSample>& samples, const GpuSpec& gpu) {
  const std::vector<ClassSamples> classes = GroupByClass(samples);
  LOOM_RETURN_IF_ERROR(CheckClasses(samples, classes, gpu));
  const std::vector<Dtype> paths = SustainedPaths(samples);
  std::vector<ProfileSample> burst;
  for (const ProfileSample& s : samples) {
    const bool apart = HeldAtPowerLimit(s) && std::any_of(paths.begin(), paths.end(),
                                                          [&](Dtype p) { return OnPath(s, p); });
    if (!apart) burst.push_back(s);
  }
  // The long GEMMs are fitted apart only where the rest still fits every class (three shapes of
  // each): else all are fitted together at burst clocks, as before sustained clocks were modelled.
  const std::vector<ClassSamples> burst_classes = GroupByClass(burst);
  if (paths.empty() || burst_classes.size() != classes.size() ||
      !CheckClasses(burst, burst_classes, gpu).ok()) {
    return FitAtBurstClocks(samples, gpu);
  }
  LOOM_ASSIGN_OR_RETURN(ComputeFit fit, FitAtBurstClocks(burst, gpu));
  GpuSpec fitted = gpu;
  fitted.calibration = fit.calibration;
  for (Dtype path : paths) {
    SustainedFractionFit f = FitSustainedFraction(samples, path, fitted);
    for (Dtype d : PathDtypes(path)) {
      fit.calibration.SustainedTensorFractionSlot(d) = f.fraction;
      (f.fraction ? fit.fitted_keys : fit.removed_keys).push_back(SustainedTensorFractionKey(d));
    }
    fit.sustained.push_back(f);
  }
  // The residuals again over every sample, the long GEMMs at the ceiling just fitted.
  Score(samples, classes, gpu, &fit);
  return fit;
}

}  // namespace

Result<ComputeFit> FitComputeCalibration(const std::vector<ProfileSample>& samples,
                                         const GpuSpec& gpu) {
  // cuDNN's attention (every attention sample loom probe writes) fits the tile model of
  // cost/attention_tiles.h per pass, apart from the joint fit, where each pass it has has
  // kMinAttentionTileSamples samples; fewer fit the single attention_efficiency with the rest.
  std::array<std::vector<AttentionTiming>, 2> passes;
  std::vector<ProfileSample> rest;
  for (const ProfileSample& s : samples) {
    if (const AttentionShape* a = CudnnAttention(s)) {
      passes[a->backward ? 1 : 0].push_back({*a, s.median_us * 1e-6});
    } else {
      rest.push_back(s);
    }
  }
  const bool tiles =
      std::any_of(passes.begin(), passes.end(), [](const auto& p) { return !p.empty(); }) &&
      std::all_of(passes.begin(), passes.end(),
                  [](const auto& p) { return p.empty() || p.size() >= kMinAttentionTileSamples; });
  if (!tiles) return FitJointly(samples, gpu);
  ComputeFit fit;
  fit.calibration = gpu.calibration;
  if (!rest.empty()) {
    LOOM_ASSIGN_OR_RETURN(fit, FitJointly(rest, gpu));
  }
  const std::vector<ClassSamples> classes = GroupByClass(samples, true);
  for (size_t backward = 0; backward < 2; ++backward) {
    if (passes[backward].empty()) continue;
    Result<AttentionTileParams> params = FitAttentionTiles(passes[backward], gpu);
    if (!params.ok()) {
      const auto tiled = std::find_if(classes.begin(), classes.end(),
                                      [](const ClassSamples& c) { return c.tiles; });
      return Status::InvalidArgument(ClassWhat(samples, *tiled) + " (" +
                                     (backward ? "backward" : "forward") +
                                     "): " + params.status().message());
    }
    (backward ? fit.calibration.attention_backward_tiles
              : fit.calibration.attention_forward_tiles) = *params;
  }
  // The joint fit's classes again, with the tiles' among them in GroupByClass order, each scored
  // over every sample.
  fit.classes.clear();
  for (const ClassSamples& c : classes) fit.classes.push_back(ClassFitOf(c, fit.calibration));
  fit.fitted_keys.insert(
      std::find_if(fit.fitted_keys.begin(), fit.fitted_keys.end(),
                   [](const std::string& k) { return k.starts_with("memory_bandwidth"); }),
      "attention_tiles");
  std::erase(fit.removed_keys, "attention_tiles");
  Score(samples, classes, gpu, &fit);
  return fit;
}

Result<ComputeFit> CheckComputeCalibration(const std::vector<ProfileSample>& samples,
                                           const GpuSpec& gpu) {
  if (samples.empty())
    return Status::InvalidArgument("the profile has no samples to check the calibration against");
  const std::vector<ClassSamples> classes =
      GroupByClass(samples, HasAttentionTiles(gpu.calibration));
  ComputeFit check;
  check.calibration = gpu.calibration;
  for (const ClassSamples& k : classes) {
    if (k.dtype && !gpu.PeakTflops(*k.dtype)) {
      const std::string dtype(kDtypeNames.Name(*k.dtype));
      return Status::InvalidArgument(ClassWhat(samples, k) + " are " + dtype + " but " + gpu.file +
                                     " has no peak_tflops." + dtype + " to predict them with");
    }
    check.classes.push_back(ClassFitOf(k, gpu.calibration));
  }
  std::vector<ClassSamples> scored = classes;
  for (const ClassSamples& k : classes) {
    const std::optional<double> fraction =
        k.kind == OpKind::kGemm ? gpu.calibration.SustainedTensorFraction(*k.dtype) : std::nullopt;
    if (!fraction) continue;
    KernelClassFit& out = check.classes.emplace_back();
    out.kind = k.kind;
    out.dtype = k.dtype;
    out.key = SustainedTensorFractionKey(*k.dtype);
    out.value = *fraction;
    out.sustained = true;
    scored.push_back(k);
  }
  Score(samples, scored, gpu, &check);
  return check;
}

void SetFittedOn(const std::vector<std::string>& profile_paths, ComputeFit* fit) {
  const bool gemms = std::find(fit->fitted_keys.begin(), fit->fitted_keys.end(),
                               "kernel_overhead_us") != fit->fitted_keys.end();
  std::vector<std::string> names;
  if (!gemms) names = fit->calibration.fitted_on;
  for (const std::string& path : profile_paths) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.size() > 5 && name.ends_with(".json")) AddFittedOn(path, &names);
  }
  fit->calibration.fitted_on = names;
}

nlohmann::ordered_json WithComputeCalibration(const nlohmann::ordered_json& gpu_file,
                                              const ComputeFit& fit) {
  const ComputeCalibration& c = fit.calibration;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (const std::string& key : fit.fitted_keys) {
    if (key == "gemm_operand_bandwidth_GBps") {
      values[key] = RoundSignificant(c.gemm_operand_bandwidth_GBps.value_or(0), 4);
    }
    if (key == "gemm_wave_latency_us")
      values[key] = RoundSignificant(c.gemm_wave_latency_us.value_or(0), 4);
    if (key == "gemm_epilogue_overlap") values[key] = c.gemm_epilogue_overlap;
    if (key == "kernel_overhead_us") values[key] = RoundSignificant(c.kernel_overhead_us, 4);
    if (key == "attention_efficiency")
      values[key] = RoundSignificant(c.attention_efficiency.value_or(1), 4);
    if (key == "attention_tiles") values[key] = AttentionTilesJson(c);
    if (key == "memory_bandwidth_fraction")
      values[key] = RoundSignificant(c.memory_bandwidth_fraction.value_or(1), 4);
    if (key == "memory_bandwidth_fraction_row_reduction")
      values[key] = RoundSignificant(c.MemoryBandwidthFraction(MemoryAccess::kRowReduction), 4);
    for (Dtype dtype : kAllDtypes) {
      if (key == GemmEfficiencyKey(dtype))
        values[key] = RoundSignificant(c.GemmEfficiencySlot(dtype).value_or(1), 4);
      if (key == SustainedTensorFractionKey(dtype))
        values[key] = RoundSignificant(c.SustainedTensorFraction(dtype).value_or(1), 4);
    }
  }
  if (!c.fitted_on.empty()) values["fitted_on"] = c.fitted_on;
  return WithCalibration(gpu_file, values, c.source, fit.removed_keys);
}

}  // namespace loom
