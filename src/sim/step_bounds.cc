#include "sim/step_bounds.h"

#include <algorithm>
#include <vector>

namespace loom {
namespace {

// How long a pass holds its rank's compute stream before the next pass may start: its kernels and
// the collectives it exposes (step_builder.cc: the next pass waits for them). The hidden part
// runs beside the kernels and holds |share| of the SMs meanwhile (PassSpan); no other transfer's
// slowdown is counted, so this is no longer than the engine's pass.
SimTime Serial(const PassCost& pass, double share) { return PassSpan(pass, share); }

SimTime Duration(const ChunkCost& cost, Pass pass, double share) {
  switch (pass) {
    case Pass::kF:
      return Serial(cost.forward, share);
    case Pass::kB:
      return Serial(cost.backward_input, share);
    case Pass::kW:
      return Serial(cost.backward_weight, share);
    case Pass::kBW:
      return Serial(BackwardPass(cost), share);
  }
  return SimTime();
}

// What follows the last pass of a stage when that is a backward of |last_chunk|: the gradient
// reduction still pending (without --overlap-grad-reduce all the buckets of the stage, or with
// ZeRO-2/3 those of its last pass; with it the last bucket), the optimizer
// step, with offload its CPU step and copy back, and the weights' all-gather unless it runs under
// the next step's forward.
SimTime AfterLastBackward(const PreparedStep& step, int32_t stage, int32_t last_chunk) {
  const StepGraphConfig& c = step.config;
  const PipelineSchedule& schedule = step.schedule;
  SimTime after;
  const auto all_buckets = [&c](int32_t v) { return c.dp.bucket_time[v] * c.dp.buckets[v]; };
  if (!c.dp.buckets.empty() && last_chunk >= 0) {
    const int32_t last_v = schedule.VirtualStage(stage, last_chunk);
    if (c.dp.overlap_grad_reduce) {
      after += c.dp.bucket_time[last_v];
    } else if (c.dp.reduce_every_micro_batch) {
      after += all_buckets(last_v);
    } else {
      for (int32_t chunk = 0; chunk < schedule.chunks; ++chunk)
        after += all_buckets(schedule.VirtualStage(stage, chunk));
    }
  }
  if (!c.dp.optimizer_time.empty()) after += c.dp.optimizer_time[stage];
  if (!c.offload.cpu_step.empty())
    after += c.offload.cpu_step[stage] + c.offload.params_to_gpu[stage];
  if (!c.dp.param_gather_time.empty() && !c.dp.overlap_param_gather)
    after += c.dp.param_gather_time[stage];
  return after;
}

}  // namespace

StepBounds BoundStep(const PreparedStep& step) {
  const PipelineSchedule& schedule = step.schedule;
  const std::vector<ChunkCost>& costs = step.costs;
  const int32_t v_count = schedule.VirtualStages();
  const SimTime p2p = step.schedule.stages > 1 ? step.config.pipeline.p2p_time : SimTime();
  // ahead_f[v]: the forward of one micro-batch through virtual stages 0..v-1 and the transfers
  // between them; behind_b[v]: its input-gradient backward through v-1..0 after v.
  std::vector<SimTime> ahead_f(static_cast<size_t>(v_count) + 1),
      behind_b(static_cast<size_t>(v_count) + 1);
  // The share of its stage's SMs a virtual stage's hidden tp collectives hold (SmHolds).
  const auto share = [&step, &schedule](int32_t v) {
    const std::vector<SmHolds>& holds = step.config.sm_holds;
    return holds.empty() ? 0.0 : holds[schedule.Place(v).stage].tp_hidden;
  };
  for (int32_t v = 0; v < v_count; ++v) {
    ahead_f[v + 1] = ahead_f[v] + Serial(costs[v].forward, share(v)) + p2p;
    behind_b[v + 1] = behind_b[v] + Serial(costs[v].backward_input, share(v)) + p2p;
  }
  StepBounds bounds;
  for (int32_t stage = 0; stage < schedule.stages; ++stage) {
    const std::vector<PipelineItem>& order = schedule.order[stage];
    if (order.empty()) continue;
    const SimTime lead = ahead_f[schedule.VirtualStage(stage, order.front().chunk)];
    SimTime busy, latest;
    int64_t held = 0, peak = 0;
    for (const PipelineItem& item : order) {
      const int32_t v = schedule.VirtualStage(stage, item.chunk);
      const ChunkCost& cost = costs[v];
      busy += Duration(cost, item.pass, share(v));
      if (item.pass == Pass::kF) {
        held += cost.kept_activation_bytes;
        peak = std::max(peak, held);
        continue;
      }
      if (item.pass == Pass::kB || item.pass == Pass::kBW) {
        peak = std::max(peak, held + cost.recompute_activation_bytes);
        // The gradient still has to go back through every virtual stage before this one.
        latest = Max(latest, lead + busy + behind_b[v]);
      }
      if (item.pass == Pass::kW || item.pass == Pass::kBW) held -= cost.kept_activation_bytes;
    }
    const PipelineItem& last = order.back();
    const bool ends_in_backward = last.pass == Pass::kW || last.pass == Pass::kBW;
    latest = Max(latest,
                 lead + busy + AfterLastBackward(step, stage, ends_in_backward ? last.chunk : -1));
    bounds.step_time = Max(bounds.step_time, latest);
    bounds.peak_memory_bytes =
        std::max(bounds.peak_memory_bytes, step.model_states[stage].Total() + peak);
  }
  return bounds;
}

}  // namespace loom
