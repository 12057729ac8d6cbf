#include "sim/stage_balance.h"

#include <algorithm>
#include <string>

#include "sim/pass_costs.h"
#include "sim/stage_models.h"
#include "spec/layer_balance.h"
#include "spec/stage_gpus.h"
#include "workload/chunk_blocks.h"

namespace loom {
namespace {

// |strategy| with its layers placed by a layout of near-equal stages (the first stages take the
// layers left over), for building its blocks: what a block costs does not depend on the layout.
Strategy WithSomeLayout(const Strategy& strategy, int64_t num_layers) {
  Strategy placed = strategy;
  placed.first_stage_layers = 0;
  placed.last_stage_layers = 0;
  std::vector<int64_t> stages(static_cast<size_t>(strategy.pp), num_layers / strategy.pp);
  for (int64_t s = 0; s < num_layers % strategy.pp; ++s) ++stages[static_cast<size_t>(s)];
  placed.layout = SplitStagesIntoChunks(stages, strategy.vpp, strategy.schedule);
  return placed;
}

// Seconds of |cost| on the compute stream: its time, less its hidden tp collectives
// (PassCost::tp_hidden).
double BusySeconds(const PassCost& cost) { return (cost.time - cost.tp_hidden).ToSeconds(); }

}  // namespace

Result<StageWork> MeasureStageWork(const ModelSpec& model, const ClusterSpec& cluster,
                                   const Strategy& strategy, const LayerOpsOptions& kernels) {
  const int64_t chunks = strategy.pp * strategy.vpp;
  if (model.num_layers < chunks) {
    return Status::InvalidArgument(
        "--pp " + std::to_string(strategy.pp) + " --vpp " + std::to_string(strategy.vpp) + ": " +
        std::to_string(chunks) + " model chunks, and the model has " +
        std::to_string(model.num_layers) +
        " layers (num_hidden_layers); balancing gives each chunk one at least: lower pp or vpp");
  }
  const Strategy placed = WithSomeLayout(strategy, model.num_layers);
  LOOM_ASSIGN_OR_RETURN(const ChunkBlocks blocks, BuildChunkBlocks(model, placed, kernels));
  const StageModels models(cluster, placed);
  const Placements placements = PlaceStrategy(placed, cluster);
  const size_t head = blocks.blocks.size() - 1;  // block 0 is the embedding (BuildChunkBlocks)
  std::vector<std::vector<PassCost>> per_set;
  for (int32_t set = 0; set < models.sets(); ++set) {
    per_set.push_back(
        CostBlocks(blocks, placed, models.compute(set), models.comm(set), placements, kernels));
  }
  StageWork work;
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    const std::vector<PassCost>& cost = per_set[static_cast<size_t>(models.SetOfStage(stage))];
    double layer_s = 0;
    int64_t layers = 0;
    for (const std::vector<BlockRun>& chunk : blocks.chunks) {
      for (const BlockRun& run : chunk) {
        if (run.block == 0 || static_cast<size_t>(run.block) == head) continue;
        layer_s += static_cast<double>(run.count) * BusySeconds(cost[run.block]);
        layers += run.count;
      }
    }
    double fixed_s = 0;
    if (stage == 0) fixed_s += BusySeconds(cost.front());
    if (stage + 1 == strategy.pp) fixed_s += BusySeconds(cost[head]);
    work.layer_s.push_back(layer_s / static_cast<double>(std::max<int64_t>(1, layers)));
    work.fixed_s.push_back(fixed_s);
  }
  return work;
}

Result<std::vector<int64_t>> BalancedPipelineLayout(const ModelSpec& model,
                                                    const ClusterSpec& cluster,
                                                    const Strategy& strategy,
                                                    const LayerOpsOptions& kernels) {
  LOOM_ASSIGN_OR_RETURN(const StageWork work, MeasureStageWork(model, cluster, strategy, kernels));
  const std::vector<int64_t> stages =
      BalancedStageLayers(work.layer_s, work.fixed_s, model.num_layers, strategy.vpp);
  return SplitStagesIntoChunks(stages, strategy.vpp, strategy.schedule);
}

bool PlannerBalancesLayers(const ClusterSpec& cluster, const Strategy& strategy) {
  if (!strategy.layout.empty() || strategy.first_stage_layers != 0 ||
      strategy.last_stage_layers != 0) {
    return false;
  }
  if (strategy.schedule == ScheduleKind::kZbV || strategy.schedule == ScheduleKind::kDualPipeV) {
    return false;
  }
  return strategy.pp > 1 && StagesSpanGroups(cluster, strategy);
}

}  // namespace loom
