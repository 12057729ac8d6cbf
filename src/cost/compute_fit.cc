#include "cost/compute_fit.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/checked.h"

namespace loom {
namespace {

// Seconds the GEMM's waves take at the full dense peak (efficiency 1, no overhead).
double WaveSeconds(const GemmShape& g, int64_t tile_m, int64_t tile_n, const GpuSpec& gpu, double peak_flops) {
  const int64_t tiles = g.batch * CeilDiv(g.m, tile_m) * CeilDiv(g.n, tile_n);
  const int64_t waves = CeilDiv(tiles, gpu.sm_count);
  const double per_sm_flops = peak_flops / static_cast<double>(gpu.sm_count);
  return static_cast<double>(waves) * 2.0 * static_cast<double>(tile_m * tile_n) * static_cast<double>(g.k) /
         per_sm_flops;
}

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
  const double peak = *gpu.PeakTflops(samples.front().shape.dtype) * 1e12;
  std::vector<double> t;
  for (const GemmSample& s : samples) t.push_back(s.time_s);
  GemmFit best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (int64_t tile_m : {64, 128, 256}) {
    for (int64_t tile_n : {64, 128, 256}) {
      std::vector<double> w;
      for (const GemmSample& s : samples) w.push_back(WaveSeconds(s.shape, tile_m, tile_n, gpu, peak));
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

}  // namespace loom
