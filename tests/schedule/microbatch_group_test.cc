// The interleaved schedule with Megatron-LM's micro-batch groups
// (--microbatch-group-size-per-virtual-pipeline-stage;
// megatron/core/pipeline_parallel/schedules.py, get_schedule_table and the group rules of
// forward_backward_pipelining_with_interleaving).

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>

#include "schedule/schedule.h"
#include "unit_time_executor.h"

namespace loom {
namespace {

using schedule_oracle::Execute;
using schedule_oracle::Execution;
using schedule_oracle::PassTimes;

constexpr PassTimes kSplitBackwardTwiceForward{.forward = 1, .backward = 1, .weight = 1};

// Megatron's rule: pp <= group <= micro-batches and the last group whole or of at least pp.
bool MegatronAccepts(int32_t p, int32_t m, int32_t group) {
  const int32_t rest = m % group;
  return group >= p && group <= m && (rest == 0 || rest >= p);
}

// Every group Megatron accepts builds a schedule that runs every (micro-batch, chunk) forward and
// backward exactly once on every stage, without deadlock; every group it refuses is refused.
TEST(MicrobatchGroup, BuildsExactlyTheGroupsMegatronAccepts) {
  for (int32_t p = 2; p <= 6; ++p) {
    for (int32_t m = 1; m <= 20; ++m) {
      for (int32_t group = 1; group <= 22; ++group) {
        for (int32_t chunks : {2, 3}) {
          const std::string at = "p=" + std::to_string(p) + " m=" + std::to_string(m) +
                                 " group=" + std::to_string(group) + " v=" + std::to_string(chunks);
          Result<PipelineSchedule> s =
              BuildSchedule(ScheduleKind::kInterleaved, p, m, chunks, group);
          ASSERT_EQ(s.ok(), MegatronAccepts(p, m, group)) << at;
          if (!s.ok()) {
            EXPECT_NE(s.status().message().find("--microbatch-group"), std::string::npos) << at;
            continue;
          }
          for (int32_t stage = 0; stage < p; ++stage) {
            std::set<std::tuple<int, int, int>> seen;
            for (const PipelineItem& item : s->order[stage]) {
              EXPECT_TRUE(
                  seen.insert({static_cast<int>(item.pass), item.micro_batch, item.chunk}).second)
                  << at;
            }
            EXPECT_EQ(seen.size(), static_cast<size_t>(2 * m * chunks)) << at;
          }
          EXPECT_TRUE(Execute(*s, kSplitBackwardTwiceForward).completed) << at;
        }
      }
    }
  }
}

// Group 0 is pp, Megatron's default: the same schedule as before groups existed, so the closed
// form (p - 1)(T_F + T_B) / v of Narayanan et al. 2021 holds with equal chunks.
TEST(MicrobatchGroup, DefaultIsPpAndKeepsTheClosedFormBubble) {
  for (int32_t p = 2; p <= 6; ++p) {
    for (int32_t v = 2; v <= 4; ++v) {
      const int32_t m = 3 * p;
      Result<PipelineSchedule> by_default = BuildSchedule(ScheduleKind::kInterleaved, p, m, v);
      Result<PipelineSchedule> explicit_pp = BuildSchedule(ScheduleKind::kInterleaved, p, m, v, p);
      ASSERT_TRUE(by_default.ok() && explicit_pp.ok());
      for (int32_t stage = 0; stage < p; ++stage) {
        ASSERT_EQ(by_default->order[stage].size(), explicit_pp->order[stage].size());
        for (size_t i = 0; i < by_default->order[stage].size(); ++i) {
          EXPECT_EQ(by_default->order[stage][i].micro_batch,
                    explicit_pp->order[stage][i].micro_batch);
          EXPECT_EQ(by_default->order[stage][i].chunk, explicit_pp->order[stage][i].chunk);
        }
      }
      const Execution run = Execute(*by_default, kSplitBackwardTwiceForward);
      ASSERT_TRUE(run.completed);
      // Each chunk pass takes 1/v of a stage's: stage T_F = v, T_B = 2v; idle = (p - 1) * 3.
      for (int32_t stage = 0; stage < p; ++stage)
        EXPECT_EQ(run.Idle(stage), (p - 1) * 3) << p << " " << v;
    }
  }
}

// Micro-batches not divisible by pp run with a larger group (Megatron's rule allows it): with
// pp 4 and 6 micro-batches, one group of 6. A larger group keeps more micro-batches in flight in
// the warm-up: the first stage's peak activations grow with it.
TEST(MicrobatchGroup, LargerGroupsRunNonDivisibleBatchesAndHoldMoreActivations) {
  Result<PipelineSchedule> six = BuildSchedule(ScheduleKind::kInterleaved, 4, 6, 2, 6);
  ASSERT_TRUE(six.ok()) << six.status().ToString();
  EXPECT_FALSE(BuildSchedule(ScheduleKind::kInterleaved, 4, 6, 2).ok());  // groups of 4 leave 2
  Result<PipelineSchedule> eight = BuildSchedule(ScheduleKind::kInterleaved, 4, 8, 2, 4);
  Result<PipelineSchedule> eight_whole = BuildSchedule(ScheduleKind::kInterleaved, 4, 8, 2, 8);
  ASSERT_TRUE(eight.ok() && eight_whole.ok());
  const Execution small = Execute(*eight, kSplitBackwardTwiceForward);
  const Execution large = Execute(*eight_whole, kSplitBackwardTwiceForward);
  ASSERT_TRUE(small.completed && large.completed);
  EXPECT_GT(large.peak_activations[0], small.peak_activations[0]);
  EXPECT_FALSE(BuildSchedule(ScheduleKind::k1F1B, 4, 8, 1, 8).ok());
}

}  // namespace
}  // namespace loom
