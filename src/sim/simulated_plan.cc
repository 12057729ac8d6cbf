#include "sim/simulated_plan.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "workload/chunk_blocks.h"

namespace loom {

Result<PlanFile> MakePlanFile(const ModelSpec& model, const ClusterSpec& cluster,
                              const Strategy& strategy, const SimulationOptions& options,
                              nlohmann::ordered_json source) {
  LOOM_ASSIGN_OR_RETURN(PreparedStep prepared,
                        PrepareTrainingStep(model, cluster, strategy, options));
  LOOM_ASSIGN_OR_RETURN(SimulationResult result, SimulatePreparedStep(model, cluster, prepared));
  PlanFile plan;
  plan.source = std::move(source);
  plan.prediction.step_time_s = result.step_time_s;
  plan.prediction.bubble_fraction = result.bubble_fraction;
  plan.prediction.peak_memory_bytes = result.peak_memory_bytes;
  plan.step = std::move(result.step);
  // The plan's ops run the fused attention the simulation chose for the cluster's GPU.
  LayerOpsOptions kernels = options.Kernels();
  kernels.fused_family = options.AttentionPolicy().For(cluster.gpu).family;
  LOOM_ASSIGN_OR_RETURN(ChunkBlocks blocks, BuildChunkBlocks(model, strategy, kernels));
  plan.workload.predicted = PredictOpTimes(cluster, strategy, blocks);
  plan.workload.chunks = std::move(blocks);
  plan.workload.payloads = prepared.payloads;
  // As SimulatePreparedStep counts them.
  plan.baselines = ModelStateBaselines(plan.step, prepared);
  plan.gpus = {.tp = static_cast<int32_t>(strategy.tp),
               .cp = static_cast<int32_t>(strategy.cp),
               .dp = static_cast<int32_t>(strategy.dp),
               .ep = static_cast<int32_t>(strategy.ep),
               .etp = static_cast<int32_t>(strategy.ExpertTp())};
  return plan;
}

}  // namespace loom
