#include "cost/gemm_tiles.h"

#include <limits>

#include "core/checked.h"

namespace loom {
namespace {

constexpr double kPartialSumBytes = 4.0;  // split-K reduces fp32 partial sums

GemmTileChoice Candidate(const GemmShape& g, GemmTile tile, int64_t split_k, const GemmRates& r) {
  GemmTileChoice c;
  c.tile_m = tile.m;
  c.tile_n = tile.n;
  c.split_k = split_k;
  const int64_t tiles = g.batch * CeilDiv(g.m, tile.m) * CeilDiv(g.n, tile.n) * split_k;
  c.waves = CeilDiv(tiles, r.sm_count);
  const double k_slice = static_cast<double>(CeilDiv(g.k, split_k));
  const double waves = static_cast<double>(c.waves);
  c.flops_per_sm = waves * 2.0 * static_cast<double>(tile.m * tile.n) * k_slice;
  c.operand_bytes_per_sm =
      waves * static_cast<double>((tile.m + tile.n) * r.element_bytes) * k_slice;
  if (split_k > 1) {
    c.split_k_bytes = 2.0 * kPartialSumBytes * static_cast<double>(split_k - 1) *
                      static_cast<double>(g.batch) * static_cast<double>(g.m) *
                      static_cast<double>(g.n);
  }
  c.time_s = waves * r.seconds_per_wave + c.flops_per_sm * r.seconds_per_flop +
             c.operand_bytes_per_sm * r.seconds_per_operand_byte +
             c.split_k_bytes * r.seconds_per_hbm_byte;
  return c;
}

}  // namespace

GemmRates GemmRatesOf(const GpuSpec& gpu, Dtype dtype) {
  const ComputeCalibration& cal = gpu.calibration;
  GemmRates r;
  r.sm_count = gpu.sm_count;
  r.element_bytes = BytesPerElement(dtype);
  const double sms = static_cast<double>(gpu.sm_count);
  r.seconds_per_flop =
      sms / (gpu.PeakTflops(dtype).value_or(0.0) * 1e12 * cal.GemmEfficiency(dtype).value_or(1.0));
  if (cal.gemm_operand_bandwidth_GBps)
    r.seconds_per_operand_byte = sms / (*cal.gemm_operand_bandwidth_GBps * 1e9);
  r.seconds_per_wave = cal.gemm_wave_latency_us.value_or(0.0) * 1e-6;
  r.seconds_per_hbm_byte =
      1.0 / (gpu.hbm_bandwidth_GBps * 1e9 * cal.memory_bandwidth_fraction.value_or(1.0));
  if (cal.gemm_tile_m > 0 && cal.gemm_tile_n > 0) r.fixed_tile = {cal.gemm_tile_m, cal.gemm_tile_n};
  return r;
}

GemmTileChoice ChooseGemmTile(const GemmShape& g, const GemmRates& r) {
  if (r.fixed_tile.m > 0) return Candidate(g, r.fixed_tile, 1, r);
  GemmTileChoice best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (const GemmTile& tile : kGemmTileCandidates) {
    const int64_t tiles = g.batch * CeilDiv(g.m, tile.m) * CeilDiv(g.n, tile.n);
    for (int64_t split_k : kSplitKCandidates) {
      // Split further only while the previous split still left SMs idle and K stays long.
      if (split_k > 1 && (tiles * (split_k / 2) >= r.sm_count || g.k / split_k < kMinSplitKSlice))
        break;
      const GemmTileChoice c = Candidate(g, tile, split_k, r);
      if (c.time_s < best.time_s) best = c;
    }
  }
  return best;
}

GemmTileChoice ChooseGemmTile(const GemmShape& gemm, const GpuSpec& gpu) {
  return ChooseGemmTile(gemm, GemmRatesOf(gpu, gemm.dtype));
}

}  // namespace loom
