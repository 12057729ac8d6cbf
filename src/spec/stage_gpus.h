#ifndef LOOM_SPEC_STAGE_GPUS_H_
#define LOOM_SPEC_STAGE_GPUS_H_

// Which GPUs a strategy's pipeline stages run on, for clusters whose node groups hold different
// GPUs (ClusterSpec::node_groups). On a cluster of one GPU type every stage runs on its |gpu|.

#include <cstdint>
#include <optional>

#include "spec/cluster.h"
#include "spec/strategy.h"

namespace loom {

// The GPU ranks of one pipeline stage: [first, first + count).
struct RankRange {
  int64_t first = 0;
  int64_t count = 0;
};

// The ranks of pipeline stage |stage|. Megatron-LM orders ranks tp fastest, then cp, dp and pp
// outermost (megatron/core/parallel_state.py, RankGenerator's order "tp-cp-ep-dp-pp"; PlaceStrategy
// places the groups the same way), so a stage's tp * cp * dp ranks are consecutive: stage s holds
// [s * n, (s + 1) * n) for n = tp * cp * dp. The node groups hold consecutive ranks too, so a stage
// lies in one group when the group boundaries are multiples of n.
// REQUIRES: the degrees are positive and their product fits in 64 bits, 0 <= stage < pp.
RankRange StageRanks(const Strategy& strategy, int64_t stage);

// The node group (an index into cluster.node_groups, 0 without groups) and the GPU of stage
// |stage|: those of its first rank. REQUIRES: as StageRanks, and StageAcrossGroups is nullopt.
int64_t NodeGroupOfStage(const ClusterSpec& cluster, const Strategy& strategy, int64_t stage);
const GpuSpec& GpuOfStage(const ClusterSpec& cluster, const Strategy& strategy, int64_t stage);

// Whether the stages of |strategy| run in more than one node group (so on GPUs that may differ).
// REQUIRES: as StageRanks for every stage.
bool StagesSpanGroups(const ClusterSpec& cluster, const Strategy& strategy);

// The rule that each pipeline stage runs in one node group: a stage's tensor- and data-parallel
// collectives and its layers' share would otherwise run at the pace of its slowest GPU, which loom
// does not model. The violation (flag "--pp") names the first stage across a boundary, the two
// groups and the fix; nullopt when every stage lies in one group, always on a cluster of one GPU
// type, and when the degrees are out of range (other rules report those).
std::optional<StrategyViolation> StageAcrossGroups(const ClusterSpec& cluster,
                                                   const Strategy& strategy);

}  // namespace loom

#endif  // LOOM_SPEC_STAGE_GPUS_H_
