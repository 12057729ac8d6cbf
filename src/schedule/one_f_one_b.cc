// GPipe, 1F1B and ZB-H1: one model chunk per stage, virtual stage = stage.

#include <algorithm>
#include <cstdint>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

PipelineItem Item(Pass pass, int32_t micro_batch) { return {pass, micro_batch, 0}; }

// The forwards stage |stage| runs before its first backward in 1F1B (Narayanan et al. 2021,
// §2.2.1): one per stage below it, so the pipeline fills before the first gradient returns.
// Stage s then holds at most min(stages - s, micro_batches) activation sets.
int32_t WarmupForwards(int32_t stages, int32_t stage, int32_t micro_batches) {
  return std::min(stages - stage - 1, micro_batches);
}

}  // namespace

// GPipe (Huang et al. 2019, §2.2, Figure 2c): every micro-batch forward, then every backward, in
// micro-batch order; gradients are applied once at the end of the step (the "flush").
StageOrders GpipeOrder(int32_t stages, int32_t micro_batches) {
  StageOrders order(stages);
  for (auto& list : order) {
    list.reserve(2 * micro_batches);
    for (int32_t mb = 0; mb < micro_batches; ++mb) list.push_back(Item(Pass::kF, mb));
    for (int32_t mb = 0; mb < micro_batches; ++mb) list.push_back(Item(Pass::kBW, mb));
  }
  return order;
}

// 1F1B, "PipeDream-Flush" (Narayanan et al. 2021, §2.2.1, Figure 4 top): a warm-up of forwards,
// then one forward and one backward in turn, then the backwards left over (cool-down).
StageOrders OneFOneBOrder(int32_t stages, int32_t micro_batches) {
  StageOrders order(stages);
  for (int32_t stage = 0; stage < stages; ++stage) {
    auto& list = order[stage];
    list.reserve(2 * micro_batches);
    const int32_t warmup = WarmupForwards(stages, stage, micro_batches);
    for (int32_t mb = 0; mb < warmup; ++mb) list.push_back(Item(Pass::kF, mb));
    for (int32_t mb = 0; mb + warmup < micro_batches; ++mb) {
      list.push_back(Item(Pass::kF, mb + warmup));
      list.push_back(Item(Pass::kBW, mb));
    }
    for (int32_t mb = micro_batches - warmup; mb < micro_batches; ++mb) {
      list.push_back(Item(Pass::kBW, mb));
    }
  }
  return order;
}

// ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", section "Handcrafted pipeline
// schedules", Figure 3): 1F1B with the backward split into B and W. B keeps 1F1B's place, so
// gradients travel up the pipeline as early as before; W, which nothing waits for, trails B by
// |stage| micro-batches, and the trailing Ws run at the end, where 1F1B's cool-down leaves the
// stages near the input idle. Every stage then idles (p - 1)(T_F + T_B - T_W), against 1F1B's
// (p - 1)(T_F + T_B + T_W): a third of it when T_F = T_B = T_W.
// Memory: stage s holds at most (its 1F1B peak p - s) + (s deferred Ws) = p activation sets,
// 1F1B's peak, as the paper requires of ZB-H1.
StageOrders ZbH1Order(int32_t stages, int32_t micro_batches) {
  StageOrders order(stages);
  for (int32_t stage = 0; stage < stages; ++stage) {
    auto& list = order[stage];
    list.reserve(3 * micro_batches);
    const int32_t warmup = WarmupForwards(stages, stage, micro_batches);
    const int32_t w_lag = stage;
    int32_t next_w = 0;
    auto backward = [&](int32_t mb) {
      list.push_back(Item(Pass::kB, mb));
      for (; mb + 1 - next_w > w_lag; ++next_w) list.push_back(Item(Pass::kW, next_w));
    };
    for (int32_t mb = 0; mb < warmup; ++mb) list.push_back(Item(Pass::kF, mb));
    for (int32_t mb = 0; mb + warmup < micro_batches; ++mb) {
      list.push_back(Item(Pass::kF, mb + warmup));
      backward(mb);
    }
    for (int32_t mb = micro_batches - warmup; mb < micro_batches; ++mb) backward(mb);
    for (; next_w < micro_batches; ++next_w) list.push_back(Item(Pass::kW, next_w));
  }
  return order;
}

}  // namespace loom::schedule_internal
