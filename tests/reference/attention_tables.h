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
