#ifndef LOOM_SIM_STAGE_BALANCE_H_
#define LOOM_SIM_STAGE_BALANCE_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// What each pipeline stage of a strategy does per micro-batch on its own GPU (StageModels), in
// seconds, as BalancedStageLayers (spec/layer_balance.h) takes it: |layer_s|, the forward and
// backward of one transformer layer (the mean over the model's layers, recomputation included,
// the tensor-parallel communication that --tp-comm-overlap hides left out); |fixed_s|, the
// embedding on the first stage and the output layer with the loss on the last, zero elsewhere.
struct StageWork {
  std::vector<double> layer_s;
  std::vector<double> fixed_s;
};

// The StageWork of |strategy| on |cluster|, from the cost models: every layer kind is costed on
// each stage's GPU; where the layers go does not change what one costs, so any valid placement of
// them serves. Errors: InvalidArgument when the model has fewer layers than pp * vpp (a chunk
// without one), and those of the workload.
// REQUIRES: StrategyViolations of |strategy| with its layers placed are empty but for the
// placement itself.
Result<StageWork> MeasureStageWork(const ModelSpec& model, const ClusterSpec& cluster,
                                   const Strategy& strategy, const LayerOpsOptions& kernels = {});

// The pipeline layout (layers per virtual stage, LayersPerVirtualStage's order) that evens out
// |strategy|'s stages on their own GPUs: BalancedStageLayers of MeasureStageWork, at least vpp
// layers a stage (one a chunk), each stage's layers over its chunks as SplitStagesIntoChunks
// splits them. On stages of one GPU it is the even split, give or take the embedding's and the
// loss's work. Megatron-core runs it as --pipeline-model-parallel-layout. Errors: those of
// MeasureStageWork.
Result<std::vector<int64_t>> BalancedPipelineLayout(const ModelSpec& model,
                                                    const ClusterSpec& cluster,
                                                    const Strategy& strategy,
                                                    const LayerOpsOptions& kernels = {});

// Whether `loom plan` balances |strategy|'s layers with BalancedPipelineLayout: its stages run in
// more than one node group (spec/stage_gpus.h), it places no layers itself (no layout, no first
// or last stage counts), and its schedule takes a layout (not ZB-V or DualPipeV, whose V of two
// chunks a stage Megatron-core's layout does not describe).
bool PlannerBalancesLayers(const ClusterSpec& cluster, const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_SIM_STAGE_BALANCE_H_
