#include "workload/grad_accumulation.h"

#include <algorithm>
#include <cstdint>
#include <variant>
#include <vector>

#include "core/checked.h"
#include "workload/model_states.h"

namespace loom {
namespace {

// Weights whose gradient a GEMM of |w| writes. Megatron's TopKRouter computes its logits with
// router_gating_linear, a plain autograd function whose weight gradient goes through the DDP
// hook's main_grad.add_, not the fused linear (megatron/core/transformer/moe/router.py, TopKRouter.
// gating; NVIDIA/Megatron-LM d98e8a64).
int64_t FusedWeights(const std::vector<Op>& w) {
  CheckedInt weights = 0;
  for (const Op& op : w) {
    const GemmShape* gemm = std::get_if<GemmShape>(&op.shape);
    if (gemm == nullptr || op.name == OpName::kRouterWgrad) continue;
    weights += CheckedInt(gemm->m) * gemm->n * gemm->batch;
  }
  return weights.get().value_or(INT64_MAX);
}

void MarkFusedGemms(std::vector<Op>* w) {
  for (Op& op : *w) {
    GemmShape* gemm = std::get_if<GemmShape>(&op.shape);
    if (gemm != nullptr && op.name != OpName::kRouterWgrad) gemm->accumulate_fp32 = true;
  }
}

}  // namespace

int64_t GradAccumulatorBytes(const Strategy& strategy) {
  const StateBytesPerParam bytes = BytesPerParameter(strategy);
  return strategy.grad_accumulation == GradAccumulation::kAutograd ? bytes.weight : bytes.gradient;
}

void AppendGradAccumulation(const Strategy& strategy, int64_t params, LayerOps* ops) {
  const int64_t accumulator = GradAccumulatorBytes(strategy);
  const int64_t gradient =
      BytesPerParameter(strategy).weight;  // autograd writes it in the param dtype
  int64_t adds = params;
  switch (strategy.grad_accumulation) {
    case GradAccumulation::kFused:
      if (accumulator == 4) MarkFusedGemms(&ops->backward_weight);
      adds = params - std::min(params, FusedWeights(ops->backward_weight));
      break;
    case GradAccumulation::kAdd:
      break;
    case GradAccumulation::kAutograd:
      // (m - 1) / m of the adds, as params - params / m.
      adds = params - params / std::max<int64_t>(1, strategy.NumMicroBatches());
      break;
  }
  if (adds <= 0) return;
  const int64_t read = (CheckedInt(adds) * (accumulator + gradient)).get().value_or(INT64_MAX);
  const int64_t written = (CheckedInt(adds) * accumulator).get().value_or(INT64_MAX);
  ops->backward_weight.push_back(MakeMemory(OpName::kGradAccumulate, {read, written}));
}

}  // namespace loom
