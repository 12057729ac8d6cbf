#include "unit_time_executor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

namespace loom::schedule_oracle {
namespace {

PipelineSchedule HandMade(ScheduleKind kind, int32_t chunks, int32_t micro_batches,
                          std::vector<std::vector<PipelineItem>> order) {
  PipelineSchedule s;
  s.kind = kind;
  s.stages = static_cast<int32_t>(order.size());
  s.chunks = chunks;
  s.micro_batches = micro_batches;
  s.order = std::move(order);
  return s;
}

TEST(UnitTimeExecutor, ChainsOneMicroBatchDownAndBackUpTheStages) {
  // Stage 0: F [0,2], stage 1: F [2,4], BW [4,8], stage 0: BW [8,12].
  const PipelineSchedule s =
      HandMade(ScheduleKind::k1F1B, 1, 1,
               {{{Pass::kF, 0, 0}, {Pass::kBW, 0, 0}}, {{Pass::kF, 0, 0}, {Pass::kBW, 0, 0}}});
  const Execution run = Execute(s, {.forward = 2, .backward = 3, .weight = 1});
  ASSERT_TRUE(run.completed);
  EXPECT_EQ(run.makespan, 12);
  EXPECT_EQ(run.busy, (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(run.Idle(1), 6);
  EXPECT_DOUBLE_EQ(run.BubbleFraction(), 0.5);
}

TEST(UnitTimeExecutor, ReportsADeadlockWhenABackwardPrecedesItsOwnForward) {
  const PipelineSchedule s =
      HandMade(ScheduleKind::k1F1B, 1, 1,
               {{{Pass::kBW, 0, 0}, {Pass::kF, 0, 0}}, {{Pass::kF, 0, 0}, {Pass::kBW, 0, 0}}});
  EXPECT_FALSE(Execute(s, {}).completed);
}

TEST(UnitTimeExecutor, ReportsADeadlockWhenAWeightPassPrecedesItsInputBackward) {
  const PipelineSchedule bad =
      HandMade(ScheduleKind::kZbH1, 1, 1, {{{Pass::kF, 0, 0}, {Pass::kW, 0, 0}, {Pass::kB, 0, 0}}});
  EXPECT_FALSE(Execute(bad, {}).completed);
  const PipelineSchedule good =
      HandMade(ScheduleKind::kZbH1, 1, 1, {{{Pass::kF, 0, 0}, {Pass::kB, 0, 0}, {Pass::kW, 0, 0}}});
  const Execution run = Execute(good, {.forward = 1, .backward = 2, .weight = 4});
  ASSERT_TRUE(run.completed);
  EXPECT_EQ(run.makespan, 7);
}

TEST(UnitTimeExecutor, ReportsADeadlockWhenTwoStagesWaitForEachOther) {
  // Stage 0 runs micro-batch 1 first, stage 1 micro-batch 0 first: each waits for the other.
  const PipelineSchedule s =
      HandMade(ScheduleKind::kGpipe, 1, 2,
               {{{Pass::kF, 1, 0}, {Pass::kBW, 0, 0}, {Pass::kF, 0, 0}, {Pass::kBW, 1, 0}},
                {{Pass::kF, 0, 0}, {Pass::kBW, 0, 0}, {Pass::kF, 1, 0}, {Pass::kBW, 1, 0}}});
  EXPECT_FALSE(Execute(s, {}).completed);
}

// V-shape with 2 stages: virtual stages 0 (stage 0), 1 (stage 1), 2 (stage 1), 3 (stage 0).
TEST(UnitTimeExecutor, FollowsTheVShapedPlacement) {
  const std::vector<PipelineItem> list = {{Pass::kF, 0, 0}, {Pass::kF, 0, 1}, {Pass::kB, 0, 1},
                                          {Pass::kW, 0, 1}, {Pass::kB, 0, 0}, {Pass::kW, 0, 0}};
  const PipelineSchedule s = HandMade(ScheduleKind::kZbV, 2, 1, {list, list});
  const Execution run = Execute(s, {});
  ASSERT_TRUE(run.completed);
  // F v0 [0,1] v1 [1,2] v2 [2,3] v3 [3,4]; B v3 [4,5]; B v2 [5,6]; W v2 [6,7]; B v1 [7,8];
  // B v0 [8,9]; W v0 [9,10].
  EXPECT_EQ(run.makespan, 10);
  EXPECT_EQ(run.peak_activations, (std::vector<int32_t>{2, 2}));
}

TEST(UnitTimeExecutor, CountsActivationsHeldFromForwardToWeightPass) {
  const PipelineSchedule s = HandMade(ScheduleKind::kZbH1, 1, 3,
                                      {{{Pass::kF, 0, 0},
                                        {Pass::kF, 1, 0},
                                        {Pass::kB, 0, 0},
                                        {Pass::kB, 1, 0},
                                        {Pass::kF, 2, 0},
                                        {Pass::kW, 0, 0},
                                        {Pass::kB, 2, 0},
                                        {Pass::kW, 1, 0},
                                        {Pass::kW, 2, 0}}});
  const Execution run = Execute(s, {});
  ASSERT_TRUE(run.completed);
  EXPECT_EQ(run.peak_activations, (std::vector<int32_t>{3}));
}

}  // namespace
}  // namespace loom::schedule_oracle
