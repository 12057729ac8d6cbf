#include "plan/distinct.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

Strategy Base() {
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 16;
  s.micro_batch = 1;
  s.global_batch = 512;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return s;
}

RankedPlan PlanOf(const Strategy& s, double step_s, int64_t index) {
  RankedPlan p;
  p.index = index;
  p.strategy = s;
  p.step_time_s = step_s;
  p.score = step_s;
  return p;
}

TEST(Distinct, SettingsJoinTheKeysTheSearchVariesTogether) {
  Strategy s = Base();
  s.recompute = Recompute::kFull;
  s.recompute_layers = 2;
  std::string recompute, overlap;
  for (const Setting& setting : SettingsOf(s)) {
    if (setting.name == "recompute") recompute = setting.value;
    if (setting.name == "overlap") overlap = setting.value;
  }
  EXPECT_EQ(recompute, "recompute=full,recompute_layers=2");
  EXPECT_EQ(overlap, "overlap_grad_reduce=false,overlap_param_gather=false,tp_comm_overlap=false");
}

TEST(Distinct, OnlyDifferingSettingNamesOneSettingOrNone) {
  const Strategy a = Base();
  Strategy b = a;
  b.offload = Offload::kOptimizer;
  EXPECT_EQ(OnlyDifferingSetting(a, b), "offload");
  b.overlap_grad_reduce = b.overlap_param_gather = true;  // a second setting
  EXPECT_EQ(OnlyDifferingSetting(a, b), "");
  Strategy c = a;
  c.overlap_grad_reduce = c.overlap_param_gather = true;  // one setting, two keys
  EXPECT_EQ(OnlyDifferingSetting(a, c), "overlap");
  EXPECT_EQ(OnlyDifferingSetting(a, a), "");
  Strategy d = a;
  d.tp = 4;
  d.dp = 32;  // a layout: two settings
  EXPECT_EQ(OnlyDifferingSetting(a, d), "");
}

TEST(Distinct, OffloadTwinsWithinOnePercentAreOneRow) {
  const Strategy a = Base();
  Strategy b = a;
  b.offload = Offload::kOptimizer;
  const std::vector<RankedPlan> rows =
      GroupDistinct({PlanOf(a, 1.000, 0), PlanOf(b, 1.005, 1)}, 10);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].index, 0);
  ASSERT_EQ(rows[0].variants.size(), 1u);
  EXPECT_EQ(rows[0].variants[0].index, 1);
  EXPECT_EQ(rows[0].variant_setting, "offload");
}

TEST(Distinct, TwinsOnePercentApartOrMoreStayApart) {
  const Strategy a = Base();
  Strategy b = a;
  b.offload = Offload::kOptimizer;
  EXPECT_EQ(GroupDistinct({PlanOf(a, 1.000, 0), PlanOf(b, 1.010, 1)}, 10).size(), 2u);
  EXPECT_EQ(GroupDistinct({PlanOf(a, 1.000, 0), PlanOf(b, 1.0099, 1)}, 10).size(), 1u);
}

TEST(Distinct, PlansThatDifferInTwoSettingsStayApart) {
  const Strategy a = Base();
  Strategy b = a;
  b.offload = Offload::kOptimizer;
  b.micro_batch = 2;
  EXPECT_EQ(GroupDistinct({PlanOf(a, 1.000, 0), PlanOf(b, 1.000, 1)}, 10).size(), 2u);
}

// A row's members differ pairwise in its one setting and by under 1 % from each other, not only
// from the row's best: a third plan 0.6 % past a variant that is 0.6 % past the best starts a row.
TEST(Distinct, EveryMemberOfARowIsWithinOnePercentOfEveryOther) {
  Strategy a = Base(), b = a, c = a, d = a;
  b.zero_stage = 0;
  c.zero_stage = 2;
  d.offload = Offload::kOptimizer;  // also within 1 % of a, but in another setting than the row's
  const std::vector<RankedPlan> rows = GroupDistinct(
      {PlanOf(a, 1.000, 0), PlanOf(b, 1.006, 1), PlanOf(d, 1.007, 3), PlanOf(c, 1.012, 2)}, 10);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].variant_setting, "zero_stage");
  ASSERT_EQ(rows[0].variants.size(), 1u);
  EXPECT_EQ(rows[0].variants[0].index, 1);
  EXPECT_EQ(rows[1].index, 3);
  EXPECT_EQ(rows[2].index, 2);
}

TEST(Distinct, TheScoreMustStayWithinOnePercentToo) {
  const Strategy a = Base();
  Strategy b = a;
  b.offload = Offload::kOptimizer;
  RankedPlan p = PlanOf(a, 1.0, 0), q = PlanOf(b, 1.0, 1);
  p.score = 0.50;  // memory headroom: offload frees memory, which this objective ranks by
  q.score = 0.40;
  EXPECT_EQ(GroupDistinct({q, p}, 10).size(), 2u);
}

TEST(Distinct, AtMostMaxRowsAndTheirVariants) {
  Strategy a = Base(), a2 = a, b = a, b2 = a, c = a;
  a2.offload = Offload::kOptimizer;
  b.micro_batch = 2;
  b2 = b;
  b2.offload = Offload::kOptimizer;
  c.micro_batch = 4;
  const std::vector<RankedPlan> rows =
      GroupDistinct({PlanOf(a, 1.0, 0), PlanOf(a2, 1.001, 3), PlanOf(b, 1.1, 1),
                     PlanOf(b2, 1.101, 4), PlanOf(c, 1.2, 2)},
                    2);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].variants.size(), 1u);
  EXPECT_EQ(rows[1].variants.size(), 1u);
  EXPECT_EQ(rows[1].variants[0].index, 4);
}

TEST(Distinct, SettingValueCounterFindsTheSettingWithTheMostValues) {
  SettingValueCounter counter;
  Strategy s = Base();
  for (int64_t mbs : {1, 2, 4}) {
    s.micro_batch = mbs;
    counter.Add(s);
  }
  s.offload = Offload::kOptimizer;
  counter.Add(s);
  EXPECT_EQ(counter.Most(), 3);
}

}  // namespace
}  // namespace loom
