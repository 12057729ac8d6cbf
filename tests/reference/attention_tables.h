// The attention-kernel table of the fidelity report (issue 42, mechanism 4): Megatron-LM's unfused
// core attention on an A100, as loom's workload builds it and its compute model times it, against
// the FlashAttention paper's benchmark of that attention (flashattention1_megatron_a100.csv).

#ifndef LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_
#define LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_

#include "core/status.h"
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

// One row per FlashAttention-2 bar of flashattention2_a100_fig4.csv (Dao 2023, Figure 4: forward
// + backward on one A100 80GB SXM4, hidden 2048 as 32 heads of 64 or 16 of 128, 16k tokens, with
// and without the causal mask, seq 512-16k), in TFLOP/s: loom's flash2 family with the shipped
// hardware/gpus/a100-sxm4-80gb.json, whose attention calibration is fitted on none of it (both
// columns are the same). The file's other methods (FlashAttention v1, its Triton port, xformers,
// standard attention) are read and checked but not predicted. Errors: a missing or malformed
// table or GPU file.
Result<FidelityTable> PredictFlash2A100Table(const ReferencePaths& paths);

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
