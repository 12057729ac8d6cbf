#include "sim/simulated_plan.h"

#include <utility>

#include "workload/chunk_blocks.h"

namespace loom {

Result<PlanFile> MakePlanFile(const ModelSpec& model, const ClusterSpec& cluster,
                              const Strategy& strategy, const SimulationOptions& options,
                              nlohmann::ordered_json source) {
  SimulationOptions full = options;
  full.full = true;
  LOOM_ASSIGN_OR_RETURN(PreparedStep prepared, PrepareTrainingStep(model, cluster, strategy, full));
  LOOM_ASSIGN_OR_RETURN(SimulationResult result, SimulatePreparedStep(model, cluster, prepared));
  PlanFile plan;
  plan.source = std::move(source);
  plan.prediction.step_time_s = result.step_time_s;
  plan.prediction.bubble_fraction = result.bubble_fraction;
  plan.prediction.peak_memory_bytes = result.peak_memory_bytes;
  plan.step = std::move(result.step);
  LOOM_ASSIGN_OR_RETURN(ChunkBlocks blocks, BuildChunkBlocks(model, strategy, options.kernels));
  plan.workload.predicted = PredictOpTimes(cluster, strategy, blocks);
  plan.workload.chunks = std::move(blocks);
  plan.workload.payloads = prepared.payloads;
  // As SimulatePreparedStep counts them.
  plan.baselines = ModelStateBaselines(plan.step, prepared);
  return plan;
}

}  // namespace loom
