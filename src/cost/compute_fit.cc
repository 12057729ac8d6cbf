#include "cost/compute_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "cost/compute_model.h"
#include "cost/gemm_tiles.h"
#include "cost/roofline_fit.h"

namespace loom {
namespace {

Status CheckSamples(const std::vector<GemmSample>& samples, const GpuSpec& gpu) {
  if (samples.size() < 3) {
    return Status::InvalidArgument("GEMM fit for " + gpu.name + ": " + std::to_string(samples.size()) +
                                   " samples; at least 3 shapes are needed to fit an efficiency and an overhead");
  }
  for (const GemmSample& s : samples) {
    const GemmShape& g = s.shape;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 || !(s.time_s > 0)) {
      return Status::InvalidArgument("GEMM fit for " + gpu.name + ": sample " + std::to_string(g.m) + "x" +
                                     std::to_string(g.n) + "x" + std::to_string(g.k) +
                                     " has a non-positive size or time; remove it from the profile");
    }
    if (!gpu.PeakTflops(g.dtype)) {
      return Status::InvalidArgument("GEMM fit: " + gpu.name + " (" + gpu.file + ") has no peak for " +
                                     std::string(kDtypeNames.Name(g.dtype)));
    }
  }
  return Status::Ok();
}

// bf16 and fp16 share an efficiency; every other dtype has its own.
Dtype EfficiencyClass(Dtype dtype) { return dtype == Dtype::kFp16 ? Dtype::kBf16 : dtype; }

// The unknowns of the GEMM fit: overhead (s), seconds per unhidden operand byte per SM, seconds
// per wave, and one inverse efficiency per class.
struct GemmUnknowns {
  double overhead_s = 0;
  double operand_s_per_byte = 0;
  double wave_s = 0;
  std::vector<double> inverse_efficiency;
};

struct GemmProblem {
  const std::vector<GemmSample>* samples = nullptr;
  const GpuSpec* gpu = nullptr;
  std::vector<Dtype> classes;
  std::vector<size_t> class_of;  // per sample
};

GemmFit ToFit(const GemmProblem& p, const GemmUnknowns& x) {
  GemmFit fit;
  for (size_t c = 0; c < p.classes.size(); ++c) {
    GemmDtypeEfficiency& e = fit.efficiencies.emplace_back();
    e.dtypes = p.classes[c] == Dtype::kBf16 ? std::vector<Dtype>{Dtype::kBf16, Dtype::kFp16}
                                            : std::vector<Dtype>{p.classes[c]};
    e.efficiency = 1.0 / x.inverse_efficiency[c];
  }
  if (x.operand_s_per_byte > 0) {
    fit.operand_bandwidth_GBps = static_cast<double>(p.gpu->sm_count) / x.operand_s_per_byte * 1e-9;
  }
  fit.wave_latency_us = x.wave_s * 1e6;
  fit.overhead_us = x.overhead_s * 1e6;
  return fit;
}

GpuSpec WithUnknowns(const GemmProblem& p, const GemmUnknowns& x) {
  GpuSpec gpu = *p.gpu;
  gpu.calibration = ToFit(p, x).Applied(gpu.calibration);
  return gpu;
}

// Solves min sum_i w_i (a_i . x - y_i)^2 for the unknowns not in |fixed| (the others held at their
// value there); false when the free unknowns are not determined.
bool SolveWeighted(const std::vector<std::vector<double>>& a, const std::vector<double>& y,
                   const std::vector<double>& w, const std::vector<std::optional<double>>& fixed,
                   std::vector<double>* x) {
  const size_t n = fixed.size();
  std::vector<size_t> free;
  for (size_t j = 0; j < n; ++j) {
    if (!fixed[j]) free.push_back(j);
  }
  const size_t f = free.size();
  std::vector<std::vector<double>> normal(f, std::vector<double>(f + 1, 0.0));
  for (size_t i = 0; i < a.size(); ++i) {
    double rhs = y[i];
    for (size_t j = 0; j < n; ++j) {
      if (fixed[j]) rhs -= a[i][j] * *fixed[j];
    }
    for (size_t r = 0; r < f; ++r) {
      for (size_t c = 0; c < f; ++c) normal[r][c] += w[i] * a[i][free[r]] * a[i][free[c]];
      normal[r][f] += w[i] * a[i][free[r]] * rhs;
    }
  }
  for (size_t col = 0; col < f; ++col) {  // Gaussian elimination, partial pivoting
    size_t pivot = col;
    for (size_t r = col + 1; r < f; ++r) {
      if (std::fabs(normal[r][col]) > std::fabs(normal[pivot][col])) pivot = r;
    }
    if (!(std::fabs(normal[pivot][col]) > 1e-300)) return false;
    std::swap(normal[col], normal[pivot]);
    for (size_t r = 0; r < f; ++r) {
      if (r == col) continue;
      const double factor = normal[r][col] / normal[col][col];
      for (size_t c = col; c <= f; ++c) normal[r][c] -= factor * normal[col][c];
    }
  }
  x->assign(n, 0.0);
  for (size_t j = 0; j < n; ++j) {
    if (fixed[j]) (*x)[j] = *fixed[j];
  }
  for (size_t r = 0; r < f; ++r) (*x)[free[r]] = normal[r][f] / normal[r][r];
  return std::all_of(x->begin(), x->end(), [](double v) { return std::isfinite(v); });
}

// One least-squares step with the tile choices of |x|: the unknowns that fit the samples best with
// those choices held, within their bounds (overhead and operand cost >= 0, inverse efficiency >= 1).
std::optional<GemmUnknowns> Solve(const GemmProblem& p, const GemmUnknowns& x) {
  const GpuSpec trial = WithUnknowns(p, x);
  const size_t n = 3 + p.classes.size();
  std::vector<std::vector<double>> a;
  std::vector<double> y, w;
  for (size_t i = 0; i < p.samples->size(); ++i) {
    const GemmSample& s = (*p.samples)[i];
    const GemmRates rates = GemmRatesOf(trial, s.shape.dtype);
    const GemmTileChoice choice = ChooseGemmTile(s.shape, rates);
    std::vector<double> row(n, 0.0);
    row[0] = 1.0;
    row[1] = choice.operand_bytes_per_sm;
    row[2] = static_cast<double>(choice.waves);
    row[3 + p.class_of[i]] = choice.flops_per_sm * static_cast<double>(trial.sm_count) /
                             (trial.PeakTflops(s.shape.dtype).value_or(0.0) * 1e12);
    a.push_back(row);
    y.push_back(s.time_s - choice.split_k_bytes * rates.seconds_per_hbm_byte);
    w.push_back(1.0 / (s.time_s * s.time_s));
  }
  std::vector<double> lower(n, 1.0);
  lower[0] = lower[1] = lower[2] = 0.0;
  std::vector<std::optional<double>> fixed(n);
  std::vector<double> v;
  for (size_t round = 0; round <= n; ++round) {
    if (!SolveWeighted(a, y, w, fixed, &v)) return std::nullopt;
    size_t worst = n;
    for (size_t j = 0; j < n; ++j) {
      if (!fixed[j] && v[j] < lower[j] && (worst == n || v[j] - lower[j] < v[worst] - lower[worst])) worst = j;
    }
    if (worst == n) break;
    fixed[worst] = lower[worst];
  }
  GemmUnknowns out;
  out.overhead_s = std::max(v[0], 0.0);
  out.operand_s_per_byte = std::max(v[1], 0.0);
  out.wave_s = std::max(v[2], 0.0);
  for (size_t c = 0; c < p.classes.size(); ++c) out.inverse_efficiency.push_back(std::max(v[3 + c], 1.0));
  return out;
}

// Sum of squared relative errors of the tile model (no memory floor) with |x|, and the choices.
double Sse(const GemmProblem& p, const GemmUnknowns& x, std::vector<int64_t>* choices) {
  const GpuSpec trial = WithUnknowns(p, x);
  double sse = 0;
  choices->clear();
  for (const GemmSample& s : *p.samples) {
    const GemmTileChoice c = ChooseGemmTile(s.shape, trial);
    choices->push_back(c.tile_m * 1'000'000 + c.tile_n * 100 + c.split_k);
    const double r = (x.overhead_s + c.time_s) / s.time_s - 1.0;
    sse += r * r;
  }
  return sse;
}

}  // namespace

