#include "workload/data_parallel_plan.h"

#include <algorithm>
#include <utility>

#include "core/checked.h"

namespace loom {

int64_t BucketParams(int64_t dp_ranks) {
  return std::max<int64_t>(40'000'000, 1'000'000 * dp_ranks);
}

int64_t ShardParams(const RankParameters& p, const Strategy& strategy) {
  return CeilDiv(p.dense, strategy.dp * strategy.cp) + CeilDiv(p.expert, strategy.ExpertDp());
}

namespace {

// The chunks of one stage: each one's share of the stage's parameters, then its gradient buckets.
void PlanBuckets(const Strategy& strategy, const RankParameters& p,
                 const std::vector<int64_t>& layers, const PipelineSchedule& schedule,
                 int32_t stage, DataParallelPlan& plan) {
  const int32_t v_count = schedule.VirtualStages();
  const int32_t chunks = schedule.chunks;
  int64_t stage_weight = 0;
  bool equal = true;
  for (int32_t chunk = 0; chunk < chunks; ++chunk) {
    const int32_t v = schedule.VirtualStage(stage, chunk);
    stage_weight += layers[v] + (v == 0) + (v + 1 == v_count);
    equal = equal && layers[v] == layers[schedule.VirtualStage(stage, 0)];
  }
  for (int32_t chunk = 0; chunk < chunks; ++chunk) {
    const int32_t v = schedule.VirtualStage(stage, chunk);
    const int64_t weight = layers[v] + (v == 0) + (v + 1 == v_count);
    const ParamGroups chunk_params =
        equal || stage_weight == 0
            ? ParamGroups{CeilDiv(p.dense, chunks), CeilDiv(p.expert, chunks)}
            : ParamGroups{CeilDiv(p.dense * weight, stage_weight),
                          CeilDiv(p.expert * weight, stage_weight)};
    const int64_t buckets =
        strategy.zero_stage == 3
            ? std::max<int64_t>(1, layers[v])
            : CeilDiv(chunk_params.Total(), BucketParams(strategy.dp * strategy.cp));
    plan.buckets[v] = static_cast<int32_t>(buckets);
    plan.bucket_params[v] = {CeilDiv(chunk_params.dense, buckets),
                             CeilDiv(chunk_params.expert, buckets)};
  }
}

}  // namespace

Result<DataParallelPlan> PlanDataParallel(const ModelSpec& model, const Strategy& strategy,
                                          const std::vector<int64_t>& layers,
                                          const PipelineSchedule& schedule) {
  DataParallelPlan plan;
  const int64_t zero = strategy.zero_stage;
  plan.bytes = BytesPerParameter(strategy);
  plan.grad_reduce = zero >= 1 ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  plan.reduce_every_micro_batch = zero >= 2;
  const size_t v_count = static_cast<size_t>(schedule.VirtualStages());
  plan.buckets.assign(v_count, 1);
  plan.bucket_params.assign(v_count, ParamGroups{});
  for (int32_t stage = 0; stage < schedule.stages; ++stage) {
    LOOM_ASSIGN_OR_RETURN(RankModelStates states, ModelStatesPerRank(model, strategy, stage));
    const RankParameters& p = states.parameters;
    PlanBuckets(strategy, p, layers, schedule, stage, plan);
    // Megatron's optimizer passes over the parameters this rank updates (its ZeRO shard).
    plan.updated_params.push_back(zero >= 1 ? ShardParams(p, strategy) : p.Total());
    plan.optimizer.push_back(OptimizerStepTraffic(plan.updated_params.back(), strategy.dtype,
                                                  strategy.optimizer,
                                                  strategy.grad_reduce_in_bf16));
    const bool gathers = zero == 1 || zero == 2;
    plan.param_gather.push_back(gathers ? ParamGroups{p.dense, p.expert} : ParamGroups{});
    plan.stage_states.push_back(std::move(states));
  }
  if (zero == 3) {
    const RankParameters& p = plan.stage_states[0].parameters;
    const int64_t layer_count = std::max<int64_t>(1, layers[0]);
    plan.layer_gathers = static_cast<int32_t>(layer_count);
    plan.layer_params = {CeilDiv(p.dense, layer_count), CeilDiv(p.expert, layer_count)};
    if (strategy.offload == Offload::kOptimizerAndParams) {
      plan.layer_shard_params = CeilDiv(plan.updated_params[0], layer_count);
    }
  }
  return plan;
}

}  // namespace loom
