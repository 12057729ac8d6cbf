#include "cost/roofline_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/checked.h"

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

}  // namespace

double GemmWorkSeconds(const GemmShape& g, int64_t tile_m, int64_t tile_n, const GpuSpec& gpu) {
  // Counted in doubles: a shape from a file may be large enough for the integer product to wrap,
  // and the count of tiles is exact in a double up to 2^53.
  const double tiles = static_cast<double>(g.batch) * static_cast<double>(CeilDiv(g.m, tile_m)) *
                       static_cast<double>(CeilDiv(g.n, tile_n));
  const double waves = std::ceil(tiles / static_cast<double>(gpu.sm_count));
  const double per_sm_flops =
      gpu.PeakTflops(g.dtype).value_or(0.0) * 1e12 / static_cast<double>(gpu.sm_count);
  return waves * 2.0 * static_cast<double>(tile_m) * static_cast<double>(tile_n) *
         static_cast<double>(g.k) / per_sm_flops;
}

double AttentionWorkSeconds(const AttentionShape& a, const GpuSpec& gpu) {
  return AttentionKernelFlops(a) / (gpu.PeakTflops(a.dtype).value_or(0.0) * 1e12);
}

double MemoryWorkSeconds(const MemoryShape& m, const GpuSpec& gpu) {
  return (static_cast<double>(m.bytes_read) + static_cast<double>(m.bytes_written)) /
         (gpu.hbm_bandwidth_GBps * 1e9);
}

SharedOverheadFit FitSharedOverhead(const std::vector<WorkGroup>& groups) {
  struct Sums {
    double s1 = 0, sw = 0, sww = 0, st = 0, swt = 0;
  };
  std::vector<Sums> sums(groups.size());
  double numerator = 0, denominator = 0, total_weight = 0;
  for (size_t c = 0; c < groups.size(); ++c) {
    Sums& s = sums[c];
    for (size_t i = 0; i < groups[c].work_s.size(); ++i) {
      const double w = groups[c].work_s[i], t = groups[c].time_s[i], weight = 1.0 / (t * t);
      s.s1 += weight;
      s.sw += weight * w;
      s.sww += weight * w * w;
      s.st += weight * t;
      s.swt += weight * w * t;
    }
    numerator += s.st - s.swt * s.sw / s.sww;
    denominator +=
        s.s1 - s.sw * s.sw / s.sww;  // >= 0 by Cauchy-Schwarz, 0 when the work is constant
    total_weight += s.s1;
  }
  SharedOverheadFit fit;
  fit.determined = denominator > 1e-9 * total_weight;
  fit.overhead_s = fit.determined ? std::max(0.0, numerator / denominator) : 0.0;
  for (size_t c = 0; c < groups.size(); ++c) {
    const double a = (sums[c].swt - fit.overhead_s * sums[c].sw) / sums[c].sww;
    fit.inverse_efficiency.push_back(a);
    for (size_t i = 0; i < groups[c].work_s.size(); ++i) {
      const double r = (fit.overhead_s + a * groups[c].work_s[i]) / groups[c].time_s[i] - 1.0;
      fit.sse += r * r;
    }
  }
  return fit;
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

}  // namespace loom
