#ifndef LOOM_OP_OP_H_
#define LOOM_OP_OP_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "core/attention_family.h"
#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/memory_access.h"

namespace loom {

// The vocabulary of the op stream: what one rank runs for one micro-batch, kernel by kernel, with
// the exact shapes of its tensor-parallel shard. The simulator costs each op; the executor runs it.

enum class OpKind { kGemm, kAttention, kMemoryBound, kCollective };
enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll };
// The process group a collective runs over: tensor, context, expert, data or expert tensor
// parallel (Megatron-core's expert tensor-parallel group, which splits each routed expert).
enum class CommGroup { kTp, kCp, kEp, kDp, kEtp };

inline constexpr EnumNames<OpKind, 4> kOpKindNames({{
    {OpKind::kGemm, "gemm"},
    {OpKind::kAttention, "attention"},
    {OpKind::kMemoryBound, "memory"},
    {OpKind::kCollective, "collective"},
}});
inline constexpr EnumNames<CollectiveKind, 4> kCollectiveKindNames({{
    {CollectiveKind::kAllReduce, "all_reduce"},
    {CollectiveKind::kAllGather, "all_gather"},
    {CollectiveKind::kReduceScatter, "reduce_scatter"},
    {CollectiveKind::kAllToAll, "all_to_all"},
}});
inline constexpr EnumNames<CommGroup, 5> kCommGroupNames({{
    {CommGroup::kTp, "tp"},
    {CommGroup::kCp, "cp"},
    {CommGroup::kEp, "ep"},
    {CommGroup::kDp, "dp"},
    {CommGroup::kEtp, "etp"},
}});

// The NCCL operations loom probe measures and its executor runs, one per nccl-tests binary:
// CollectiveKind's four, broadcast, and the send/receive pairs of pipeline parallelism.
enum class ProfiledCollective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kSendRecv
};
inline constexpr EnumNames<ProfiledCollective, 6> kProfiledCollectiveNames({{
    {ProfiledCollective::kAllReduce, "all_reduce"},
    {ProfiledCollective::kAllGather, "all_gather"},
    {ProfiledCollective::kReduceScatter, "reduce_scatter"},
    {ProfiledCollective::kAllToAll, "all_to_all"},
    {ProfiledCollective::kBroadcast, "broadcast"},
    {ProfiledCollective::kSendRecv, "send_recv"},
}});

