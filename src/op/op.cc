#include "op/op.h"

#include <array>
#include <utility>

namespace loom {
namespace {

constexpr std::pair<OpName, std::string_view> kOpNames[] = {
    {OpName::kEmbedding, "embedding"},
    {OpName::kEmbeddingReduce, "embedding_reduce"},
    {OpName::kPositionEmbedding, "position_embedding"},
    {OpName::kEmbeddingDropout, "embedding_dropout"},
    {OpName::kEmbeddingDropoutGrad, "embedding_dropout.grad"},
    {OpName::kEmbeddingGradAllGather, "embedding_grad_all_gather"},
    {OpName::kEmbeddingWgrad, "embedding.wgrad"},
    {OpName::kPositionEmbeddingWgrad, "position_embedding.wgrad"},
    {OpName::kInputNorm, "input_norm"},
    {OpName::kAttentionInputAllGather, "attn_input_all_gather"},
    {OpName::kQkvProj, "qkv_proj"},
    {OpName::kQkvBias, "qkv_bias"},
    {OpName::kRotary, "rotary"},
    {OpName::kAttentionUnpad, "attn_unpad"},
    {OpName::kCpKvAllGather, "cp_kv_all_gather"},
    {OpName::kFlashAttention, "flash_attention"},
    {OpName::kAttentionScores, "attn_scores"},
    {OpName::kAttentionSoftmaxUpcast, "attn_softmax_upcast"},
    {OpName::kAttentionScale, "attn_scale"},
    {OpName::kAttentionMaskFill, "attn_mask_fill"},
    {OpName::kAttentionSoftmax, "attn_softmax"},
    {OpName::kAttentionSoftmaxDowncast, "attn_softmax_downcast"},
    {OpName::kAttentionDropout, "attn_dropout"},
    {OpName::kAttentionContext, "attn_context"},
    {OpName::kAttentionContextCopy, "attn_context_copy"},
    {OpName::kAttentionPad, "attn_pad"},
    {OpName::kOutProj, "out_proj"},
    {OpName::kAttentionOutputReduce, "attn_output_reduce"},
    {OpName::kAttentionResidual, "attn_residual"},
    {OpName::kAttentionResidualGrad, "attn_residual.grad"},
    {OpName::kAttentionOutputGradAllGather, "attn_output_grad_all_gather"},
    {OpName::kOutProjDgrad, "out_proj.dgrad"},
    {OpName::kAttentionPadGrad, "attn_pad.grad"},
    {OpName::kCpKvRegather, "cp_kv_regather"},
    {OpName::kFlashAttentionGrad, "flash_attention.grad"},
    {OpName::kCpKvGradReduceScatter, "cp_kv_grad_reduce_scatter"},
    {OpName::kAttentionUnpadGrad, "attn_unpad.grad"},
    {OpName::kQkvSplitGrad, "qkv_split.grad"},
    {OpName::kAttentionContextDgradProbs, "attn_context.dgrad_probs"},
    {OpName::kAttentionContextDgradValues, "attn_context.dgrad_values"},
    {OpName::kAttentionDropoutGrad, "attn_dropout.grad"},
    {OpName::kAttentionSoftmaxDowncastGrad, "attn_softmax_downcast.grad"},
    {OpName::kAttentionSoftmaxGrad, "attn_softmax.grad"},
    {OpName::kAttentionMaskFillGrad, "attn_mask_fill.grad"},
    {OpName::kAttentionScaleGrad, "attn_scale.grad"},
    {OpName::kAttentionSoftmaxUpcastGrad, "attn_softmax_upcast.grad"},
    {OpName::kAttentionScoresDgradQuery, "attn_scores.dgrad_query"},
    {OpName::kAttentionScoresDgradKey, "attn_scores.dgrad_key"},
    {OpName::kRotaryGrad, "rotary.grad"},
    {OpName::kQkvProjDgrad, "qkv_proj.dgrad"},
    {OpName::kAttentionInputRegather, "attn_input_regather"},
    {OpName::kAttentionInputGradReduce, "attn_input_grad_reduce"},
    {OpName::kInputNormGrad, "input_norm.grad"},
    {OpName::kOutProjWgrad, "out_proj.wgrad"},
    {OpName::kQkvProjWgrad, "qkv_proj.wgrad"},
    {OpName::kQkvProjBgrad, "qkv_proj.bgrad"},
    {OpName::kOutProjBgrad, "out_proj.bgrad"},
    {OpName::kQProj, "q_proj"},
    {OpName::kQDownProj, "q_down_proj"},
    {OpName::kKvDownProj, "kv_down_proj"},
    {OpName::kQNorm, "q_norm"},
    {OpName::kQUpInputAllGather, "q_up_input_all_gather"},
    {OpName::kQUpProj, "q_up_proj"},
    {OpName::kKvNorm, "kv_norm"},
    {OpName::kKRopeAllGather, "k_rope_all_gather"},
    {OpName::kKvUpInputAllGather, "kv_up_input_all_gather"},
    {OpName::kKvUpProj, "kv_up_proj"},
    {OpName::kKvUpInputRegather, "kv_up_input_regather"},
    {OpName::kKvUpProjDgrad, "kv_up_proj.dgrad"},
    {OpName::kKvUpInputGradReduce, "kv_up_input_grad_reduce"},
    {OpName::kKRopeGradReduce, "k_rope_grad_reduce"},
    {OpName::kKvNormGrad, "kv_norm.grad"},
    {OpName::kQUpInputRegather, "q_up_input_regather"},
    {OpName::kQUpProjDgrad, "q_up_proj.dgrad"},
    {OpName::kQUpInputGradReduce, "q_up_input_grad_reduce"},
    {OpName::kQNormGrad, "q_norm.grad"},
    {OpName::kQProjDgrad, "q_proj.dgrad"},
    {OpName::kKvDownProjDgrad, "kv_down_proj.dgrad"},
    {OpName::kQDownProjDgrad, "q_down_proj.dgrad"},
    {OpName::kKvUpProjWgrad, "kv_up_proj.wgrad"},
    {OpName::kQUpProjWgrad, "q_up_proj.wgrad"},
    {OpName::kQProjWgrad, "q_proj.wgrad"},
    {OpName::kKvDownProjWgrad, "kv_down_proj.wgrad"},
    {OpName::kQDownProjWgrad, "q_down_proj.wgrad"},
    {OpName::kPostAttentionNorm, "post_attn_norm"},
    {OpName::kMlpInputAllGather, "mlp_input_all_gather"},
    {OpName::kMlpUp, "mlp_up"},
    {OpName::kMlpActivation, "mlp_act"},
    {OpName::kMlpDown, "mlp_down"},
    {OpName::kMlpOutputReduce, "mlp_output_reduce"},
    {OpName::kMlpResidual, "mlp_residual"},
    {OpName::kMlpResidualGrad, "mlp_residual.grad"},
    {OpName::kMlpOutputGradAllGather, "mlp_output_grad_all_gather"},
    {OpName::kMlpDownDgrad, "mlp_down.dgrad"},
    {OpName::kMlpActivationGrad, "mlp_act.grad"},
    {OpName::kMlpUpDgrad, "mlp_up.dgrad"},
    {OpName::kMlpInputRegather, "mlp_input_regather"},
    {OpName::kMlpInputGradReduce, "mlp_input_grad_reduce"},
    {OpName::kPostAttentionNormGrad, "post_attn_norm.grad"},
    {OpName::kMlpDownWgrad, "mlp_down.wgrad"},
    {OpName::kMlpUpWgrad, "mlp_up.wgrad"},
    {OpName::kMlpDownBgrad, "mlp_down.bgrad"},
    {OpName::kMlpUpBgrad, "mlp_up.bgrad"},
    {OpName::kRouter, "router"},
    {OpName::kRouterTopK, "router_topk"},
    {OpName::kMoePermute, "moe_permute"},
    {OpName::kMoeDispatch, "moe_dispatch"},
    {OpName::kMoeDispatchAllGather, "moe_dispatch_all_gather"},
    {OpName::kMoeSortChunks, "moe_sort_chunks"},
    {OpName::kExpertUp, "expert_up"},
    {OpName::kExpertActivation, "expert_act"},
    {OpName::kExpertDown, "expert_down"},
    {OpName::kMoeUnsortChunks, "moe_unsort_chunks"},
    {OpName::kMoeCombineReduceScatter, "moe_combine_reduce_scatter"},
    {OpName::kMoeCombine, "moe_combine"},
    {OpName::kMoeUnpermute, "moe_unpermute"},
    {OpName::kMoeUnpermuteGrad, "moe_unpermute.grad"},
    {OpName::kMoeCombineGrad, "moe_combine.grad"},
    {OpName::kMoeCombineGradAllGather, "moe_combine_grad_all_gather"},
    {OpName::kMoeUnsortChunksGrad, "moe_unsort_chunks.grad"},
    {OpName::kExpertDownDgrad, "expert_down.dgrad"},
    {OpName::kExpertActivationGrad, "expert_act.grad"},
    {OpName::kExpertUpDgrad, "expert_up.dgrad"},
    {OpName::kMoeSortChunksGrad, "moe_sort_chunks.grad"},
    {OpName::kMoeDispatchGradReduceScatter, "moe_dispatch_grad_reduce_scatter"},
    {OpName::kMoeDispatchGrad, "moe_dispatch.grad"},
    {OpName::kMoePermuteGrad, "moe_permute.grad"},
    {OpName::kRouterTopKGrad, "router_topk.grad"},
    {OpName::kRouterDgrad, "router.dgrad"},
    {OpName::kExpertDownWgrad, "expert_down.wgrad"},
    {OpName::kExpertUpWgrad, "expert_up.wgrad"},
    {OpName::kRouterWgrad, "router.wgrad"},
    {OpName::kFinalNorm, "final_norm"},
    {OpName::kHeadInputAllGather, "head_input_all_gather"},
    {OpName::kOutputHead, "output_head"},
    {OpName::kCrossEntropyMax, "cross_entropy_max"},
    {OpName::kCrossEntropyMaxAllReduce, "cross_entropy_max_all_reduce"},
    {OpName::kCrossEntropyExp, "cross_entropy_exp"},
    {OpName::kCrossEntropyPredictedAllReduce, "cross_entropy_predicted_all_reduce"},
    {OpName::kCrossEntropySumAllReduce, "cross_entropy_sum_all_reduce"},
    {OpName::kCrossEntropyLoss, "cross_entropy_loss"},
    {OpName::kCrossEntropyGrad, "cross_entropy.grad"},
    {OpName::kOutputHeadDgrad, "output_head.dgrad"},
    {OpName::kHeadInputRegather, "head_input_regather"},
    {OpName::kHeadInputGradReduce, "head_input_grad_reduce"},
    {OpName::kFinalNormGrad, "final_norm.grad"},
    {OpName::kOutputHeadWgrad, "output_head.wgrad"},
    {OpName::kFp8Cast, "fp8_cast"},
    {OpName::kFp8WeightCast, "fp8_weight_cast"},
    {OpName::kFp8GradCast, "fp8_cast.grad"},
    {OpName::kGradAccumulate, "grad_accumulate"},
};

// The table is indexed by the enum's value; this holds it in the order of the declaration.
constexpr bool TableFollowsEnum() {
  for (size_t i = 0; i < std::size(kOpNames); ++i) {
    if (static_cast<size_t>(kOpNames[i].first) != i) return false;
  }
  return static_cast<size_t>(OpName::kGradAccumulate) + 1 == std::size(kOpNames);
}
static_assert(TableFollowsEnum(), "kOpNames must list every OpName in declaration order");

}  // namespace

std::string_view OpNameString(OpName name) { return kOpNames[static_cast<size_t>(name)].second; }

std::optional<OpName> ParseOpName(std::string_view text) {
  for (const auto& [name, spelled] : kOpNames) {
    if (spelled == text) return name;
  }
  return std::nullopt;
}

Op MakeGemm(OpName name, const GemmShape& shape, int64_t saved_bytes) {
  return Op{name, OpKind::kGemm, shape, saved_bytes};
}
Op MakeAttention(OpName name, const AttentionShape& shape, int64_t saved_bytes) {
  return Op{name, OpKind::kAttention, shape, saved_bytes};
}
Op MakeMemory(OpName name, const MemoryShape& shape, int64_t saved_bytes) {
  return Op{name, OpKind::kMemoryBound, shape, saved_bytes};
}
Op MakeCollective(OpName name, const CollectiveShape& shape) {
  return Op{name, OpKind::kCollective, shape, 0};
}

int64_t GemmFlops(const GemmShape& s) { return 2 * s.batch * s.m * s.n * s.k; }

int64_t AttentionModelFlops(const AttentionShape& s) {
  // Q K^T: 2 * seq_q * keys * head_dim_qk per head; P V: 2 * seq_q * keys * head_dim_v, with the
  // keys a query meets (the window's in a windowed layer, ModelFlopsPerToken's convention).
  const int64_t forward =
      2 * s.batch * s.heads * s.seq_q * s.KeySpan() * (s.head_dim_qk + s.head_dim_v);
  return s.backward ? 2 * forward : forward;
}

double AttentionKernelFlops(const AttentionShape& s) {
  AttentionShape forward_shape = s;
  forward_shape.backward = false;
  forward_shape.window = 0;
  double flops = static_cast<double>(AttentionModelFlops(forward_shape));
  if (s.causal) {
    // The scores at or before each query's diagonal, |span| at most: with n = seq_kv and w the
    // span, w (w + 1) / 2 + (n - w) w of the n^2.
    const double n = static_cast<double>(s.seq_kv), w = static_cast<double>(s.KeySpan());
    flops *= (w * (w + 1) / 2 + (n - w) * w) / (n * n);
  }
  return s.backward ? 2.5 * flops : flops;
}

int64_t OpFlops(const Op& op) {
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) return GemmFlops(*gemm);
  if (const auto* attention = std::get_if<AttentionShape>(&op.shape))
    return AttentionModelFlops(*attention);
  return 0;
}

int64_t TotalFlops(const std::vector<Op>& ops) {
  int64_t total = 0;
  for (const Op& op : ops) total += OpFlops(op);
  return total;
}

int64_t TotalSavedBytes(const std::vector<Op>& ops) {
  int64_t total = 0;
  for (const Op& op : ops) total += op.saved_bytes;
  return total;
}

}  // namespace loom
