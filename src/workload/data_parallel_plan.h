#ifndef LOOM_WORKLOAD_DATA_PARALLEL_PLAN_H_
#define LOOM_WORKLOAD_DATA_PARALLEL_PLAN_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "op/op.h"
#include "schedule/schedule.h"
#include "spec/model.h"
#include "spec/state_bytes.h"
#include "spec/strategy.h"
#include "workload/model_states.h"

namespace loom {

// Megatron-core's default gradient bucket: max(40M, 1M * dp) parameters
// (megatron/core/distributed/distributed_data_parallel.py, bucket_size), for |dp_ranks| ranks
// reducing each gradient.
int64_t BucketParams(int64_t dp_ranks);

// Parameters by the group that reduces (or gathers) them: dense ones over the dp * cp ranks,
// routed experts over the expert-data-parallel ranks (Strategy::ExpertDp).
struct ParamGroups {
  int64_t dense = 0;
  int64_t expert = 0;

  int64_t Total() const { return dense + expert; }
};

// The parameters a rank updates under ZeRO >= 1: its shard of each group of |p|, rounded up.
int64_t ShardParams(const RankParameters& p, const Strategy& strategy);

// What data parallelism moves in one step, in parameters and bytes, before any of it is timed:
// gradient buckets, the optimizer step, the all-gather of updated weights, ZeRO-3's per-layer
// gathers and ZeRO-Offload's shards (Rajbhandari et al. 2020, Section 5: stage 1 reduce-scatters
// the gradients once per step and all-gathers the updated weights; stage 2 reduce-scatters after
// every micro-batch, keeping only its shard; stage 3 also gathers every layer's weights before its
// forward and backward, and reduce-scatters layer by layer). The simulator turns it into time
// (sim/simulator.cc); plan files carry its bytes (StepPayloads).
struct DataParallelPlan {
  StateBytesPerParam bytes;  // BytesPerParameter(strategy)
  // Megatron's distributed optimizer (ZeRO >= 1) reduce-scatters gradients and all-gathers the
  // updated weights; plain data parallelism all-reduces gradients.
  CollectiveKind grad_reduce = CollectiveKind::kAllReduce;
  // ZeRO-2 and -3 keep only their shard of the gradients, so every micro-batch's backward
  // reduce-scatters them, not only the chunk's last one.
  bool reduce_every_micro_batch = false;
  // Per stage: the rank's model states (ModelStatesPerRank).
  std::vector<RankModelStates> stage_states;
  // Per virtual stage: the chunk's gradients in |buckets| equal buckets (ZeRO-3: one per layer),
  // each of |bucket_params| of each group.
  std::vector<int32_t> buckets;
  std::vector<ParamGroups> bucket_params;
  // Per stage: the parameters this rank updates (its ZeRO shard under ZeRO >= 1, else all of
  // them; ZeRO-Offload, which needs ZeRO >= 1, steps the same shard on the host), the HBM traffic
  // of the optimizer step over them (OptimizerStepTraffic), and the all-gather of the updated
  // weights after it (ZeRO 1 and 2; zero otherwise).
  std::vector<int64_t> updated_params;
  std::vector<MemoryShape> optimizer;
  std::vector<ParamGroups> param_gather;
  // ZeRO-3 (refused with pp > 1, so one stage and one chunk): each forward and backward gathers
  // the weights of its |layer_gathers| layers one at a time, |layer_params| each; with parameter
  // offload each layer's shard, |layer_shard_params|, comes from the host first. 0: no gathers.
  int32_t layer_gathers = 0;
  ParamGroups layer_params;
  int64_t layer_shard_params = 0;
};

// |strategy|'s DataParallelPlan for |model|, with |layers| transformer layers per virtual stage
// (LayersPerVirtualStage) placed on stages by |schedule|. A chunk's share of its stage's
// parameters is equal when the stage's chunks hold equal layers; else in proportion to its layers,
// the embedding and the output layer counting as one each (unequal chunks, as Llama 3's first
// chunk with the embedding alone). Errors: those of ModelStatesPerRank.
// REQUIRES: ValidateStrategy(strategy, model, ...) holds; layers.size() ==
// schedule.VirtualStages(); schedule.stages == strategy.pp.
Result<DataParallelPlan> PlanDataParallel(const ModelSpec& model, const Strategy& strategy,
                                          const std::vector<int64_t>& layers,
                                          const PipelineSchedule& schedule);

}  // namespace loom

#endif  // LOOM_WORKLOAD_DATA_PARALLEL_PLAN_H_
