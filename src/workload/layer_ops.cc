#include "workload/layer_ops.h"

#include <utility>
#include <vector>

#include "workload/blocks.h"
#include "workload/fp8_casts.h"
#include "workload/grad_accumulation.h"
#include "workload/layer_dims.h"
#include "workload/model_states.h"

namespace loom {
namespace {

// Full recompute (Chen et al. 2016; Megatron-LM's --recompute-granularity full) keeps only the
// layer's input, the first op's (the input norm's) saved input, and replays the whole forward,
// its collectives included, before B. The replay's first op re-reads that same kept input.
void ApplyFullRecompute(LayerOps* ops) {
  ops->recompute = ops->forward;
  ops->recompute.front().saved_bytes = 0;
  for (size_t i = 1; i < ops->forward.size(); ++i) ops->forward[i].saved_bytes = 0;
}

}  // namespace

std::span<const OpName> TpBackwardPartners(OpName collective) {
  static constexpr OpName kAttentionRegather[] = {OpName::kQkvProjDgrad, OpName::kQProjDgrad};
  static constexpr OpName kAttentionReduce[] = {OpName::kQkvProjWgrad, OpName::kQProjWgrad};
  static constexpr OpName kMlpRegather[] = {OpName::kMlpUpDgrad};
  static constexpr OpName kMlpReduce[] = {OpName::kMlpUpWgrad};
  static constexpr OpName kHeadRegather[] = {OpName::kOutputHeadDgrad};
  static constexpr OpName kHeadReduce[] = {OpName::kOutputHeadWgrad};
  static constexpr OpName kKvUpRegather[] = {OpName::kKvUpProjDgrad};
  static constexpr OpName kKvUpReduce[] = {OpName::kKvUpProjWgrad};
  static constexpr OpName kQUpRegather[] = {OpName::kQUpProjDgrad};
  static constexpr OpName kQUpReduce[] = {OpName::kQUpProjWgrad};
  switch (collective) {
    case OpName::kAttentionInputRegather:
      return kAttentionRegather;
    case OpName::kAttentionInputGradReduce:
      return kAttentionReduce;
    case OpName::kMlpInputRegather:
      return kMlpRegather;
    case OpName::kMlpInputGradReduce:
      return kMlpReduce;
    case OpName::kHeadInputRegather:
      return kHeadRegather;
    case OpName::kHeadInputGradReduce:
      return kHeadReduce;
    case OpName::kKvUpInputRegather:
      return kKvUpRegather;
    case OpName::kKvUpInputGradReduce:
      return kKvUpReduce;
    case OpName::kQUpInputRegather:
      return kQUpRegather;
    case OpName::kQUpInputGradReduce:
      return kQUpReduce;
    default:
      return {};
  }
}

Result<LayerOps> BuildTransformerLayerOps(const ModelSpec& model, const Strategy& strategy,
                                          const LayerOpsOptions& options) {
  LOOM_RETURN_IF_ERROR(CheckLayerSupported(model, strategy, options));
  LOOM_ASSIGN_OR_RETURN(LayerDims d, ComputeLayerDims(model, strategy, options));
  const bool full = d.recompute == Recompute::kFull;
  if (full) d.recompute = Recompute::kNone;  // build what the forward would keep, then drop it

  LayerOps attention = d.mla ? LatentAttentionBlockOps(d) : AttentionBlockOps(d);
  LayerOps mlp = d.moe ? MoeMlpOps(d) : DenseMlpOps(d);
  LayerOps layer;
  layer.forward = std::move(attention.forward);
  Append(mlp.forward, &layer.forward);
  layer.backward_input = std::move(mlp.backward_input);
  Append(attention.backward_input, &layer.backward_input);
  layer.backward_weight = std::move(mlp.backward_weight);
  Append(attention.backward_weight, &layer.backward_weight);
  layer.recompute = std::move(attention.recompute);
  if (d.gemm_dtype == Dtype::kFp8)
    AppendFp8Casts(d.modules.fp8_weight_cast_every_microbatch, &layer);
  if (full) ApplyFullRecompute(&layer);
  LOOM_ASSIGN_OR_RETURN(int64_t params, LayerParametersPerRank(model, strategy, options.layer));
  AppendGradAccumulation(strategy, params, &layer);
  return layer;
}

}  // namespace loom
