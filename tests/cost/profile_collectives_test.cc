#include "cost/profile_collectives.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

CollectiveSample Sample(ProfiledCollective c, ProbeGroup g, int64_t ranks, int64_t size) {
  CollectiveSample s;
  s.collective = c;
  s.group = g;
  s.ranks = ranks;
  s.nodes = g == ProbeGroup::kIntraNode ? 1 : 2;
  s.size_bytes = size;
  s.count = size / 4;
  s.out_of_place = {100, 1, 2};
  s.in_place = {90, 1.1, 2.2};
  return s;
}

TEST(NcclTestsRunsOf, OneRunPerCollectiveAndGroupWithoutBroadcast) {
  Profile p;
  p.file = "probe.json";
  p.device.name = "NVIDIA H100 80GB HBM3";
  p.collectives = {Sample(ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 16, 1024),
                   Sample(ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 16, 2048),
                   Sample(ProfiledCollective::kBroadcast, ProbeGroup::kWorld, 16, 1024),
                   Sample(ProfiledCollective::kAllReduce, ProbeGroup::kIntraNode, 8, 1024),
                   Sample(ProfiledCollective::kSendRecv, ProbeGroup::kRails, 2, 1024)};
  const std::vector<NcclTestsRun> runs = NcclTestsRunsOf(p);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].file, "probe.json (world)");
  EXPECT_EQ(runs[0].test, NcclTest::kAllReduce);
  EXPECT_EQ(runs[0].ranks, 16);
  EXPECT_EQ(runs[0].nodes, 2);
  ASSERT_EQ(runs[0].rows.size(), 2u);
  EXPECT_EQ(runs[0].rows[1].size_bytes, 2048);
  EXPECT_EQ(runs[0].rows[1].in_place->time_us, 90);
  EXPECT_EQ(runs[0].rows[1].where, "probe.json: collectives[1]");
  EXPECT_EQ(runs[1].ranks, 8);
  EXPECT_EQ(runs[1].rows[0].where, "probe.json: collectives[3]");
  EXPECT_EQ(runs[2].test, NcclTest::kSendRecv);
  EXPECT_EQ(runs[2].gpu_name, "NVIDIA H100 80GB HBM3");
}

}  // namespace
}  // namespace loom
