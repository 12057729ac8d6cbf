#include "spec/stage_gpus.h"

#include <string>

#include "core/checked.h"
#include "core/formatted.h"

namespace loom {
namespace {

// "group 1 (A100-SXM4-80GB, 4 nodes)".
std::string GroupName(const ClusterSpec& cluster, int64_t group) {
  const NodeGroup& g = cluster.node_groups[static_cast<size_t>(group)];
  return StrCat("group ", group, " (", g.gpu.name, ", ", g.nodes, " nodes)");
}

}  // namespace

RankRange StageRanks(const Strategy& strategy, int64_t stage) {
  const int64_t per_stage = strategy.tp * strategy.cp * strategy.dp;
  return {stage * per_stage, per_stage};
}

int64_t NodeGroupOfStage(const ClusterSpec& cluster, const Strategy& strategy, int64_t stage) {
  return cluster.NodeGroupOfRank(StageRanks(strategy, stage).first);
}

const GpuSpec& GpuOfStage(const ClusterSpec& cluster, const Strategy& strategy, int64_t stage) {
  return cluster.GpuOfRank(StageRanks(strategy, stage).first);
}

bool StagesSpanGroups(const ClusterSpec& cluster, const Strategy& strategy) {
  if (cluster.node_groups.size() < 2) return false;
  const int64_t first = NodeGroupOfStage(cluster, strategy, 0);
  for (int64_t stage = 1; stage < strategy.pp; ++stage) {
    if (NodeGroupOfStage(cluster, strategy, stage) != first) return true;
  }
  return false;
}

std::optional<StrategyViolation> StageAcrossGroups(const ClusterSpec& cluster, const Strategy& s) {
  if (cluster.node_groups.size() < 2) return std::nullopt;
  if (s.tp < 1 || s.cp < 1 || s.dp < 1 || s.pp < 1) return std::nullopt;
  const std::optional<int64_t> world = (CheckedInt(s.tp) * s.cp * s.dp * s.pp).get();
  if (!world.has_value()) return std::nullopt;
  for (int64_t stage = 0; stage < s.pp; ++stage) {
    const RankRange ranks = StageRanks(s, stage);
    const int64_t last = ranks.first + ranks.count - 1;
    const int64_t from = cluster.NodeGroupOfRank(ranks.first);
    const int64_t to = cluster.NodeGroupOfRank(last);
    if (from == to) continue;
    int64_t boundary = 0;
    for (int64_t g = 0; g <= from; ++g) {
      boundary += cluster.node_groups[static_cast<size_t>(g)].nodes * cluster.gpus_per_node;
    }
    return StrategyViolation{
        "--pp",
        StrCat("--pp ", s.pp, " with --tp ", s.tp, " --cp ", s.cp, " --dp ", s.dp,
               ": pipeline stage ", stage, " holds GPU ranks ", ranks.first, "-", last,
               " (tp * cp * dp = ", ranks.count,
               " a stage, pp outermost as in Megatron-LM), "
               "across the boundary at rank ",
               boundary, " between node ", GroupName(cluster, from), " and ",
               GroupName(cluster, to), " of ", ClusterRef(cluster),
               "; a stage runs on one GPU type: use a pp whose stages of tp * cp * dp GPUs each "
               "divide ",
               boundary, ", or node groups whose GPU counts are multiples of a stage's")};
  }
  return std::nullopt;
}

}  // namespace loom
