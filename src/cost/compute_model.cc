#include "cost/compute_model.h"

#include <algorithm>

#include "cost/attention_tiles.h"
#include "cost/gemm_tiles.h"

namespace loom {

RooflineComputeModel::RooflineComputeModel(const GpuSpec& gpu, ClockRegime clocks,
                                           double tensor_clock)
    : gpu_(gpu), clocks_(clocks), tensor_clock_(tensor_clock) {}

double TensorClock(const GpuSpec& gpu, Dtype dtype, double demand_flops_per_s) {
  const std::optional<double> fraction = gpu.calibration.SustainedTensorFraction(dtype);
  if (!fraction || demand_flops_per_s <= 0) return 1.0;
  const double sustained = gpu.PeakTflops(dtype).value_or(0.0) * 1e12 * *fraction;
  return sustained <= 0 ? 1.0 : std::min(1.0, sustained / demand_flops_per_s);
}

double RooflineComputeModel::Clocked(double tensor_s, double flops, Dtype dtype) const {
  const double at_clock = tensor_s / tensor_clock_;
  if (clocks_ != ClockRegime::kSustained) return at_clock;
  const std::optional<double> fraction = gpu_.calibration.SustainedTensorFraction(dtype);
  if (!fraction) return at_clock;
  return std::max(at_clock, flops / (PeakFlopsPerS(dtype) * *fraction));
}

double RooflineComputeModel::PeakFlopsPerS(Dtype dtype) const {
  return gpu_.PeakTflops(dtype).value_or(0.0) * 1e12;
}

double RooflineComputeModel::HbmBytesPerS(MemoryAccess access) const {
  return gpu_.hbm_bandwidth_GBps * 1e9 * gpu_.calibration.MemoryBandwidthFraction(access);
}

double RooflineComputeModel::GemmHbmBytesPerS() const {
  const ComputeCalibration& c = gpu_.calibration;
  if (!c.gemm_memory_bandwidth_fraction) return HbmBytesPerS();
  return gpu_.hbm_bandwidth_GBps * 1e9 * *c.gemm_memory_bandwidth_fraction;
}

double WithAccumulatingEpilogue(const GemmShape& gemm, double main_loop_s,
                                double seconds_per_hbm_byte, bool overlap) {
  if (!gemm.accumulate_fp32) return main_loop_s;
  const double outputs =
      static_cast<double>(gemm.batch) * static_cast<double>(gemm.m) * static_cast<double>(gemm.n);
  if (overlap) return std::max(main_loop_s, outputs * kAccumulatorBytes * seconds_per_hbm_byte);
  const double element_bytes = static_cast<double>(BytesPerElement(gemm.dtype));
  return main_loop_s + outputs * (kAccumulatorBytes - element_bytes) * seconds_per_hbm_byte;
}

SimTime RooflineComputeModel::Gemm(const GemmShape& gemm) const { return GemmKernel(gemm); }

SimTime RooflineComputeModel::GemmKernel(const GemmShape& gemm) const {
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0) return SimTime();
  const GemmTileChoice tile = ChooseGemmTile(gemm, gpu_);
  const double element_bytes = static_cast<double>(BytesPerElement(gemm.dtype));
  const double m = static_cast<double>(gemm.m), n = static_cast<double>(gemm.n),
               k = static_cast<double>(gemm.k);
  const double outputs = static_cast<double>(gemm.batch) * m * n;
  const double main_loop_s = Clocked(tile.time_s, 2.0 * outputs * k, gemm.dtype);
  const double compute_s = WithAccumulatingEpilogue(gemm, main_loop_s, 1.0 / HbmBytesPerS(),
                                                    gpu_.calibration.gemm_epilogue_overlap);
  const double result_bytes = outputs * (gemm.accumulate_fp32 ? kAccumulatorBytes : element_bytes);
  const double memory_s =
      (static_cast<double>(gemm.batch) * (m * k + k * n) * element_bytes + result_bytes) /
      GemmHbmBytesPerS();
  return SimTime::FromSeconds(gpu_.calibration.kernel_overhead_us * 1e-6 +
                              std::max(compute_s, memory_s));
}

SimTime RooflineComputeModel::Attention(const AttentionShape& a) const {
  const ComputeCalibration& c = gpu_.calibration;
  // The family's own tiles (ComputeCalibration::AttentionTiles), else attention_efficiency.
  const std::optional<AttentionTileParams>& tiles = c.AttentionTiles(a.family, a.backward);
  // The tile model's fitted latency is the whole kernel's fixed time: no kernel overhead on top.
  const double overhead_s = tiles ? 0.0 : c.kernel_overhead_us * 1e-6;
  const double flops = AttentionKernelFlops(a);
  const double compute_s =
      Clocked(tiles ? AttentionTileSeconds(
                          CountAttentionTiles(a, gpu_.sm_count, PeakFlopsPerS(a.dtype)), *tiles)
                    : flops / (PeakFlopsPerS(a.dtype) * c.attention_efficiency.value_or(1.0)),
              flops, a.dtype);
  // Q, K, V and O read or written once (forward); the backward also reads dO and writes dQ, dK, dV.
  const double element_bytes = static_cast<double>(BytesPerElement(a.dtype));
  const double q = static_cast<double>(a.batch * a.heads * a.seq_q);
  const double kv = static_cast<double>(a.batch * a.kv_heads * a.seq_kv);
  double tensor_bytes = element_bytes * (q * static_cast<double>(a.head_dim_qk + a.head_dim_v) +
                                         kv * static_cast<double>(a.head_dim_qk + a.head_dim_v));
  if (a.backward) tensor_bytes *= 2.0;
  return SimTime::FromSeconds(overhead_s + std::max(compute_s, tensor_bytes / HbmBytesPerS()));
}

SimTime RooflineComputeModel::MemoryBound(const MemoryShape& memory) const {
  const double bytes = static_cast<double>(memory.bytes_read + memory.bytes_written);
  return SimTime::FromSeconds(gpu_.calibration.kernel_overhead_us * 1e-6 +
                              bytes / HbmBytesPerS(memory.access));
}

}  // namespace loom
