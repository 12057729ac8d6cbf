#include "cost/compute_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cost/roofline_fit.h"

namespace loom {
namespace {

struct LineFit {
  double overhead_s = 0;
  double inverse_efficiency = 1;
  double weighted_sse = 0;
};

// Minimises sum(((o + a * w_i - t_i) / t_i)^2) over o >= 0 and a >= 1.
LineFit FitLine(const std::vector<double>& w, const std::vector<double>& t) {
  double sww = 0, sw = 0, s1 = 0, swt = 0, st = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double weight = 1.0 / (t[i] * t[i]);
    sww += weight * w[i] * w[i];
    sw += weight * w[i];
    s1 += weight;
    swt += weight * w[i] * t[i];
    st += weight * t[i];
  }
  LineFit fit;
  const double det = sww * s1 - sw * sw;
  if (det > 0) {
    fit.inverse_efficiency = (swt * s1 - sw * st) / det;
    fit.overhead_s = (sww * st - sw * swt) / det;
  }
  if (det <= 0 || fit.overhead_s < 0) {
    fit.overhead_s = 0;
    fit.inverse_efficiency = swt / sww;
  }
  if (fit.inverse_efficiency < 1) {
    fit.inverse_efficiency = 1;
    fit.overhead_s = std::max(0.0, (st - sw) / s1);
  }
  for (size_t i = 0; i < w.size(); ++i) {
    const double r = (fit.overhead_s + fit.inverse_efficiency * w[i] - t[i]) / t[i];
    fit.weighted_sse += r * r;
  }
  return fit;
}

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
    if (g.dtype != samples.front().shape.dtype) {
      return Status::InvalidArgument("GEMM fit for " + gpu.name + ": samples mix dtypes; fit one dtype at a time");
    }
  }
  if (!gpu.PeakTflops(samples.front().shape.dtype)) {
    return Status::InvalidArgument("GEMM fit: " + gpu.name + " (" + gpu.file + ") has no peak for " +
                                   std::string(kDtypeNames.Name(samples.front().shape.dtype)));
  }
  return Status::Ok();
}

}  // namespace

Result<GemmFit> FitGemm(const std::vector<GemmSample>& samples, const GpuSpec& gpu) {
  LOOM_RETURN_IF_ERROR(CheckSamples(samples, gpu));
  std::vector<double> t;
  for (const GemmSample& s : samples) t.push_back(s.time_s);
  GemmFit best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (int64_t tile_m : {64, 128, 256}) {
    for (int64_t tile_n : {64, 128, 256}) {
      std::vector<double> w;
      for (const GemmSample& s : samples) w.push_back(GemmWorkSeconds(s.shape, tile_m, tile_n, gpu));
      LineFit line = FitLine(w, t);
      if (line.weighted_sse >= best_sse) continue;
      best_sse = line.weighted_sse;
      best.tile_m = tile_m;
      best.tile_n = tile_n;
      best.efficiency = 1.0 / line.inverse_efficiency;
      best.overhead_us = line.overhead_s * 1e6;
      best.relative_errors.clear();
      best.mean_abs_relative_error = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        const double r = (line.overhead_s + line.inverse_efficiency * w[i] - t[i]) / t[i];
        best.relative_errors.push_back(r);
        best.mean_abs_relative_error += std::fabs(r) / static_cast<double>(w.size());
      }
    }
  }
  return best;
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
