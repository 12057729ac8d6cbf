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
    return Status::InvalidArgument(
        "GEMM fit for " + gpu.name + ": " + std::to_string(samples.size()) +
        " samples; at least 3 shapes are needed to fit an efficiency and an overhead");
  }
  for (const GemmSample& s : samples) {
    const GemmShape& g = s.shape;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 || !(s.time_s > 0)) {
      return Status::InvalidArgument(
          "GEMM fit for " + gpu.name + ": sample " + std::to_string(g.m) + "x" +
          std::to_string(g.n) + "x" + std::to_string(g.k) +
          " has a non-positive size or time; remove it from the profile");
    }
    if (!gpu.PeakTflops(g.dtype)) {
      return Status::InvalidArgument("GEMM fit: " + gpu.name + " (" + gpu.file +
                                     ") has no peak for " + std::string(kDtypeNames.Name(g.dtype)));
    }
  }
  return Status::Ok();
}

// bf16 and fp16 share an efficiency; every other dtype has its own.
Dtype EfficiencyClass(Dtype dtype) { return dtype == Dtype::kFp16 ? Dtype::kBf16 : dtype; }

// The unknowns of the fit: overhead (s), seconds per unhidden operand byte per SM, seconds per
// wave, one inverse efficiency per GEMM class, and, in a joint fit (FitComputeJointly), the inverse
// attention efficiency and the inverse HBM bandwidth fraction.
struct GemmUnknowns {
  double overhead_s = 0;
  double operand_s_per_byte = 0;
  double wave_s = 0;
  std::vector<double> inverse_efficiency;
  double inverse_attention = 1;
  double inverse_memory = 1;
  // Per unknown (in Solve's column order), the value the least squares wanted when a bound held it.
  std::vector<std::optional<double>> wanted;
};

struct GemmProblem {
  const std::vector<KernelSample>* samples = nullptr;
  const GpuSpec* gpu = nullptr;
  std::vector<Dtype> classes;
  std::vector<size_t> class_of;  // per sample; GEMMs only
  // Joint fit only: which of the other unknowns are fitted. Unfitted ones hold |gpu|'s values.
  bool fit_gemm = true;  // operand bandwidth, wave latency and GEMM efficiencies
  bool fit_overhead = true;
  bool fit_attention = false;
  bool fit_memory = false;
};

// Column of each unknown in Solve.
constexpr size_t kOverheadColumn = 0, kOperandColumn = 1, kWaveColumn = 2, kFirstGemmColumn = 3;
size_t AttentionColumn(const GemmProblem& p) { return kFirstGemmColumn + p.classes.size(); }
size_t MemoryColumn(const GemmProblem& p) { return AttentionColumn(p) + 1; }
size_t Columns(const GemmProblem& p) { return MemoryColumn(p) + 1; }

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

ComputeCalibration CalibrationOf(const GemmProblem& p, const GemmUnknowns& x) {
  ComputeCalibration c = p.gpu->calibration;
  if (p.fit_gemm) c = ToFit(p, x).Applied(c);
  c.kernel_overhead_us = x.overhead_s * 1e6;
  if (p.fit_attention) c.attention_efficiency = 1.0 / x.inverse_attention;
  if (p.fit_memory) c.memory_bandwidth_fraction = 1.0 / x.inverse_memory;
  return c;
}

