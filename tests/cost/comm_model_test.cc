#include "cost/comm_model.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

ClusterSpec DgxH100() {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.intra_node = {IntraNodeFabric::kNvSwitch, 450, 0.6};
  c.inter_node.nics_per_node = 8;
  c.inter_node.nic_bandwidth_Gbps = 400;
  c.inter_node.latency_us = 2.7;
  c.inter_node.oversubscription = 1;
  return c;
}

TEST(PlaceGroup, TensorParallelGroupFillsANode) {
  GroupPlacement tp = PlaceGroup(8, 1, 8);
  EXPECT_EQ(tp.ranks_per_node, 8);
  EXPECT_EQ(tp.Nodes(), 1);
}

TEST(PlaceGroup, DataParallelGroupAfterTp8HasOneRankPerNode) {
  GroupPlacement dp = PlaceGroup(16, 8, 8);
  EXPECT_EQ(dp.ranks_per_node, 1);
  EXPECT_EQ(dp.Nodes(), 16);
}

TEST(PlaceGroup, DataParallelGroupAfterTp2HasFourRanksPerNode) {
  GroupPlacement dp = PlaceGroup(32, 2, 8);
  EXPECT_EQ(dp.ranks_per_node, 4);
  EXPECT_EQ(dp.Nodes(), 8);
}

TEST(RingCommModel, IntraNodeAllReduceIsRingLatencyPlusBusBytes) {
  RingCommModel model(DgxH100());
  const int64_t bytes = int64_t{1} << 30;
  // 2(n-1) = 14 NVLink hops; 2(n-1)/n = 1.75 bus bytes per byte.
  double expected_s = 14 * 0.6e-6 + bytes * 1.75 / 450e9;
  EXPECT_NEAR(model.Collective(CollectiveKind::kAllReduce, bytes, PlaceGroup(8, 1, 8)).ToSeconds(),
              expected_s, 1e-9);
}

TEST(RingCommModel, InterNodeGroupGetsItsNicShare) {
  RingCommModel model(DgxH100());
  // 8 NICs x 400 Gb/s = 400 GB/s per node, 50 GB/s per GPU.
  EXPECT_DOUBLE_EQ(model.BusBandwidth(true), 50e9);
  const int64_t bytes = 256 << 20;
  GroupPlacement dp = PlaceGroup(4, 8, 8);  // 4 nodes, one rank each
  double expected_s = 3 * 2.7e-6 + bytes * 0.75 / 50e9;
  EXPECT_NEAR(model.Collective(CollectiveKind::kReduceScatter, bytes, dp).ToSeconds(), expected_s,
              1e-9);
}

TEST(RingCommModel, MixedGroupCountsIntraAndInterNodeSteps) {
  RingCommModel model(DgxH100());
  GroupPlacement g = PlaceGroup(16, 1, 8);  // 2 nodes of 8
  const int64_t bytes = 1 << 20;
  // all-gather: 15 steps, 1 of them between nodes.
  double expected_s = 14 * 0.6e-6 + 1 * 2.7e-6 + bytes * (15.0 / 16.0) / 50e9;
  EXPECT_NEAR(model.Collective(CollectiveKind::kAllGather, bytes, g).ToSeconds(), expected_s, 1e-9);
}

TEST(RingCommModel, SingleRankGroupIsFree) {
  RingCommModel model(DgxH100());
  EXPECT_EQ(model.Collective(CollectiveKind::kAllReduce, 1 << 30, PlaceGroup(1, 1, 8)).nanos(), 0);
}

TEST(RingCommModel, PointToPointIsLatencyPlusBytesOverTheLink) {
  RingCommModel model(DgxH100());
  EXPECT_NEAR(model.PointToPoint(50'000'000, true).ToSeconds(), 2.7e-6 + 1e-3, 1e-9);
  EXPECT_NEAR(model.PointToPoint(450'000'000, false).ToSeconds(), 0.6e-6 + 1e-3, 1e-9);
}

}  // namespace
}  // namespace loom