ComputeCalibration GemmFit::Applied(const ComputeCalibration& calibration) const {
  ComputeCalibration c = calibration;
  for (const GemmDtypeEfficiency& e : efficiencies) {
    for (Dtype d : e.dtypes) c.GemmEfficiencySlot(d) = e.efficiency;
  }
  c.gemm_operand_bandwidth_GBps = operand_bandwidth_GBps;
  c.gemm_wave_latency_us = wave_latency_us;
  c.kernel_overhead_us = overhead_us;
  c.gemm_tile_m = c.gemm_tile_n = 0;
  return c;
}

Result<GemmFit> FitGemm(const std::vector<GemmSample>& samples, const GpuSpec& gpu) {
  LOOM_RETURN_IF_ERROR(CheckSamples(samples, gpu));
  GemmProblem p;
  p.samples = &samples;
  p.gpu = &gpu;
  for (const std::string& name : kDtypeNames.Names()) {
    const Dtype d = *kDtypeNames.Parse(name);
    for (const GemmSample& s : samples) {
      if (EfficiencyClass(s.shape.dtype) == d) {
        p.classes.push_back(d);
        break;
      }
    }
  }
  for (const GemmSample& s : samples) {
    p.class_of.push_back(static_cast<size_t>(
        std::find(p.classes.begin(), p.classes.end(), EfficiencyClass(s.shape.dtype)) - p.classes.begin()));
  }
  if (samples.size() < 3 + p.classes.size()) {
    return Status::InvalidArgument("GEMM fit for " + gpu.name + ": " + std::to_string(samples.size()) +
                                   " samples for " + std::to_string(3 + p.classes.size()) +
                                   " unknowns (an overhead, a wave latency, an operand bandwidth and one efficiency per dtype); "
                                   "add shapes");
  }
  // Starting points: an efficiency, and the operand loads of a 128x128 tile as a fraction of its
  // math; the alternation from each, keeping the values of least error.
  const Dtype first = samples.front().shape.dtype;
  const double math_per_k_128 = 2.0 * 128 * 128 * static_cast<double>(gpu.sm_count) / (*gpu.PeakTflops(first) * 1e12);
  const double bytes_per_k_128 = 256.0 * static_cast<double>(BytesPerElement(first));
  std::optional<GemmUnknowns> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (double efficiency : {0.9, 0.75, 0.6}) {
    for (double operand_fraction : {0.0, 0.05, 0.15, 0.4}) {
      GemmUnknowns x;
      x.inverse_efficiency.assign(p.classes.size(), 1.0 / efficiency);
      x.operand_s_per_byte = operand_fraction * math_per_k_128 / efficiency / bytes_per_k_128;
      std::vector<int64_t> choices, previous;
      Sse(p, x, &previous);
      for (int iteration = 0; iteration < 30; ++iteration) {
        std::optional<GemmUnknowns> next = Solve(p, x);
        if (!next) break;
        x = *next;
        const double sse = Sse(p, x, &choices);
        if (sse < best_sse) best_sse = sse, best = x;
        if (choices == previous) break;
        previous = choices;
      }
    }
  }
  if (!best) {
    return Status::InvalidArgument("GEMM fit for " + gpu.name +
                                   ": the samples do not determine the overhead, operand bandwidth and efficiencies; "
                                   "add shapes whose times differ several-fold");
  }
  GemmFit fit = ToFit(p, *best);
  GpuSpec calibrated = gpu;
  calibrated.calibration = fit.Applied(gpu.calibration);
  const RooflineComputeModel model(calibrated);
  for (const GemmSample& s : samples) {
    const double r = model.GemmKernel(s.shape).ToSeconds() / s.time_s - 1.0;
    fit.relative_errors.push_back(r);
    fit.mean_abs_relative_error += std::fabs(r) / static_cast<double>(samples.size());
  }
  return fit;
}