// What an op is in the model. Backward ops have their own names: ".dgrad" computes the gradient
// of an op's input (backward B), ".wgrad" that of its weight (backward W), ".bgrad" that of its
// bias (backward W), ".grad" the backward of an op without weights. Names are fixed strings, so
// an op carries no heap allocation.
enum class OpName : uint8_t {
  // Vocabulary-parallel embedding (first pipeline stage).
  kEmbedding,
  kEmbeddingReduce,
  kPositionEmbedding,
  kEmbeddingDropout,
  kEmbeddingDropoutGrad,
  kEmbeddingGradAllGather,
  kEmbeddingWgrad,
  kPositionEmbeddingWgrad,
  // Attention block.
  kInputNorm,
  kAttentionInputAllGather,
  kQkvProj,
  kQkvBias,
  kRotary,
  kAttentionUnpad,
  kCpKvAllGather,
  kFlashAttention,
  kAttentionScores,
  // PyTorch's softmax where Megatron-LM's fused kernel does not take the shape
  // (FusedScaleMaskSoftmax.forward_torch_softmax): the scores cast to fp32, scaled by the layer
  // number (query-key layer scaling), the causal mask filled in, the softmax (kAttentionSoftmax)
  // and the cast back.
  kAttentionSoftmaxUpcast,
  kAttentionScale,
  kAttentionMaskFill,
  kAttentionSoftmax,
  kAttentionSoftmaxDowncast,
  kAttentionDropout,
  kAttentionContext,
  kAttentionContextCopy,
  kAttentionPad,
  kOutProj,
  kAttentionOutputReduce,
  kAttentionResidual,
  kAttentionResidualGrad,
  kAttentionOutputGradAllGather,
  kOutProjDgrad,
  kAttentionPadGrad,
  kCpKvRegather,
  kFlashAttentionGrad,
  kCpKvGradReduceScatter,
  kAttentionUnpadGrad,
  kQkvSplitGrad,
  kAttentionContextDgradProbs,
  kAttentionContextDgradValues,
  kAttentionDropoutGrad,
  kAttentionSoftmaxDowncastGrad,
  kAttentionSoftmaxGrad,
  kAttentionMaskFillGrad,
  kAttentionScaleGrad,
  kAttentionSoftmaxUpcastGrad,
  kAttentionScoresDgradQuery,
  kAttentionScoresDgradKey,
  kRotaryGrad,
  kQkvProjDgrad,
  kAttentionInputRegather,
  kAttentionInputGradReduce,
  kInputNormGrad,
  kOutProjWgrad,
  kQkvProjWgrad,
  kQkvProjBgrad,
  kOutProjBgrad,
  // Multi-head latent attention (DeepSeek-V2 Section 2.1); its input norm, rotary, core, output
  // projection and residual use the attention names above.
  kQProj,
  kQDownProj,
  kKvDownProj,
  kQNorm,
  kQUpInputAllGather,
  kQUpProj,
  kKvNorm,
  kKRopeAllGather,
  kKvUpInputAllGather,
  kKvUpProj,
  kKvUpInputRegather,
  kKvUpProjDgrad,
  kKvUpInputGradReduce,
  kKRopeGradReduce,
  kKvNormGrad,
  kQUpInputRegather,
  kQUpProjDgrad,
  kQUpInputGradReduce,
  kQNormGrad,
  kQProjDgrad,
  kKvDownProjDgrad,
  kQDownProjDgrad,
  kKvUpProjWgrad,
  kQUpProjWgrad,
  kQProjWgrad,
  kKvDownProjWgrad,
  kQDownProjWgrad,
  // Dense MLP block.
  kPostAttentionNorm,
  kMlpInputAllGather,
  kMlpUp,
  kMlpActivation,
  kMlpDown,
  kMlpOutputReduce,
  kMlpResidual,
  kMlpResidualGrad,
  kMlpOutputGradAllGather,
  kMlpDownDgrad,
  kMlpActivationGrad,
  kMlpUpDgrad,
  kMlpInputRegather,
  kMlpInputGradReduce,
  kPostAttentionNormGrad,
  kMlpDownWgrad,
  kMlpUpWgrad,
  kMlpDownBgrad,
  kMlpUpBgrad,
  // Mixture-of-experts block (the norm, residual and shared experts use the dense MLP names).
  kRouter,
  kRouterTopK,
  kMoePermute,
  kMoeDispatch,
  kMoeDispatchAllGather,
  kMoeSortChunks,
  kExpertUp,
  kExpertActivation,
  kExpertDown,
  kMoeUnsortChunks,
  kMoeCombineReduceScatter,
  kMoeCombine,
  kMoeUnpermute,
  kMoeUnpermuteGrad,
  kMoeCombineGrad,
  kMoeCombineGradAllGather,
  kMoeUnsortChunksGrad,
  kExpertDownDgrad,
  kExpertActivationGrad,
  kExpertUpDgrad,
  kMoeSortChunksGrad,
  kMoeDispatchGradReduceScatter,
  kMoeDispatchGrad,
  kMoePermuteGrad,
  kRouterTopKGrad,
  kRouterDgrad,
  kExpertDownWgrad,
  kExpertUpWgrad,
  kRouterWgrad,
  // Output head and vocabulary-parallel cross entropy (last pipeline stage).
  kFinalNorm,
  kHeadInputAllGather,
  kOutputHead,
  kCrossEntropyMax,
  kCrossEntropyMaxAllReduce,
  kCrossEntropyExp,
  kCrossEntropyPredictedAllReduce,
  kCrossEntropySumAllReduce,
  kCrossEntropyLoss,
  kCrossEntropyGrad,
  kOutputHeadDgrad,
  kHeadInputRegather,
  kHeadInputGradReduce,
  kFinalNormGrad,
  kOutputHeadWgrad,
  // Transformer Engine's fp8 casts around a linear's fp8 GEMMs (workload/fp8_casts.h): its input
  // cast with its transpose, its weight's, and in backward its output gradient's.
  kFp8Cast,
  kFp8WeightCast,
  kFp8GradCast,
  // Gradient accumulation across micro-batches (workload/grad_accumulation.h): the adds of a
  // block's weight gradients into the gradients the optimizer steps on.
  kGradAccumulate,
};

// The op's name in traces and reports, e.g. "qkv_proj.dgrad".
std::string_view OpNameString(OpName name);
// The op named |text| (as OpNameString spells it), or nullopt.
std::optional<OpName> ParseOpName(std::string_view text);

// C[m, n] = A[m, k] * B[k, n], |batch| times (a batched GEMM when > 1).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  Dtype dtype = Dtype::kBf16;
  // C = A * B + C with C (and the result) in fp32: a weight-gradient GEMM that accumulates into
  // Megatron-LM's fp32 main_grad buffer (--gradient-accumulation-fusion, the default where
  // APEX's fused_weight_gradient_mlp_cuda is present). The epilogue reads and writes m * n fp32
  // values per batch product instead of writing m * n |dtype| values; the compute model decides
  // per GPU whether that traffic adds to the kernel or hides under its main loop.
  bool accumulate_fp32 = false;
};

