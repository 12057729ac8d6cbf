#ifndef LOOM_SPEC_GPU_CALIBRATION_H_
#define LOOM_SPEC_GPU_CALIBRATION_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/attention_family.h"
#include "core/dtype.h"
#include "core/json_reader.h"
#include "core/memory_access.h"

namespace loom {

// The fitted rates of one pass (forward or backward) of fused attention as a tile model
// (cost/attention_tiles.h): what the block loop of each CTA costs per score, on top of its
// tensor-core work, and the fixed costs of its waves and of the kernel.
struct AttentionTileParams {
  // Fraction of the per-SM dense tensor peak the block loop's matrix products reach.
  double matmul_efficiency = 1.0;
  // Time per score element per SM beyond the products: the softmax, whose exponential runs on the
  // special-function units at a small fraction of the tensor rate (FlashAttention-3, Shah et al.
  // 2024, Section 3: 3.9 TFLOPS of special functions against 989 of FP16 matmul on H100 SXM5).
  double score_ps = 0;
  // Extra time per score element of a block on the causal diagonal (the mask is applied there).
  double masked_score_ps = 0;
  // Time per element of Q (batch x heads x queries x head dim) over the whole GPU: the passes
  // that are linear in the sequence, not quadratic: the backward's preprocessing (rowsum of dO * O)
  // and its fp32 dQ accumulator's conversion (FlashAttention-2, Dao 2023, Algorithm 2), the
  // forward's output and log-sum-exp writes.
  double element_ps = 0;
  // Time per wave of CTAs over the SMs (prologue: Q or K/V tile loads; epilogue: the output).
  double wave_us = 0;
  // Fixed time of the kernel.
  double latency_us = 0;
};

// Fitted parameters of the compute model of one GPU: the "calibration" object of a GPU file.
// Every value has a source (a profile file or a public table). Absent values fall back to the
// datasheet: efficiency 1, no overhead, the full HBM bandwidth.
struct ComputeCalibration {
  // One output tile for every GEMM, as files from before issue 18 hold it (`loom fit` now removes
  // it): M and N are rounded up to it (tile quantisation) and the tiles run in waves over the SMs
  // (wave quantisation). 0 (absent): the compute model chooses among cuBLAS's tiles per shape
  // (cost/gemm_tiles.h), as every shipped file and every fit does.
  int64_t gemm_tile_m = 0;
  int64_t gemm_tile_n = 0;
  // Asymptotic fraction of the dense peak that GEMMs reach, per dtype; nullopt: not measured.
  std::optional<double> gemm_efficiency_bf16, gemm_efficiency_fp16, gemm_efficiency_fp8,
      gemm_efficiency_tf32, gemm_efficiency_fp32;
  // Bandwidth, summed over the SMs, at which a GEMM's main loop loads its operand tiles without
  // hiding the load under the tensor cores: what makes small tiles less efficient than large ones
  // (cost/gemm_tiles.h). nullopt: not fitted, no such term.
  std::optional<double> gemm_operand_bandwidth_GBps;
  // Time of each wave of GEMM tiles that does not grow with K: pipeline prologue and epilogue
  // (cost/gemm_tiles.h). nullopt: not fitted, none.
  std::optional<double> gemm_wave_latency_us;
  // Whether the GPU's GEMM kernels run one tile's epilogue while another tile's main loop runs
  // (Hopper's warp-specialised persistent kernels), so that an epilogue's memory traffic overlaps
  // the math instead of following it. A fact of the architecture, cited in the file's "sources".
  bool gemm_epilogue_overlap = false;
  // Fixed time of every kernel: launch and setup.
  double kernel_overhead_us = 0;
  // Fraction of the dense peak fused attention reaches: FlashAttention-2's
  // (AttentionFamily::kFlashAttention2), and any family's pass without tiles below.
  std::optional<double> attention_efficiency;
  // cuDNN's fused attention (AttentionFamily::kCudnn, what loom probe measures) as a tile model
  // (cost/attention_tiles.h), per pass; where a pass has none, attention_efficiency times the whole
  // kernel's FLOPs. The "attention_tiles" object of the file: {"forward": {...}, "backward":
  // {...}}, keys as AttentionTileParams's fields.
  std::optional<AttentionTileParams> attention_forward_tiles, attention_backward_tiles;
  // The same model for the other families, where fitted on a published benchmark of them:
  // FlashAttention-2 ("attention_tiles_flash2"; without it, attention_efficiency) and the Triton
  // port of the first FlashAttention ("attention_tiles_triton"; without it, the GPU has no rate
  // for that family and a step that runs it is refused).
  std::optional<AttentionTileParams> flash2_forward_tiles, flash2_backward_tiles;
  std::optional<AttentionTileParams> triton_forward_tiles, triton_backward_tiles;
  // Fraction of the datasheet HBM bandwidth that memory-bound kernels reach: streaming ones
  // (MemoryAccess::kStreaming, op/op.h), and row reductions where the next key is absent.
  std::optional<double> memory_bandwidth_fraction;
  // Fraction that row reductions (norms, softmax, cross entropy) reach, where measured apart.
  std::optional<double> memory_bandwidth_fraction_row_reduction;
  // Fraction that a GEMM reaches where its operand and result bytes, not its math, bound it: the
  // batched GEMMs of unfused attention, whose K or N is a head dimension and which write or read
  // the seq x seq score matrix. nullopt: memory_bandwidth_fraction (not measured apart).
  std::optional<double> gemm_memory_bandwidth_fraction;
  // Fraction of each dtype's dense peak (indexed by Dtype) that tensor-core work run back to back
  // holds: above it a GPU draws more than its power limit and its firmware lowers the SM clock,
  // while a profile's short bursts run at the boost clock (cost/compute_model.h, ClockRegime and
  // TensorClock). Keys "sustained_tensor_fraction_<dtype>". nullopt: not measured, no ceiling.
  std::array<std::optional<double>, static_cast<size_t>(Dtype::kFp32) + 1>
      sustained_tensor_fraction{};
  // Where the numbers come from.
  std::string source;
  // The reference tables (file names under tests/reference/) or profiles the fitted values were
  // fitted on, e.g. {"gemm_cublaslt.csv", "gemm_shapes.csv"}: what a leave-one-source-out check
  // must drop to judge the calibration on a table it did not see.
  std::vector<std::string> fitted_on;

