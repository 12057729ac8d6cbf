#include "sim/stage_models.h"

#include <algorithm>
#include <utility>

#include "spec/stage_gpus.h"

namespace loom {
namespace {

// |cluster| as the collectives inside node group |group| see it: the intra-node bandwidth no
// faster than the group's GPU can drive its NVLink (the loader lets the cluster's be the fastest
// group's, ClusterSpec::node_groups).
ClusterSpec GroupCluster(const ClusterSpec& cluster, int64_t group) {
  ClusterSpec view = cluster;
  view.gpu = cluster.node_groups[static_cast<size_t>(group)].gpu;
  if (view.intra_node.fabric == IntraNodeFabric::kNvSwitch) {
    view.intra_node.bandwidth_GBps =
        std::min(view.intra_node.bandwidth_GBps, view.gpu.nvlink_bandwidth_GBps);
  }
  return view;
}

}  // namespace

StageModels::StageModels(const ClusterSpec& cluster, const Strategy& strategy) {
  if (cluster.node_groups.empty()) {
    sets_.push_back({RooflineComputeModel(cluster.gpu), NcclCommModel(cluster)});
    set_of_stage_.assign(static_cast<size_t>(strategy.pp), 0);
    return;
  }
  std::vector<int64_t> groups;  // the node group of each set
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    const int64_t group = NodeGroupOfStage(cluster, strategy, stage);
    auto it = std::find(groups.begin(), groups.end(), group);
    if (it == groups.end()) {
      const ClusterSpec view = GroupCluster(cluster, group);
      sets_.push_back({RooflineComputeModel(view.gpu), NcclCommModel(view)});
      groups.push_back(group);
      it = groups.end() - 1;
    }
    set_of_stage_.push_back(static_cast<int32_t>(it - groups.begin()));
  }
}

Result<std::vector<ChunkCost>> CostStageChunks(const ModelSpec& model, const Strategy& strategy,
                                               const StageModels& models,
                                               const Placements& placements,
                                               const LayerOpsOptions& kernels,
                                               const HostCosts* host) {
  if (models.sets() == 1) {
    return CostChunks(model, strategy, models.compute(0), models.comm(0), placements, kernels,
                      host);
  }
  std::vector<std::vector<ChunkCost>> per_set;
  for (int32_t set = 0; set < models.sets(); ++set) {
    LOOM_ASSIGN_OR_RETURN(std::vector<ChunkCost> costs,
                          CostChunks(model, strategy, models.compute(set), models.comm(set),
                                     placements, kernels, host));
    per_set.push_back(std::move(costs));
  }
  std::vector<ChunkCost> costs;
  for (size_t v = 0; v < per_set.front().size(); ++v) {
    const int64_t stage = static_cast<int64_t>(v) % strategy.pp;
    costs.push_back(per_set[static_cast<size_t>(models.SetOfStage(stage))][v]);
  }
  return costs;
}

}  // namespace loom