// One fused FlashAttention-style kernel (Dao et al. 2022) over |heads| heads of this TP shard.
// causal: every query sees the keys at or before its position; with context parallelism the
// queries of a rank are Megatron's load-balanced chunks (2 of 2 * cp), so, like an unsplit
// sequence, they see half of |seq_kv| on average.
struct AttentionShape {
  int64_t batch = 0;
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads: = heads for MHA, fewer for GQA (Ainslie et al. 2023)
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  int64_t head_dim_qk = 0;
  int64_t head_dim_v = 0;
  bool causal = true;
  bool backward = false;
  Dtype dtype = Dtype::kBf16;
  // The library whose kernel runs it (core/attention_family.h); each has its own rates.
  AttentionFamily family = AttentionFamily::kFlashAttention2;
  // Sliding-window attention: the keys each query sees at most, itself included, ending at its
  // causal diagonal (FlashAttention's window_size (window - 1, 0)); 0: no window.
  int64_t window = 0;
  // The keys a query meets at most: the window where it is shorter than seq_kv.
  int64_t KeySpan() const { return window > 0 ? std::min(window, seq_kv) : seq_kv; }
};

// A kernel limited by memory bandwidth: norms, activations, dropout, residual adds, softmax,
// cross entropy. Bytes of HBM traffic; weights of norms (a few KiB) are not counted.
struct MemoryShape {
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  MemoryAccess access = MemoryAccess::kStreaming;
};

// A collective over |group|. |bytes| follows nccl-tests' "size" column, so that bus-bandwidth
// tables apply as they are (nccl-tests, doc/PERFORMANCE.md): all-reduce: the buffer each rank
// holds; all-gather: the OUTPUT (every rank's part together); reduce-scatter: the INPUT (the
// whole buffer before it is scattered); all-to-all: the buffer each rank sends (= receives).
struct CollectiveShape {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CommGroup group = CommGroup::kTp;
  int64_t bytes = 0;
};

using OpShape = std::variant<GemmShape, AttentionShape, MemoryShape, CollectiveShape>;

struct Op {
  OpName name = OpName::kInputNorm;
  OpKind kind = OpKind::kMemoryBound;  // always agrees with |shape|; use the Make* functions
  OpShape shape;
  // Activation bytes this op keeps for the backward pass (its saved inputs or outputs), allocated
  // when it runs and freed by the backward of its layer. A tensor kept by two ops is counted by
  // one of them only, so sums over ops are the bytes kept.
  int64_t saved_bytes = 0;
};

Op MakeGemm(OpName name, const GemmShape& shape, int64_t saved_bytes = 0);
Op MakeAttention(OpName name, const AttentionShape& shape, int64_t saved_bytes = 0);
Op MakeMemory(OpName name, const MemoryShape& shape, int64_t saved_bytes = 0);
Op MakeCollective(OpName name, const CollectiveShape& shape);

// The ops of one layer (or of the embedding or output stage) for one micro-batch, each list in
// execution order.
struct LayerOps {
  std::vector<Op> forward;
  std::vector<Op> backward_input;   // B: gradients of activations, in reverse layer order
  std::vector<Op> backward_weight;  // W: gradients of weights; may run any time after B
  // Forward ops replayed just before B when activations were recomputed instead of kept: none;
  // the attention core (selective, Korthikanti et al. 2022 Section 4.3); or the whole forward
  // (full). Their |saved_bytes| are the bytes the replay allocates beyond what the forward kept.
  std::vector<Op> recompute;
};

// 2 * batch * m * n * k.
int64_t GemmFlops(const GemmShape& shape);

// Model FLOPs of the two attention matmuls (Q K^T and P V): 2 * b * heads * seq_q * seq_kv *
// (head_dim_qk + head_dim_v) forward, twice that backward. Causal masking is not subtracted, as
// in Narayanan et al. 2021 (eq. 3), so that MFU compares with published numbers.
int64_t AttentionModelFlops(const AttentionShape& shape);

// FLOPs a causal FlashAttention-2 kernel executes: the model FLOPs times the unmasked fraction
// (seq_kv + 1) / (2 * seq_kv) when causal; the backward also recomputes Q K^T, so it executes
// 2.5x the forward, not 2x (Dao 2023, "FlashAttention-2", Section 4.1).
double AttentionKernelFlops(const AttentionShape& shape);

// Model FLOPs of |op|: GemmFlops or AttentionModelFlops; 0 for memory-bound ops and collectives.
int64_t OpFlops(const Op& op);

// Sums over |ops|.
int64_t TotalFlops(const std::vector<Op>& ops);
int64_t TotalSavedBytes(const std::vector<Op>& ops);

}  // namespace loom

#endif  // LOOM_OP_OP_H_
