#include "probe/nccl_table.h"

#include <gtest/gtest.h>

#include "cost/nccl_tests_parser.h"
#include "probe/statistics.h"

namespace loom {
namespace {

CollectiveSample Row(ProfiledCollective c, int64_t size, double oop_us, double ip_us) {
  CollectiveSample s;
  s.collective = c;
  s.group = ProbeGroup::kWorld;
  s.ranks = 8;
  s.nodes = 2;
  s.size_bytes = size;
  s.count = CollectiveCount(size);
  s.redop = CollectiveRedop(c);
  s.out_of_place = CollectiveTimingOf(c, size, 8, oop_us);
  s.in_place = CollectiveTimingOf(c, size, 8, ip_us);
  return s;
}

const std::vector<std::string> kHosts = {"n0", "n0", "n0", "n0", "n1", "n1", "n1", "n1"};

TEST(NcclTestsTable, ParserReadsBackEveryNumberRanksAndNodes) {
  const std::vector<CollectiveSample> rows = {
      Row(ProfiledCollective::kAllReduce, 1048576, 42.1, 41.97),
      Row(ProfiledCollective::kAllReduce, 8589934592, 31420, 31390)};
  const std::string text = NcclTestsTable(rows, kHosts, "NVIDIA H100 80GB HBM3");
  Result<NcclTestsRun> run = ParseNcclTestsText(text, "probe.txt");
  ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << text;
  EXPECT_EQ(run->test, NcclTest::kAllReduce);
  EXPECT_EQ(run->ranks, 8);
  EXPECT_EQ(run->nodes, 2);
  EXPECT_EQ(run->gpu_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(run->rows.size(), 2u);
  EXPECT_EQ(run->rows[1].size_bytes, 8589934592);
  EXPECT_EQ(run->rows[1].count, 2147483648);
  EXPECT_EQ(run->rows[1].redop, "sum");
  EXPECT_DOUBLE_EQ(run->rows[1].in_place->time_us, 31390);
  EXPECT_NEAR(run->rows[1].in_place->busbw_GBps, 478.89, 0.005);
  EXPECT_NEAR(run->rows[0].out_of_place->algbw_GBps, 24.91, 0.005);
  ASSERT_TRUE(run->avg_busbw_GBps.has_value());
  EXPECT_NEAR(*run->avg_busbw_GBps,
              (rows[0].in_place.busbw_GBps + rows[0].out_of_place.busbw_GBps +
               rows[1].in_place.busbw_GBps + rows[1].out_of_place.busbw_GBps) /
                  4,
              0.01);
}

TEST(NcclTestsTable, NamesTheBinaryOfEachCollective) {
  const std::string text =
      NcclTestsTable({Row(ProfiledCollective::kAllToAll, 1024, 20, 20)}, kHosts, "GPU");
  EXPECT_NE(text.find("# Collective test starting: alltoall_perf"), std::string::npos);
  Result<NcclTestsRun> run = ParseNcclTestsText(text, "probe.txt");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kAllToAll);
  EXPECT_EQ(NcclTestsBinary(ProfiledCollective::kBroadcast), "broadcast_perf");
  EXPECT_EQ(NcclTestsTable({}, kHosts, "GPU"), "");
}

}  // namespace
}  // namespace loom
