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
// padding mask (the rows with masking are predicted as those without). No calibration is fitted on
// the table, so its leave-one-source-out column is in-sample. Errors: a missing or malformed
// table or GPU file.
Result<FidelityTable> PredictMegatronAttentionTable(const ReferencePaths& paths);

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_ATTENTION_TABLES_H_
