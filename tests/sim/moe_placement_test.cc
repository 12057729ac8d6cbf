// Where the expert groups sit (PlaceStrategy) and what the MoE ops cost (OpTime) as the router
// skews and the experts split over etp.

#include <gtest/gtest.h>

#include <string>

#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "sim/pass_costs.h"
#include "sim/sim_test_support.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

ClusterSpec DgxH100(int64_t nodes) {
  Result<ClusterSpec> c = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"), nodes);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.status().message());
  return c.ok() ? *c : ClusterSpec();
}

Strategy Mixtral64(int64_t tp, int64_t etp, double imbalance = 1.0) {
  Strategy s;
  s.tp = tp;
  s.sp = tp > 1;
  s.dp = 64 / tp;
  s.ep = 8;
  s.etp = etp;
  s.seq_len = 4096;
  s.moe_imbalance = imbalance;
  return s;
}

TEST(PlaceStrategy, ExpertGroupsFollowMegatronsExpertGrid) {
  const ClusterSpec cluster = DgxH100(8);
  // etp 1: the 8 ep ranks are neighbours, one node; etp 2 (= tp): ep ranks 2 apart span 2 nodes.
  const Placements whole = PlaceStrategy(Mixtral64(2, 1), cluster);
  EXPECT_EQ(whole.etp.ranks, 1);
  EXPECT_EQ(whole.ep.ranks, 8);
  EXPECT_EQ(whole.ep.Nodes(), 1);
  const Placements split = PlaceStrategy(Mixtral64(2, 0), cluster);
  EXPECT_EQ(split.etp.ranks, 2);
  EXPECT_EQ(split.etp.Nodes(), 1);
  EXPECT_EQ(split.ep.ranks, 8);
  EXPECT_EQ(split.ep.ranks_per_node, 4);
  EXPECT_EQ(split.ep.Nodes(), 2);
}

TEST(OpTime, EtpCollectivesRunOverTheEtpGroup) {
  const ClusterSpec cluster = DgxH100(8);
  const RingCommModel comm(cluster);
  const RooflineComputeModel compute(cluster.gpu);
  Placements p = PlaceStrategy(Mixtral64(1, 0), cluster);
  p.etp = GroupPlacement{4, 4};
  p.tp = GroupPlacement{1, 1};
  const int64_t bytes = int64_t{1} << 28;
  const Op gather = MakeCollective(OpName::kMoeDispatchAllGather,
                                   {CollectiveKind::kAllGather, CommGroup::kEtp, bytes});
  EXPECT_EQ(OpTime(gather, compute, comm, p),
            comm.Collective(CollectiveKind::kAllGather, bytes, p.etp));
  EXPECT_GT(OpTime(gather, compute, comm, p), SimTime());
}

// Time of the MoE layer's forward on the busiest rank, op by op.
SimTime ForwardTime(const Strategy& s) {
  Result<ModelSpec> m = LoadModelSpec(Shipped("models/mixtral-8x7b.json"));
  EXPECT_TRUE(m.ok());
  Result<LayerOps> ops = BuildTransformerLayerOps(*m, s);
  EXPECT_TRUE(ops.ok()) << (ops.ok() ? "" : ops.status().message());
  const ClusterSpec cluster = DgxH100(8);
  const RingCommModel comm(cluster);
  const RooflineComputeModel compute(cluster.gpu);
  const Placements p = PlaceStrategy(s, cluster);
  SimTime t;
  for (const Op& op : ops->forward) t += OpTime(op, compute, comm, p);
  return t;
}

TEST(OpTime, MoreImbalanceTakesLonger) {
  const SimTime balanced = ForwardTime(Mixtral64(1, 0, 1.0));
  const SimTime skewed = ForwardTime(Mixtral64(1, 0, 1.2));
  const SimTime worse = ForwardTime(Mixtral64(1, 0, 2.0));
  EXPECT_LT(balanced, skewed);
  EXPECT_LT(skewed, worse);
}

}  // namespace
}  // namespace loom
