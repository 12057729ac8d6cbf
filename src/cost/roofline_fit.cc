#include "cost/roofline_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "core/checked.h"
#include "cost/compute_model.h"
#include "cost/gemm_tiles.h"

namespace loom {
namespace {

constexpr size_t kMinShapes = 3;  // an efficiency and an overhead, and one shape to check them

std::string Show(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

bool ValidShape(const KernelShape& shape) {
  if (const GemmShape* g = std::get_if<GemmShape>(&shape))
    return g->m > 0 && g->n > 0 && g->k > 0 && g->batch > 0;
  if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) {
    return a->batch > 0 && a->heads > 0 && a->kv_heads > 0 && a->seq_q > 0 && a->seq_kv > 0 &&
           a->head_dim_qk > 0 && a->head_dim_v > 0;
  }
  const MemoryShape& m = std::get<MemoryShape>(shape);
  return m.bytes_read >= 0 && m.bytes_written >= 0 && (m.bytes_read > 0 || m.bytes_written > 0);
}

// What the samples do at |efficiency| > 1, and what to check in the GPU file.
std::string BeatsDatasheet(OpKind kind, std::optional<Dtype> dtype, double efficiency,
                           const GpuSpec& gpu) {
  const std::string times = Show(efficiency) + "x ";
  if (kind == OpKind::kMemoryBound) {
    return "move bytes at " + times + "hbm_bandwidth_GBps of " + gpu.file + " (" +
           Show(gpu.hbm_bandwidth_GBps) +
           "): buffers that fit in the L2 cache (l2_cache_bytes) are served faster than HBM; "
           "profile buffers "
           "several times larger, and check bytes_read and bytes_written";
  }
  const Dtype d = dtype.value_or(Dtype::kBf16);
  const std::string peak = "peak_tflops." + std::string(kDtypeNames.Name(d)) + " of " + gpu.file +
                           " (" + Show(gpu.PeakTflops(d).value_or(0)) + ")";
  if (kind == OpKind::kAttention) {
    return "run at " + times + peak +
           "; the fit counts the FLOPs a FlashAttention-2 kernel executes (AttentionKernelFlops, "
           "src/workload/ops.h: causal masking halves them, the backward executes 2.5x the "
           "forward): check the "
           "samples' causal and backward flags and that the peak is the dense one";
  }
  return "run at " + times + peak +
         " at every tile size; check that the peak is the dense one (without 2:4 sparsity) and "
         "that the profile "
         "was measured on this GPU";
}

// bf16 and fp16 share an efficiency; every other dtype has its own.
Dtype EfficiencyClass(Dtype dtype) { return dtype == Dtype::kFp16 ? Dtype::kBf16 : dtype; }

// The unknowns of the fit: overhead (s), seconds per unhidden operand byte per SM, seconds per
// wave, one inverse efficiency per GEMM class, and, in a joint fit (FitComputeJointly), the inverse
// attention efficiency and the inverse HBM bandwidth fractions of streaming kernels and of row
// reductions (MemoryAccess).
struct GemmUnknowns {
  double overhead_s = 0;
  double operand_s_per_byte = 0;
  double wave_s = 0;
  std::vector<double> inverse_efficiency;
  double inverse_attention = 1;
  double inverse_memory = 1;
  double inverse_row_reduction = 1;
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
  bool fit_memory = false;         // streaming memory-bound kernels (and GEMMs' HBM traffic)
  bool fit_row_reduction = false;  // memory-bound row reductions
};

// Column of each unknown in Solve.
constexpr size_t kOverheadColumn = 0, kOperandColumn = 1, kWaveColumn = 2, kFirstGemmColumn = 3;
size_t AttentionColumn(const GemmProblem& p) { return kFirstGemmColumn + p.classes.size(); }
size_t MemoryColumn(const GemmProblem& p) { return AttentionColumn(p) + 1; }
size_t RowReductionColumn(const GemmProblem& p) { return MemoryColumn(p) + 1; }
size_t Columns(const GemmProblem& p) { return RowReductionColumn(p) + 1; }
// The column of a memory-bound kernel of |access|.
size_t MemoryColumn(const GemmProblem& p, MemoryAccess access) {
  return access == MemoryAccess::kRowReduction ? RowReductionColumn(p) : MemoryColumn(p);
}

// |p.gpu|'s calibration with the values of |x| in place: the fitted classes' GEMM efficiencies
// (bf16 standing for bf16 and fp16), the operand bandwidth (none when its term came out at its
// bound of 0), the wave latency and the overhead, no fixed tile, and the attention efficiency and
// HBM bandwidth fractions where the problem fits them.
ComputeCalibration CalibrationOf(const GemmProblem& p, const GemmUnknowns& x) {
  ComputeCalibration c = p.gpu->calibration;
  if (p.fit_gemm) {
    for (size_t k = 0; k < p.classes.size(); ++k) {
      const double efficiency = 1.0 / x.inverse_efficiency[k];
      c.GemmEfficiencySlot(p.classes[k]) = efficiency;
      if (p.classes[k] == Dtype::kBf16) c.GemmEfficiencySlot(Dtype::kFp16) = efficiency;
    }
    c.gemm_operand_bandwidth_GBps.reset();
    if (x.operand_s_per_byte > 0) {
      c.gemm_operand_bandwidth_GBps =
          static_cast<double>(p.gpu->sm_count) / x.operand_s_per_byte * 1e-9;
    }
    c.gemm_wave_latency_us = x.wave_s * 1e6;
    c.gemm_tile_m = c.gemm_tile_n = 0;
  }
  c.kernel_overhead_us = x.overhead_s * 1e6;
  if (p.fit_attention) c.attention_efficiency = 1.0 / x.inverse_attention;
  if (p.fit_memory) c.memory_bandwidth_fraction = 1.0 / x.inverse_memory;
  if (p.fit_row_reduction)
    c.memory_bandwidth_fraction_row_reduction = 1.0 / x.inverse_row_reduction;
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
      const MemoryShape& m = std::get<MemoryShape>(s.shape);
      row[kOverheadColumn] = 1.0;
      row[MemoryColumn(p, m.access)] = MemoryWorkSeconds(m, trial);
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
  if (!p.fit_row_reduction) fixed[RowReductionColumn(p)] = x.inverse_row_reduction;
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
  out.inverse_row_reduction = given[RowReductionColumn(p)]
                                  ? v[RowReductionColumn(p)]
                                  : std::max(v[RowReductionColumn(p)], 1.0);
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
  const MemoryShape& m = std::get<MemoryShape>(s.shape);
  return x.overhead_s +
         MemoryWorkSeconds(m, trial) / trial.calibration.MemoryBandwidthFraction(m.access);
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

// The alternation of FitComputeJointly from its starting points; nullopt when no step was
// determined.
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
  start.inverse_memory = 1.0 / cal.MemoryBandwidthFraction(MemoryAccess::kStreaming);
  start.inverse_row_reduction = 1.0 / cal.MemoryBandwidthFraction(MemoryAccess::kRowReduction);
  if (p.classes.empty()) {  // nothing chooses a tile: one linear solve
    std::optional<GemmUnknowns> x = Solve(p, start);
    return x;
  }
  // Starting points: an efficiency, and the operand loads of the grid's middle tile as a fraction
  // of its math; the alternation from each, keeping the values of least error.
  const Dtype first = std::get<GemmShape>((*p.samples)[FirstGemm(p)].shape).dtype;
  const GemmTile tile = kGemmMiddleTile;
  const double math_per_k = 2.0 * static_cast<double>(tile.m) * static_cast<double>(tile.n) *
                            static_cast<double>(p.gpu->sm_count) /
                            (*p.gpu->PeakTflops(first) * 1e12);
  const double bytes_per_k =
      static_cast<double>(tile.m + tile.n) * static_cast<double>(BytesPerElement(first));
  std::optional<GemmUnknowns> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (double efficiency : {0.9, 0.75, 0.6}) {
    for (double operand_fraction : {0.0, 0.05, 0.15, 0.4}) {
      GemmUnknowns x = start;
      x.inverse_efficiency.assign(p.classes.size(), 1.0 / efficiency);
      x.operand_s_per_byte = operand_fraction * math_per_k / efficiency / bytes_per_k;
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

double AttentionWorkSeconds(const AttentionShape& a, const GpuSpec& gpu) {
  return AttentionKernelFlops(a) / (gpu.PeakTflops(a.dtype).value_or(0.0) * 1e12);
}

double MemoryWorkSeconds(const MemoryShape& m, const GpuSpec& gpu) {
  return (static_cast<double>(m.bytes_read) + static_cast<double>(m.bytes_written)) /
         (gpu.hbm_bandwidth_GBps * 1e9);
}

Status CheckClassSamples(const std::string& what, const std::vector<KernelShape>& shapes,
                         const std::vector<double>& times) {
  std::set<std::string> distinct;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (!ValidShape(shapes[i]) || !(times[i] > 0)) {
      return Status::InvalidArgument(what + ": " + DescribeShape(shapes[i]) +
                                     " has a non-positive size or time; remove it");
    }
    distinct.insert(DescribeShape(shapes[i]));
  }
  if (distinct.size() < kMinShapes) {
    return Status::InvalidArgument(
        what + ": " + std::to_string(distinct.size()) + " distinct shape(s); at least " +
        std::to_string(kMinShapes) +
        " are needed to fit an efficiency and an overhead: profile more sizes");
  }
  return Status::Ok();
}

Status CheckInverseEfficiency(double inverse, const std::string& what, OpKind kind,
                              std::optional<Dtype> dtype, const GpuSpec& gpu) {
  if (!(inverse > 0)) {
    return Status::InvalidArgument(
        what +
        " do not take longer as their work grows, so no efficiency fits them; "
        "check that the profile timed the shapes it states");
  }
  if (1.0 / inverse > 1.0 + kEfficiencyTolerance) {
    return Status::InvalidArgument(what + " " + BeatsDatasheet(kind, dtype, 1.0 / inverse, gpu));
  }
  return Status::Ok();
}

Result<JointComputeFit> FitComputeJointly(const std::vector<KernelSample>& samples,
                                          const GpuSpec& gpu) {
  GemmProblem p = ProblemOf(samples, gpu);
  p.fit_gemm = p.fit_overhead = !p.classes.empty();
  for (const KernelSample& s : samples) {
    p.fit_attention = p.fit_attention || std::holds_alternative<AttentionShape>(s.shape);
    if (const MemoryShape* m = std::get_if<MemoryShape>(&s.shape)) {
      (m->access == MemoryAccess::kRowReduction ? p.fit_row_reduction : p.fit_memory) = true;
    }
  }
  const size_t unknowns = (p.fit_gemm ? 3 + p.classes.size() : 0) + (p.fit_attention ? 1 : 0) +
                          (p.fit_memory ? 1 : 0) + (p.fit_row_reduction ? 1 : 0);
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
  fit.row_reduction_wanted = best->wanted[RowReductionColumn(p)];
  return fit;
}

}  // namespace loom
