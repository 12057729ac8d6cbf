#include "cost/compute_model.h"

#include <algorithm>

namespace loom {
namespace {

// Output tile of one thread block in a large GEMM. 128x128 is the square tile CUTLASS and
// cuBLAS use for large half-precision GEMMs on Ampere and Hopper; the fitted model learns the
// effective quantization from measurements.
constexpr int64_t kTileM = 128;
constexpr int64_t kTileN = 128;

// Fraction of peak FlashAttention-2 reaches on A100, forward and backward: "50-73% of the
// theoretical maximum FLOPs/s" (Dao 2023, abstract); the low end of the range.
constexpr double kAttentionEfficiency = 0.50;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

RooflineComputeModel::RooflineComputeModel(const GpuSpec& gpu) : gpu_(gpu) {}

double RooflineComputeModel::GemmEfficiency(Dtype dtype) {
  // Largest GEMMs of the Azure AI-benchmarking-guide cuBLASLt runs (tests/reference/
  // gemm_cublaslt.csv): A100 fp16 reaches 256.5 of 312 TFLOP/s (0.82) at 16384^3; H100 fp8
  // reaches 1377.3 of 1979 (0.70). bf16 and fp16 share the tensor-core path; tf32/fp32 have no
  // published measurement here and take the half-precision figure.
  return dtype == Dtype::kFp8 ? 0.70 : 0.82;
}

double RooflineComputeModel::PeakFlopsPerS(Dtype dtype) const {
  return gpu_.PeakTflops(dtype).value_or(0.0) * 1e12;
}

SimTime RooflineComputeModel::Gemm(const GemmShape& gemm) const {
  if (gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0 || gemm.batch <= 0) return SimTime();
  // A batched GEMM spreads the tiles of all its products over the SMs at once.
  const int64_t tiles = gemm.batch * CeilDiv(gemm.m, kTileM) * CeilDiv(gemm.n, kTileN);
  const int64_t waves = CeilDiv(tiles, gpu_.sm_count);
  // Work the SMs could have done in |waves| full waves, of which the GEMM uses tiles / capacity.
  const double wave_utilization = static_cast<double>(tiles) / static_cast<double>(waves * gpu_.sm_count);
  const double flops = static_cast<double>(GemmFlops(gemm));
  const double compute_s = flops / (PeakFlopsPerS(gemm.dtype) * GemmEfficiency(gemm.dtype) * wave_utilization);
  const double element_bytes = static_cast<double>(BytesPerElement(gemm.dtype));
  const double m = static_cast<double>(gemm.m), n = static_cast<double>(gemm.n), k = static_cast<double>(gemm.k);
  const double memory_s =
      static_cast<double>(gemm.batch) * (m * k + k * n + m * n) * element_bytes / (gpu_.hbm_bandwidth_GBps * 1e9);
  return SimTime::FromSeconds(std::max(compute_s, memory_s));
}

SimTime RooflineComputeModel::Attention(const AttentionShape& a) const {
  const double compute_s = AttentionKernelFlops(a) / (PeakFlopsPerS(a.dtype) * kAttentionEfficiency);
  // Q, K, V and O read or written once (forward); the backward also reads dO and writes dQ, dK, dV.
  const double element_bytes = static_cast<double>(BytesPerElement(a.dtype));
  const double q = static_cast<double>(a.batch * a.heads * a.seq_q);
  const double kv = static_cast<double>(a.batch * a.kv_heads * a.seq_kv);
  double tensor_bytes = element_bytes * (q * static_cast<double>(a.head_dim_qk + a.head_dim_v) +
                                         kv * static_cast<double>(a.head_dim_qk + a.head_dim_v));
  if (a.backward) tensor_bytes *= 2.0;
  const double memory_s = tensor_bytes / (gpu_.hbm_bandwidth_GBps * 1e9);
  return SimTime::FromSeconds(std::max(compute_s, memory_s));
}

SimTime RooflineComputeModel::MemoryBound(const MemoryShape& memory) const {
  // The datasheet bandwidth is an upper bound; the fitted model measures what kernels reach.
  const double bytes = static_cast<double>(memory.bytes_read + memory.bytes_written);
  return SimTime::FromSeconds(bytes / (gpu_.hbm_bandwidth_GBps * 1e9));
}

}  // namespace loom