  // The GEMM efficiency for |dtype|: its own if measured, else the first measured of bf16, fp16
  // and fp8 (the same tensor cores; an estimate until that dtype is profiled), else nullopt.
  std::optional<double> GemmEfficiency(Dtype dtype) const;
  // The field that holds |dtype|'s own GEMM efficiency, to read or set (no borrowing).
  std::optional<double>& GemmEfficiencySlot(Dtype dtype);
  const std::optional<double>& GemmEfficiencySlot(Dtype dtype) const;
  // The sustained fraction for |dtype|: its own, else bf16's for fp16 and fp16's for bf16 (the same
  // tensor-core path and rate), else nullopt. Never another dtype's: fp8 and tf32 draw another
  // power per FLOP.
  std::optional<double> SustainedTensorFraction(Dtype dtype) const;
  // The field that holds |dtype|'s own sustained fraction, to read or set (no borrowing).
  std::optional<double>& SustainedTensorFractionSlot(Dtype dtype);
  const std::optional<double>& SustainedTensorFractionSlot(Dtype dtype) const;
  // The fraction of the HBM bandwidth kernels of |access| reach: a row reduction's own where the
  // file has one, else memory_bandwidth_fraction, else 1 (the datasheet).
  double MemoryBandwidthFraction(MemoryAccess access) const;
  // The tiles of |family|'s |backward| (or forward) kernel: attention_*_tiles for cuDNN, the
  // family's own for FlashAttention-2 and Triton; nullopt where the file has none.
  const std::optional<AttentionTileParams>& AttentionTiles(AttentionFamily family,
                                                           bool backward) const;
  // The same field, to set or clear.
  std::optional<AttentionTileParams>& AttentionTilesSlot(AttentionFamily family, bool backward);
  // The key of the file's calibration object that holds |family|'s tiles: "attention_tiles",
  // "attention_tiles_flash2", "attention_tiles_triton".
  static std::string AttentionTilesKey(AttentionFamily family);
};

// The calibration key of |dtype|'s GEMM efficiency: "gemm_efficiency_bf16", ...
std::string GemmEfficiencyKey(Dtype dtype);

// The calibration key of |dtype|'s sustained fraction: "sustained_tensor_fraction_bf16", ...
std::string SustainedTensorFractionKey(Dtype dtype);

// Reads the "calibration" object |object| through |reader| (the GPU file's reader positioned on
// it; |object| is the same JSON, for the list-valued "fitted_on" the reader has no getter for).
ComputeCalibration ReadComputeCalibration(JsonReader& reader, const nlohmann::json& object);

}  // namespace loom

#endif  // LOOM_SPEC_GPU_CALIBRATION_H_
