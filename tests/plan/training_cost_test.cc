#include "plan/training_cost.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(TrainingCost, OneGpuHourPerBillionTokensIsTheUnit) {
  // One GPU for an hour per step of 10^9 tokens.
  EXPECT_DOUBLE_EQ(GpuHoursPerBillionTokens(3600, 1, 1'000'000'000), 1.0);
  // 512 GPUs, 6 s steps of 16M tokens: 6 * 512 / 3600 / 16,777,216 * 1e9 = 50.86 GPU-hours.
  EXPECT_NEAR(GpuHoursPerBillionTokens(6, 512, 16'777'216), 50.863, 1e-3);
}

TEST(TrainingCost, WithoutPriceOrTokensOnlyGpuHours) {
  const TrainingCost cost = CostOfTraining(2, 8, 1'000'000, TrainingRun());
  EXPECT_DOUBLE_EQ(cost.gpu_hours_per_billion_tokens, 2.0 * 8 / 3600 * 1000);
  EXPECT_FALSE(cost.usd_per_billion_tokens.has_value());
  EXPECT_FALSE(cost.steps.has_value());
  EXPECT_FALSE(cost.time_to_train_s.has_value());
  EXPECT_FALSE(cost.usd_to_train.has_value());
}

TEST(TrainingCost, TokensTrainInWholeStepsAndThePriceTurnsGpuHoursIntoDollars) {
  TrainingRun run;
  run.tokens = 10'000'001;  // one token past 10 steps of 10^6: an 11th step
  run.price_per_gpu_hour_usd = 2.5;
  const TrainingCost cost = CostOfTraining(1.5, 16, 1'000'000, run);
  ASSERT_TRUE(cost.steps.has_value());
  EXPECT_EQ(*cost.steps, 11);
  EXPECT_DOUBLE_EQ(*cost.time_to_train_s, 16.5);
  EXPECT_DOUBLE_EQ(*cost.gpu_hours_to_train, 16.5 * 16 / 3600);
  EXPECT_DOUBLE_EQ(*cost.usd_to_train, 16.5 * 16 / 3600 * 2.5);
  EXPECT_DOUBLE_EQ(*cost.usd_per_billion_tokens, cost.gpu_hours_per_billion_tokens * 2.5);
}

TEST(TrainingCost, TokensWithoutAPriceGiveTimeAndGpuHoursButNoDollars) {
  TrainingRun run;
  run.tokens = 15e12;
  const TrainingCost cost = CostOfTraining(4.0, 16384, 16'777'216, run);
  EXPECT_EQ(*cost.steps, 894'070);  // ceil(15e12 / 16,777,216)
  EXPECT_DOUBLE_EQ(*cost.time_to_train_s, 894'070 * 4.0);
  EXPECT_FALSE(cost.usd_to_train.has_value());
  EXPECT_FALSE(cost.usd_per_billion_tokens.has_value());
}

}  // namespace
}  // namespace loom
