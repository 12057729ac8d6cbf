// The attention-kernel table of the fidelity report (issue 42, mechanism 4): Megatron-LM's unfused
// core attention on an A100, as loom's workload builds it and its compute model times it, against
// the FlashAttention paper's benchmark of that attention (flashattention1_megatron_a100.csv).

#ifndef LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_
#define LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_

#include <string_view>

#include "core/attention_family.h"
#include "core/status.h"
#include "cost/attention_tiles.h"
#include "cost/compute_model.h"
#include "reference/fidelity_cases.h"
#include "reference/fidelity_tables.h"

namespace loom {

// One row per measurement of flashattention1_megatron_a100.csv (Dao et al. 2022, Appendix E.6,
// Tables 9-20: batch 16, 8 heads of dimension 64, fp16, not causal, on one A100-SXM4-40GB): the
// core attention kernels of BuildTransformerLayerOps with Megatron's layer (MegatronLayerKernels,
// causal false, dropout as the row), the forward's (Q K^T, softmax, dropout, the product with V,
// the copy back to [s, b, h]) or the backward's (the two products of each GEMM's gradient, the
// dropout's and the softmax's gradients) or both, each costed by RooflineComputeModel with
// tests/reference/steptime/gpus/a100-sxm4-40gb.json and summed, in ms. loom has no cost for the
// padding mask (the rows with masking are predicted as those without). Where the GPU file's
// fitted_on names the table (its gemm_memory_bandwidth_fraction is
// FitMegatronAttentionGemmFraction's), the leave-one-source-out column predicts without that
// fraction. Errors: a missing or malformed table or GPU file.
Result<FidelityTable> PredictMegatronAttentionTable(const ReferencePaths& paths);

// The FlashAttention-2 paper's benchmarks of forward + backward (Dao 2023, Section 4.1: hidden 2048
// as 32 heads of 64 or 16 of 128, 16k tokens a call, with and without the causal mask, seq
// 512-16k), as read from its figures' printed labels: Figure 4 on an A100 80GB SXM4 (FlashAttention
// v1, its Triton port, xformers, standard attention and FlashAttention-2), Figure 7 on an H100 80GB
// SXM5 (v1, standard attention and FlashAttention-2).
inline constexpr std::string_view kFlashAttentionA100Figure = "flashattention2_a100_fig4.csv";
inline constexpr std::string_view kFlashAttentionH100Figure = "flashattention2_h100_fig7.csv";

// The backward's tensor-core efficiency over the forward's, for a family whose figure measured
// both passes together: FlashAttention-2's 63 % against 73 % of the A100's peak, and its Triton
// port's from FlashAttention-2 being 1.3-1.5x faster forward and 2x faster backward (Dao 2023,
// Section 4.1).
double BackwardMatmulRatio(AttentionFamily family);

// |family|'s tiles (cost/attention_tiles.h) fitted on its bars of |file| (one of the two figures)
// on |gpu|: FitAttentionTilesOverPasses with BackwardMatmulRatio. What the shipped GPU files'
// attention_tiles_flash2 and attention_tiles_triton hold. Errors: a missing or malformed table, or
// a fit the bars do not determine.
Result<AttentionTilePasses> FitAttentionFigureTiles(const ReferencePaths& paths,
                                                    std::string_view file, const GpuSpec& gpu,
                                                    AttentionFamily family);

// loom's forward plus backward of one bar of the figures' setting (Dao 2023, Section 4.1: hidden
// 2048 as heads of |head_dim|, 16k tokens a call) by |family| on |compute|'s GPU, in TFLOP/s of
// the figures' FLOPs (4 seq^2 head_dim a head and sequence, halved when causal, the backward 2.5
// times the forward), as the figure tables predict each bar.
double FigureTflops(const RooflineComputeModel& compute, int64_t head_dim, bool causal, int64_t seq,
                    AttentionFamily family);

// The Triton port's forward + backward bars on the H100, which no benchmark measured: each
// FlashAttention-2 bar of Figure 7 times the Triton port's rate over FlashAttention-2's at the same
// head dimension, mask and sequence on the A100 (Figure 4). Both kernels issue Ampere's mma.sync
// on Hopper (FlashAttention-2 2.x: Shah et al. 2024, FlashAttention-3, Section 1; the Triton port
// as llm-foundry ran it, through triton-pre-mlir, the pre-MLIR Triton 2.0.0.dev20221202 that its
// flash_attn_triton.py was tested with, patched for sm_90: llm-foundry b2a43a14 setup.py), so the
// assumption is that the port's rate relative to FlashAttention-2 carries over from one GPU to the
// other. A bar without its three partners (one the A100 figure's legend covers) is left out. In
// Figure 7's order, with method "flash1_triton". Errors: a missing or malformed table.
struct TransferredBar {
  int64_t head_dim = 0;
  bool causal = false;
  int64_t seq = 0;
  double tflops = 0;
};
Result<std::vector<TransferredBar>> TritonBarsOnH100(const ReferencePaths& paths);

// The Triton port's tiles on |gpu| (an H100 or its H200 die) fitted on TritonBarsOnH100:
// FitAttentionTilesOverPasses with BackwardMatmulRatio(kTriton). What the Hopper files'
// attention_tiles_triton hold. Errors: as TritonBarsOnH100, or a fit the bars do not determine.
Result<AttentionTilePasses> FitTritonTilesOnH100(const ReferencePaths& paths, const GpuSpec& gpu);

// One table per figure: each bar of a family loom models (FlashAttention-2 on both GPUs, the
// Triton port on the A100) predicted with the shipped GPU file, in TFLOP/s of the figure's FLOPs;
// the leave-one-source-out column without the tiles fitted on the figure (attention_efficiency's
// one rate). Errors: a missing or malformed table or GPU file.
Result<std::vector<FidelityTable>> PredictAttentionFigureTables(const ReferencePaths& paths);

// The A100's gemm_memory_bandwidth_fraction (spec/gpu_calibration.h) that best predicts the
// table's forward and backward rows without the padding mask at N >= 1024 (least squares on the
// log of predicted over measured; the rows below are bound by the host's launches, not the GPU),
// every other calibration of tests/reference/steptime/gpus/a100-sxm4-40gb.json kept. At these
// shapes the attention's GEMMs (K = 64 for Q K^T and the product's gradient with respect to the
// probabilities, N = 64 for the products with V and the gradients of Q and K) write or read the
// 16 x 8 x N x N scores and are bound by those bytes. Errors: a missing or malformed table or GPU
// file.
Result<double> FitMegatronAttentionGemmFraction(const ReferencePaths& paths);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_
