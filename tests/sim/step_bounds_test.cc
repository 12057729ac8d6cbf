#include "sim/step_bounds.h"

#include <gtest/gtest.h>

#include "sim/sim_test_support.h"

namespace loom {
namespace {

// Llama-3-8B on 4 DGX H100, one small batch, so that every strategy simulates in milliseconds.
Strategy Base() {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 4;
  s.sp = true;
  s.seq_len = 4096;
  s.global_batch = 32;
  return s;
}

// The bounds hold strategy by strategy: simulated step time and every stage's simulated peak are
// at least the bounds.
void ExpectBelowSimulation(const Inputs& in, const Strategy& s,
                           const SimulationOptions& options = {}) {
  Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s, options);
  ASSERT_TRUE(step.ok()) << step.status().message();
  const StepBounds bounds = BoundStep(*step);
  Result<SimulationResult> sim = SimulatePreparedStep(in.model, in.cluster, *step);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  EXPECT_GT(bounds.step_time, SimTime());
  EXPECT_LE(bounds.step_time.ToSeconds(), sim->step_time_s + 1e-9);
  EXPECT_LE(bounds.peak_memory_bytes, sim->peak_memory_bytes);
}

TEST(StepBounds, NeverAboveTheSimulationOverSchedulesZeroRecomputeAndOverlap) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  const ScheduleKind schedules[] = {ScheduleKind::kGpipe,       ScheduleKind::k1F1B,
                                    ScheduleKind::kInterleaved, ScheduleKind::kZbH1,
                                    ScheduleKind::kZbV,         ScheduleKind::kDualPipeV};
  int checked = 0;
  for (ScheduleKind schedule : schedules) {
    for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (bool overlap : {false, true}) {
        Strategy s = Base();
        s.schedule = schedule;
        s.vpp = schedule == ScheduleKind::kInterleaved || schedule == ScheduleKind::kZbV ||
                        schedule == ScheduleKind::kDualPipeV
                    ? 2
                    : 1;
        s.recompute = recompute;
        s.zero_stage = schedule == ScheduleKind::kZbH1 ? 0 : 1;
        s.overlap_grad_reduce = overlap;
        s.overlap_param_gather = overlap && s.zero_stage == 1;
        SCOPED_TRACE(std::string(kScheduleNames.Name(schedule)) + " " +
                     std::string(kRecomputeNames.Name(recompute)));
        ExpectBelowSimulation(in, s);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 36);
}

TEST(StepBounds, NeverAboveTheSimulationWithZeroThreeOffloadAndContextParallelism) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  for (int64_t zero : {2, 3}) {
    Strategy s = Base();
    s.pp = 1;
    s.dp = 16;
    s.zero_stage = zero;
    ExpectBelowSimulation(in, s);
    s.offload = zero == 3 ? Offload::kOptimizerAndParams : Offload::kOptimizer;
    ExpectBelowSimulation(in, s);
  }
  Strategy ring = Base();
  ring.cp = 2;
  ring.dp = 2;
  ring.tp_comm_overlap = true;
  ExpectBelowSimulation(in, ring);
}

// With the framework's asynchronous backward collectives the bound counts a pass's hidden tp time
// at the SMs it holds (PassSpan), the least the engine's slowdown of the kernels beside it can be.
TEST(StepBounds, NeverAboveTheSimulationWithTheFrameworksAsynchronousBackward) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(Shipped("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  ASSERT_TRUE(megatron->tp_backward_overlap);
  SimulationOptions options;
  options.framework = *megatron;
  int checked = 0;
  for (ScheduleKind schedule : {ScheduleKind::k1F1B, ScheduleKind::kInterleaved,
                                ScheduleKind::kZbH1, ScheduleKind::kDualPipeV}) {
    for (bool sp : {false, true}) {
      Strategy s = Base();
      s.tp = 4;
      s.dp = 2;
      s.sp = sp;
      s.schedule = schedule;
      s.vpp = schedule == ScheduleKind::kInterleaved || schedule == ScheduleKind::kDualPipeV ? 2 : 1;
      s.zero_stage = schedule == ScheduleKind::kZbH1 ? 0 : 1;
      s.overlap_grad_reduce = true;
      SCOPED_TRACE(std::string(kScheduleNames.Name(schedule)) + (sp ? " sp" : ""));
      ExpectBelowSimulation(in, s, options);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);
}

// The bound is worth having only if it is close: with one data-parallel replica (nothing to
// reduce) 1F1B's step is the last stage's lead, its passes and the backward's way back, which the
// simulation adds only sends and waits to.
TEST(StepBounds, WithinTenPercentOfOneF1BWithoutDataParallelism) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s = Base();
  s.dp = 1;
  s.global_batch = 16;
  Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(step.ok()) << step.status().message();
  Result<SimulationResult> sim = SimulatePreparedStep(in.model, in.cluster, *step);
  ASSERT_TRUE(sim.ok());
  const StepBounds bounds = BoundStep(*step);
  EXPECT_GT(bounds.step_time.ToSeconds(), 0.9 * sim->step_time_s);
  EXPECT_GT(static_cast<double>(bounds.peak_memory_bytes),
            0.99 * static_cast<double>(sim->peak_memory_bytes));
}

}  // namespace
}  // namespace loom