GpuSpec WithUnknowns(const GemmProblem& p, const GemmUnknowns& x) {
  GpuSpec gpu = *p.gpu;
  gpu.calibration = CalibrationOf(p, x);
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

// The row of one GEMM sample under the choices of |trial|, and the part of its time not linear in
// the unknowns (|offset|). HBM traffic (split-K's partial sums, an accumulating epilogue) goes in
// the memory column when the fit has one, else into the offset at |trial|'s bandwidth. Where the
// epilogue overlaps the main loop, the branch of max(main loop, epilogue traffic) that binds now.
void GemmRow(const GemmProblem& p, const GpuSpec& trial, size_t i, std::vector<double>* row,
             double* offset) {
  const GemmShape& g = std::get<GemmShape>((*p.samples)[i].shape);
  const GemmRates rates = GemmRatesOf(trial, g.dtype);
  const GemmTileChoice choice = ChooseGemmTile(g, rates);
  const double datasheet_s_per_byte = 1.0 / (trial.hbm_bandwidth_GBps * 1e9);
  auto traffic = [&](double bytes) {
    if (p.fit_memory) {
      (*row)[MemoryColumn(p)] += bytes * datasheet_s_per_byte;
    } else {
      *offset += bytes * rates.seconds_per_hbm_byte;
    }
  };
  (*row)[kOverheadColumn] = 1.0;
  const double outputs =
      static_cast<double>(g.batch) * static_cast<double>(g.m) * static_cast<double>(g.n);
  const double extra_bytes =
      outputs * (kAccumulatorBytes - static_cast<double>(BytesPerElement(g.dtype)));
  if (g.accumulate_fp32 && trial.calibration.gemm_epilogue_overlap &&
      outputs * kAccumulatorBytes * rates.seconds_per_hbm_byte > choice.time_s) {
    traffic(outputs * kAccumulatorBytes);
    return;
  }
  (*row)[kOperandColumn] = choice.operand_bytes_per_sm;
  (*row)[kWaveColumn] = static_cast<double>(choice.waves);
  (*row)[kFirstGemmColumn + p.class_of[i]] = choice.flops_per_sm *
                                             static_cast<double>(trial.sm_count) /
                                             (trial.PeakTflops(g.dtype).value_or(0.0) * 1e12);
  traffic(choice.split_k_bytes);
  if (g.accumulate_fp32 && !trial.calibration.gemm_epilogue_overlap) traffic(extra_bytes);
}

// One least-squares step with the tile choices of |x|: the unknowns that fit the samples best with
// those choices held, within their bounds (overhead and operand cost >= 0, inverse efficiencies
// >= 1). Unknowns the problem does not fit stay at |x|'s values.
std::optional<GemmUnknowns> Solve(const GemmProblem& p, const GemmUnknowns& x) {
  const GpuSpec trial = WithUnknowns(p, x);
  const size_t n = Columns(p);
  std::vector<std::vector<double>> a;
  std::vector<double> y, w;
  for (size_t i = 0; i < p.samples->size(); ++i) {
    const KernelSample& s = (*p.samples)[i];
    std::vector<double> row(n, 0.0);
    double offset = 0;
    if (std::holds_alternative<GemmShape>(s.shape)) {
      GemmRow(p, trial, i, &row, &offset);
    } else if (const AttentionShape* at = std::get_if<AttentionShape>(&s.shape)) {
      row[kOverheadColumn] = 1.0;
      row[AttentionColumn(p)] = AttentionWorkSeconds(*at, trial);
    } else {
      row[kOverheadColumn] = 1.0;
      row[MemoryColumn(p)] = MemoryWorkSeconds(std::get<MemoryShape>(s.shape), trial);
    }
    a.push_back(row);
    y.push_back(s.time_s - offset);
    w.push_back(1.0 / (s.time_s * s.time_s));
  }
  std::vector<double> lower(n, 1.0);
  lower[kOverheadColumn] = lower[kOperandColumn] = lower[kWaveColumn] = 0.0;
  std::vector<std::optional<double>> fixed(n);
  if (!p.fit_overhead) fixed[kOverheadColumn] = x.overhead_s;
  if (!p.fit_gemm) fixed[kOperandColumn] = x.operand_s_per_byte, fixed[kWaveColumn] = x.wave_s;
  if (!p.fit_attention) fixed[AttentionColumn(p)] = x.inverse_attention;
  if (!p.fit_memory) fixed[MemoryColumn(p)] = x.inverse_memory;
  const std::vector<std::optional<double>> given = fixed;
  std::vector<std::optional<double>> wanted(n);
  std::vector<double> v;
  for (size_t round = 0; round <= n; ++round) {
    if (!SolveWeighted(a, y, w, fixed, &v)) return std::nullopt;
    size_t worst = n;
    for (size_t j = 0; j < n; ++j) {
      if (!fixed[j] && v[j] < lower[j] && (worst == n || v[j] - lower[j] < v[worst] - lower[worst]))
        worst = j;
    }
    if (worst == n) break;
    wanted[worst] = v[worst];
    fixed[worst] = lower[worst];
  }
  GemmUnknowns out;
  out.overhead_s = given[kOverheadColumn] ? v[kOverheadColumn] : std::max(v[kOverheadColumn], 0.0);
  out.operand_s_per_byte =
      given[kOperandColumn] ? v[kOperandColumn] : std::max(v[kOperandColumn], 0.0);
  out.wave_s = given[kWaveColumn] ? v[kWaveColumn] : std::max(v[kWaveColumn], 0.0);
  for (size_t c = 0; c < p.classes.size(); ++c) {
    out.inverse_efficiency.push_back(std::max(v[kFirstGemmColumn + c], 1.0));
  }
  out.inverse_attention =
      given[AttentionColumn(p)] ? v[AttentionColumn(p)] : std::max(v[AttentionColumn(p)], 1.0);
  out.inverse_memory =
      given[MemoryColumn(p)] ? v[MemoryColumn(p)] : std::max(v[MemoryColumn(p)], 1.0);
  out.wanted = wanted;
  return out;
}

// Time of sample |s| by the model the fit solves (no memory floors), under |trial| (|x|'s values).
double FittedTime(const KernelSample& s, const GemmUnknowns& x, const GpuSpec& trial) {
  if (const GemmShape* g = std::get_if<GemmShape>(&s.shape)) {
    const GemmRates rates = GemmRatesOf(trial, g->dtype);
    return x.overhead_s + WithAccumulatingEpilogue(*g, ChooseGemmTile(*g, rates).time_s,
                                                   rates.seconds_per_hbm_byte,
                                                   trial.calibration.gemm_epilogue_overlap);
  }
  if (const AttentionShape* a = std::get_if<AttentionShape>(&s.shape)) {
    return x.overhead_s +
           AttentionWorkSeconds(*a, trial) / trial.calibration.attention_efficiency.value_or(1.0);
  }
  return x.overhead_s + MemoryWorkSeconds(std::get<MemoryShape>(s.shape), trial) /
                            trial.calibration.memory_bandwidth_fraction.value_or(1.0);
}

// Sum of squared relative errors of the fitted model with |x|, and the GEMMs' choices.
double Sse(const GemmProblem& p, const GemmUnknowns& x, std::vector<int64_t>* choices) {
  const GpuSpec trial = WithUnknowns(p, x);
  double sse = 0;
  choices->clear();
  for (const KernelSample& s : *p.samples) {
    if (const GemmShape* g = std::get_if<GemmShape>(&s.shape)) {
      const GemmTileChoice c = ChooseGemmTile(*g, trial);
      choices->push_back(c.tile_m * 1'000'000 + c.tile_n * 100 + c.split_k);
    }
    const double r = FittedTime(s, x, trial) / s.time_s - 1.0;
    sse += r * r;
  }
  return sse;
}

size_t FirstGemm(const GemmProblem& p) {
  for (size_t i = 0; i < p.samples->size(); ++i) {
    if (std::holds_alternative<GemmShape>((*p.samples)[i].shape)) return i;
  }
  return 0;
}

// The problem of |samples| on |gpu| with one GEMM class per efficiency class measured, in
// kDtypeNames order; it fits the GEMM unknowns and the overhead only.
GemmProblem ProblemOf(const std::vector<KernelSample>& samples, const GpuSpec& gpu) {
  GemmProblem p;
  p.samples = &samples;
  p.gpu = &gpu;
  for (const std::string& name : kDtypeNames.Names()) {
    const Dtype d = *kDtypeNames.Parse(name);
    for (const KernelSample& s : samples) {
      const GemmShape* g = std::get_if<GemmShape>(&s.shape);
      if (g != nullptr && EfficiencyClass(g->dtype) == d) {
        p.classes.push_back(d);
        break;
      }
    }
  }
  for (const KernelSample& s : samples) {
    const GemmShape* g = std::get_if<GemmShape>(&s.shape);
    const Dtype d = g != nullptr ? EfficiencyClass(g->dtype) : Dtype::kBf16;
    p.class_of.push_back(
        static_cast<size_t>(std::find(p.classes.begin(), p.classes.end(), d) - p.classes.begin()));
  }
  return p;
}

// The alternation of FitGemm from its starting points; nullopt when no step was determined.
std::optional<GemmUnknowns> Alternate(const GemmProblem& p) {
  const ComputeCalibration& cal = p.gpu->calibration;
  GemmUnknowns start;
  start.overhead_s = cal.kernel_overhead_us * 1e-6;
  start.wave_s = cal.gemm_wave_latency_us.value_or(0.0) * 1e-6;
  if (cal.gemm_operand_bandwidth_GBps) {
    start.operand_s_per_byte =
        static_cast<double>(p.gpu->sm_count) / (*cal.gemm_operand_bandwidth_GBps * 1e9);
  }
  start.inverse_attention = 1.0 / cal.attention_efficiency.value_or(1.0);
  start.inverse_memory = 1.0 / cal.memory_bandwidth_fraction.value_or(1.0);
  if (p.classes.empty()) {  // nothing chooses a tile: one linear solve
    std::optional<GemmUnknowns> x = Solve(p, start);
    return x;
  }
  // Starting points: an efficiency, and the operand loads of a 128x128 tile as a fraction of its
  // math; the alternation from each, keeping the values of least error.
  const Dtype first = std::get<GemmShape>((*p.samples)[FirstGemm(p)].shape).dtype;
  const double math_per_k_128 =
      2.0 * 128 * 128 * static_cast<double>(p.gpu->sm_count) / (*p.gpu->PeakTflops(first) * 1e12);
  const double bytes_per_k_128 = 256.0 * static_cast<double>(BytesPerElement(first));
  std::optional<GemmUnknowns> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (double efficiency : {0.9, 0.75, 0.6}) {
    for (double operand_fraction : {0.0, 0.05, 0.15, 0.4}) {
      GemmUnknowns x = start;
      x.inverse_efficiency.assign(p.classes.size(), 1.0 / efficiency);
      x.operand_s_per_byte = operand_fraction * math_per_k_128 / efficiency / bytes_per_k_128;
      if (p.fit_overhead) x.overhead_s = 0;
      x.wave_s = 0;
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
  return best;
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
  std::vector<KernelSample> kernels;
  for (const GemmSample& s : samples) kernels.push_back({s.shape, s.time_s});
  const GemmProblem p = ProblemOf(kernels, gpu);
  if (samples.size() < 3 + p.classes.size()) {
    return Status::InvalidArgument("GEMM fit for " + gpu.name + ": " +
                                   std::to_string(samples.size()) + " samples for " +
                                   std::to_string(3 + p.classes.size()) +
                                   " unknowns (an overhead, a wave latency, an operand bandwidth "
                                   "and one efficiency per dtype); "
                                   "add shapes");
  }
  const std::optional<GemmUnknowns> best = Alternate(p);
  if (!best) {
    return Status::InvalidArgument(
        "GEMM fit for " + gpu.name +
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

Result<JointComputeFit> FitComputeJointly(const std::vector<KernelSample>& samples,
                                          const GpuSpec& gpu) {
  GemmProblem p = ProblemOf(samples, gpu);
  p.fit_gemm = p.fit_overhead = !p.classes.empty();
  for (const KernelSample& s : samples) {
    p.fit_attention = p.fit_attention || std::holds_alternative<AttentionShape>(s.shape);
    p.fit_memory = p.fit_memory || std::holds_alternative<MemoryShape>(s.shape);
  }
  const size_t unknowns =
      (p.fit_gemm ? 3 + p.classes.size() : 0) + (p.fit_attention ? 1 : 0) + (p.fit_memory ? 1 : 0);
  if (samples.size() < unknowns || unknowns == 0) {
    return Status::InvalidArgument("compute fit for " + gpu.name + ": " +
                                   std::to_string(samples.size()) + " samples for " +
                                   std::to_string(unknowns) + " unknowns; profile more shapes");
  }
  const std::optional<GemmUnknowns> best = Alternate(p);
  if (!best) {
    return Status::InvalidArgument(
        "compute fit for " + gpu.name +
        ": the samples do not determine the per-kernel overhead, the GEMM wave latency and "
        "the efficiencies apart; profile sizes whose times differ several-fold");
  }
  JointComputeFit fit;
  fit.calibration = CalibrationOf(p, *best);
  for (size_t c = 0; c < p.classes.size(); ++c) {
    const std::optional<double>& wanted = best->wanted[kFirstGemmColumn + c];
    if (wanted) fit.gemm_wanted.emplace_back(p.classes[c], *wanted);
  }
  fit.attention_wanted = best->wanted[AttentionColumn(p)];
  fit.memory_wanted = best->wanted[MemoryColumn(p)];
  return fit;
}

namespace {

Result<EfficiencyFit> FitOneClass(const WorkGroup& group, const std::string& what, OpKind kind,
                                  std::optional<Dtype> dtype, const GpuSpec& gpu) {
  const SharedOverheadFit shared = FitSharedOverhead({group});
  if (!shared.determined) {
    return Status::InvalidArgument(
        what +
        " all have the same work; vary the sizes to tell the overhead from the "
        "efficiency");
  }
  LOOM_RETURN_IF_ERROR(
      CheckInverseEfficiency(shared.inverse_efficiency[0], what, kind, dtype, gpu));
  EfficiencyFit fit;
  fit.efficiency = std::min(1.0, 1.0 / shared.inverse_efficiency[0]);
  fit.overhead_us = shared.overhead_s * 1e6;
  for (size_t i = 0; i < group.work_s.size(); ++i) {
    const double r =
        (shared.overhead_s + group.work_s[i] / fit.efficiency - group.time_s[i]) / group.time_s[i];
    fit.relative_errors.push_back(r);
    fit.mean_abs_relative_error += std::fabs(r) / static_cast<double>(group.work_s.size());
  }
  return fit;
}

}  // namespace

Result<EfficiencyFit> FitAttention(const std::vector<AttentionSample>& samples,
                                   const GpuSpec& gpu) {
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
      return Status::InvalidArgument(
          what +
          ": samples mix dtypes; the calibration has one attention_efficiency, "
          "so fit one dtype");
    }
  }
  if (!gpu.PeakTflops(dtype)) {
    return Status::InvalidArgument(what + ": " + gpu.file + " has no peak_tflops." +
                                   std::string(kDtypeNames.Name(dtype)));
  }
  for (const AttentionSample& s : samples)
    group.work_s.push_back(AttentionWorkSeconds(s.shape, gpu));
  return FitOneClass(group, what + ": the samples", OpKind::kAttention, dtype, gpu);
}

Result<EfficiencyFit> FitMemoryBandwidth(const std::vector<MemorySample>& samples,
                                         const GpuSpec& gpu) {
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
