#include "plan/training_cost.h"

#include <cmath>

namespace loom {

double GpuHoursPerBillionTokens(double step_time_s, int64_t gpus, int64_t tokens_per_step) {
  return step_time_s * static_cast<double>(gpus) / 3600.0 * kTokensPerCostUnit /
         static_cast<double>(tokens_per_step);
}

TrainingCost CostOfTraining(double step_time_s, int64_t gpus, int64_t tokens_per_step,
                            const TrainingRun& run) {
  TrainingCost cost;
  cost.gpu_hours_per_billion_tokens = GpuHoursPerBillionTokens(step_time_s, gpus, tokens_per_step);
  const std::optional<double>& price = run.price_per_gpu_hour_usd;
  if (price) cost.usd_per_billion_tokens = cost.gpu_hours_per_billion_tokens * *price;
  if (!run.tokens) return cost;
  // Training runs whole steps of the global batch: the last one is full too.
  const int64_t steps =
      static_cast<int64_t>(std::ceil(*run.tokens / static_cast<double>(tokens_per_step)));
  cost.steps = steps;
  cost.time_to_train_s = static_cast<double>(steps) * step_time_s;
  cost.gpu_hours_to_train = *cost.time_to_train_s * static_cast<double>(gpus) / 3600.0;
  if (price) cost.usd_to_train = *cost.gpu_hours_to_train * *price;
  return cost;
}

}  // namespace loom
