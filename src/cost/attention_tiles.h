#ifndef LOOM_COST_ATTENTION_TILES_H_
#define LOOM_COST_ATTENTION_TILES_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// Fused attention (FlashAttention-2 and its successors: cuDNN's fused SDPA, FlashAttention-3) as
// the CTAs it runs, the way cost/gemm_tiles.h treats a GEMM:
// - Forward: one CTA per (batch, query head, block of kAttentionForwardBlockQ queries), looping
//   over the key/value blocks it attends to; backward: one CTA per (batch, query head, block of
//   kAttentionBackwardBlockKv keys), looping over the query blocks that attend to it (Dao 2023,
//   "FlashAttention-2", Sections 3.1-3.2: the forward is parallel over query blocks, the backward
//   over key/value blocks). Causal masking skips the blocks above the diagonal; a block on it is
//   computed whole and masked. Grouped-query attention shares K and V but not the work: CTAs are
//   per query head.
// - A block of Bq x Bkv scores costs its products (forward QK^T and PV, 4 d FLOPs a score; backward
//   five products, 10 d) at the per-SM tensor peak times a fitted efficiency, plus a fitted time
//   per score for the softmax, whose exponentials run on the special-function units
//   (FlashAttention-3, Shah et al. 2024, Section 3: on H100 SXM5 3.9 TFLOPS of them against 989 of
//   FP16 matmul, so at head dim 64 the exponentials take as long as the products), plus a fitted
//   extra per score of a diagonal block, plus a fitted time per element of Q for the passes that
//   grow with the sequence and not its square (the backward's dO * O rowsum and dQ conversion).
// - The CTAs run over the SMs: the work per SM is the larger of the total blocks over the SM count
//   and the longest CTA's blocks (a grid smaller than the GPU finishes with its longest CTA); each
//   wave of CTAs (ceil(CTAs / SMs)) costs a fitted prologue/epilogue time, the kernel a fixed one.
// The block sizes are FlashAttention-2's on GPUs with at least 144 KB of shared memory per block
// (Dao-AILab/flash-attention, csrc/flash_attn/src/flash_fwd_launch_template.h: 128 queries x 128
// keys at head dim 64, x 64 keys above it; flash_bwd_launch_template.h run_mha_bwd_hdim128: 64
// queries x 128 keys). cuDNN's kernels are not public; the model's rates are fitted per GPU.
inline constexpr int64_t kAttentionForwardBlockQ = 128;
// Keys per forward block: 128 up to head dim 64, 64 above.
int64_t AttentionForwardBlockKv(int64_t head_dim);
inline constexpr int64_t kAttentionBackwardBlockQ = 64;
inline constexpr int64_t kAttentionBackwardBlockKv = 128;

// The work of one attention kernel as the tile model counts it, per SM: each term of
// AttentionTileSeconds before its fitted rate.
struct AttentionTileWork {
  double matmul_s_at_peak = 0;  // the block loop's products at the per-SM tensor peak
  double scores = 0;            // score elements the busiest SM computes
  double masked_scores = 0;     // of them, in diagonal (masked) blocks
  double elements = 0;          // batch x heads x seq_q x head dim: Q's elements, whole GPU
  double waves = 0;             // ceil(CTAs / SMs)
  int64_t ctas = 0;
};

// REQUIRES: a positive shape; |sm_count| > 0; |peak_flops_per_s| > 0 (the dtype's dense peak of the
// whole GPU).
AttentionTileWork CountAttentionTiles(const AttentionShape& shape, int64_t sm_count,
                                      double peak_flops_per_s);

// The kernel's time under |params|.
double AttentionTileSeconds(const AttentionTileWork& work, const AttentionTileParams& params);

// One measured attention kernel.
struct AttentionTiming {
  AttentionShape shape;
  double seconds = 0;
};

// The fewest timings of one pass FitAttentionTiles fits.
inline constexpr size_t kMinAttentionTileSamples = 10;

// Fits one pass's AttentionTileParams to |timings| of that pass (all forward or all backward) on
// |gpu| by least squares on relative error; the time is linear in 1/matmul_efficiency and the other
// five, so this is a 6-unknown linear solve. A term whose coefficient comes out negative is dropped
// (set to 0) and the rest refitted; an efficiency above 1 is held at 1. Errors: InvalidArgument
// with fewer than 10 timings, mixed passes or dtypes, or a dtype |gpu| has no peak for.
Result<AttentionTileParams> FitAttentionTiles(std::span<const AttentionTiming> timings,
                                              const GpuSpec& gpu);

// Both passes' tiles of one kernel family.
struct AttentionTilePasses {
  AttentionTileParams forward, backward;
};

// Fits a family's tiles where only forward + backward was measured (a paper's benchmark of both
// passes together, e.g. Dao 2023, Figure 4): each timing's |shape| is its forward's (backward
// false) and |seconds| the two passes' sum. The two passes share the fitted values except the
// tensor-core efficiency, the backward's |backward_matmul_ratio| times the forward's (a ratio the
// source states apart, e.g. FlashAttention-2's 63 % against 73 % of the peak on A100); the terms
// of the two passes' tile counts add, so this is the same 6-unknown solve as FitAttentionTiles.
// Errors: as FitAttentionTiles, a ratio outside (0, 1], or a timing keyed by a backward shape.
Result<AttentionTilePasses> FitAttentionTilesOverPasses(std::span<const AttentionTiming> timings,
                                                        const GpuSpec& gpu,
                                                        double backward_matmul_ratio);

}  // namespace loom

#endif  // LOOM_COST_ATTENTION_TILES_H_