namespace {

Result<EfficiencyFit> FitOneClass(const WorkGroup& group, const std::string& what, OpKind kind,
                                  std::optional<Dtype> dtype, const GpuSpec& gpu) {
  const SharedOverheadFit shared = FitSharedOverhead({group});
  if (!shared.determined) {
    return Status::InvalidArgument(what + " all have the same work; vary the sizes to tell the overhead from the "
                                   "efficiency");
  }
  LOOM_RETURN_IF_ERROR(CheckInverseEfficiency(shared.inverse_efficiency[0], what, kind, dtype, gpu));
  EfficiencyFit fit;
  fit.efficiency = std::min(1.0, 1.0 / shared.inverse_efficiency[0]);
  fit.overhead_us = shared.overhead_s * 1e6;
  for (size_t i = 0; i < group.work_s.size(); ++i) {
    const double r = (shared.overhead_s + group.work_s[i] / fit.efficiency - group.time_s[i]) / group.time_s[i];
    fit.relative_errors.push_back(r);
    fit.mean_abs_relative_error += std::fabs(r) / static_cast<double>(group.work_s.size());
  }
  return fit;
}

}  // namespace

Result<EfficiencyFit> FitAttention(const std::vector<AttentionSample>& samples, const GpuSpec& gpu) {
  const std::string what = "attention fit for " + gpu.name;
  std::vector<KernelShape> shapes;
  WorkGroup group;
  for (const AttentionSample& s : samples) {
    shapes.emplace_back(s.shape);
    group.time_s.push_back(s.time_s);
  }
  LOOM_RETURN_IF_ERROR(CheckClassSamples(what, shapes, group.time_s));
  const Dtype dtype = samples.front().shape.dtype;
  for (const AttentionSample& s : samples) {
    if (s.shape.dtype != dtype) {
      return Status::InvalidArgument(what + ": samples mix dtypes; the calibration has one attention_efficiency, "
                                     "so fit one dtype");
    }
  }
  if (!gpu.PeakTflops(dtype)) {
    return Status::InvalidArgument(what + ": " + gpu.file + " has no peak_tflops." +
                                   std::string(kDtypeNames.Name(dtype)));
  }
  for (const AttentionSample& s : samples) group.work_s.push_back(AttentionWorkSeconds(s.shape, gpu));
  return FitOneClass(group, what + ": the samples", OpKind::kAttention, dtype, gpu);
}

Result<EfficiencyFit> FitMemoryBandwidth(const std::vector<MemorySample>& samples, const GpuSpec& gpu) {
  const std::string what = "memory-bound fit for " + gpu.name;
  std::vector<KernelShape> shapes;
  WorkGroup group;
  for (const MemorySample& s : samples) {
    shapes.emplace_back(s.shape);
    group.time_s.push_back(s.time_s);
    group.work_s.push_back(MemoryWorkSeconds(s.shape, gpu));
  }
  LOOM_RETURN_IF_ERROR(CheckClassSamples(what, shapes, group.time_s));
  return FitOneClass(group, what + ": the samples", OpKind::kMemoryBound, std::nullopt, gpu);
}

}  // namespace loom
