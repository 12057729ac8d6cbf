#include "probe/statistics.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(Summarize, InterpolatesPercentilesBetweenClosestRanks) {
  // Sorted: 1 2 3 4 5 6 7 8 9 10 11; positions 1, 5 and 9 of 0..10.
  Result<TimeSummary> s = Summarize({11, 3, 7, 1, 9, 5, 2, 10, 4, 8, 6});
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->median_us, 6);
  EXPECT_DOUBLE_EQ(s->p10_us, 2);
  EXPECT_DOUBLE_EQ(s->p90_us, 10);
  EXPECT_EQ(s->repeats, 11);
}

TEST(Summarize, EvenCountMedianIsTheMeanOfTheMiddleTwo) {
  Result<TimeSummary> s = Summarize({4, 1, 3, 2});
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->median_us, 2.5);
  EXPECT_DOUBLE_EQ(s->p10_us, 1.3);  // position 0.3
  EXPECT_DOUBLE_EQ(s->p90_us, 3.7);  // position 2.7
}

TEST(Summarize, OneOutlierMovesNeitherMedianNorP90) {
  std::vector<double> times(20, 100.0);
  times[7] = 5000;  // one repeat preempted
  Result<TimeSummary> s = Summarize(times);
  ASSERT_TRUE(s.ok());
  EXPECT_DOUBLE_EQ(s->median_us, 100);
  EXPECT_DOUBLE_EQ(s->p90_us, 100);
}

TEST(Summarize, RejectsNoTimesAndBrokenTimers) {
  EXPECT_FALSE(Summarize({}).ok());
  Result<TimeSummary> zero = Summarize({1, 0, 2});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("must be finite and > 0"), std::string::npos);
}

TEST(CollectiveBusFactor, FollowsNcclTestsPerformanceDoc) {
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kAllToAll, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kBroadcast, 8), 1);
  EXPECT_DOUBLE_EQ(CollectiveBusFactor(ProfiledCollective::kSendRecv, 2), 1);
}

TEST(CollectiveTimingOf, AlgbwIsSizeOverTimeInGBps) {
  // The 8 GiB row of nccl-tests' all_reduce_perf on 8 H100s
  // (tests/cost/data/all_reduce_perf_h100.txt): 31390 us -> algbw 273.65, busbw 478.89.
  CollectiveTiming t = CollectiveTimingOf(ProfiledCollective::kAllReduce, 8589934592, 8, 31390);
  EXPECT_NEAR(t.algbw_GBps, 273.65, 0.01);
  EXPECT_NEAR(t.busbw_GBps, 478.89, 0.01);
  EXPECT_EQ(CollectiveCount(8589934592), 2147483648);
  EXPECT_STREQ(CollectiveRedop(ProfiledCollective::kReduceScatter), "sum");
  EXPECT_STREQ(CollectiveRedop(ProfiledCollective::kAllGather), "none");
}

}  // namespace
}  // namespace loom
