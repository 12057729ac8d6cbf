#ifndef LOOM_PLAN_TRAINING_COST_H_
#define LOOM_PLAN_TRAINING_COST_H_

#include <cstdint>
#include <optional>
#include <string>

namespace loom {

// loom's one unit of cost: GPU-hours per 10^9 trained tokens (the objective `cost`, the table's
// "GPU-h/Btok" and the JSON's gpu_hours_per_billion_tokens). Dollars are that times a price per
// GPU-hour, and only where one is given.
inline constexpr double kTokensPerCostUnit = 1e9;

// GPU-hours that |gpus| GPUs spend per 10^9 tokens at |tokens_per_step| tokens per step of
// |step_time_s|: step_time_s * gpus / 3600 / tokens_per_step * 1e9.
// REQUIRES: tokens_per_step > 0.
double GpuHoursPerBillionTokens(double step_time_s, int64_t gpus, int64_t tokens_per_step);

// What the user says about the training run beyond one step: optional, each.
struct TrainingRun {
  std::optional<double> price_per_gpu_hour_usd;  // --price, or the cluster file's
  std::string price_source;      // "--price" or the cluster file; empty without a price
  std::optional<double> tokens;  // --tokens: tokens to train on
};

// A plan's cost for |TrainingRun|: what is known is set, the rest left out.
struct TrainingCost {
  double gpu_hours_per_billion_tokens = 0;
  std::optional<double> usd_per_billion_tokens;  // with a price
  // With tokens: whole steps (the last one full), their wall time and GPU-hours, and with a price
  // their dollars.
  std::optional<int64_t> steps;
  std::optional<double> time_to_train_s;
  std::optional<double> gpu_hours_to_train;
  std::optional<double> usd_to_train;
};

// The cost of |gpus| GPUs running steps of |step_time_s| over |tokens_per_step| tokens for |run|.
// REQUIRES: tokens_per_step > 0; run.tokens, when set, in [1, 1e18].
TrainingCost CostOfTraining(double step_time_s, int64_t gpus, int64_t tokens_per_step,
                            const TrainingRun& run);

}  // namespace loom

#endif  // LOOM_PLAN_TRAINING_COST_H_
