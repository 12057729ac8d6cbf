// Where a step's time goes (sim/step_utilization.h): each stage's step is partitioned into
// compute, tp collectives, optimizer, communication waits, host waits, bubble and tail, so the
// breakdown sums to the step, and a pipeline's bubble stays a bubble when a host thread that waits
// for the pipeline's transfers issues the work (issue 43, section 1).

#include "sim/step_utilization.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schedule/schedule.h"
#include "sim/engine.h"
#include "sim/simulator.h"
#include "sim/step_builder.h"
#include "sim_test_support.h"
#include "spec/framework.h"

namespace loom {
namespace {

constexpr int64_t kUtilUsNanos = 1'000;
constexpr int64_t kUtilMsNanos = 1'000'000;

SimTime UtilMs(double ms) { return SimTime::FromNanos(static_cast<int64_t>(ms * kUtilMsNanos)); }

// Every virtual stage runs |f|, |b| and |w| ms (forward, input-backward, weight-backward). With a
// host thread each pass costs the host 0.2 ms to issue, 0.05 ms of it before its kernels may start:
// the GPU, not the host, bounds the step.
std::vector<ChunkCost> UtilCosts(int32_t virtual_stages, double f, double b, double w, bool host) {
  ChunkCost c;
  c.forward.time = UtilMs(f);
  c.backward_input.time = UtilMs(b);
  c.backward_weight.time = UtilMs(w);
  c.kept_activation_bytes = 1;
  if (host) {
    for (PassCost* p : {&c.forward, &c.backward_input, &c.backward_weight}) {
      p->host = SimTime::FromNanos(200 * kUtilUsNanos);
      p->host_lead = SimTime::FromNanos(50 * kUtilUsNanos);
    }
  }
  return std::vector<ChunkCost>(static_cast<size_t>(virtual_stages), c);
}

// No communication; with |host|, Megatron-LM's host thread: it waits for every pipeline transfer
// and for the gradients before the optimizer step (HostConfig).
StepGraphConfig UtilConfig(int32_t stages, bool host) {
  StepGraphConfig config;
  config.dp.optimizer_time.assign(static_cast<size_t>(stages), SimTime());
  config.dp.param_gather_time.assign(static_cast<size_t>(stages), SimTime());
  config.host.enabled = host;
  config.host.sync_after_p2p = host;
  config.host.sync_before_optimizer = host;
  config.host.optimizer_lead.assign(static_cast<size_t>(stages),
                                    host ? SimTime::FromNanos(50 * kUtilUsNanos) : SimTime());
  return config;
}

struct UtilRun {
  StepGraph step;
  StepTimeline timeline;
  StepUtilization u;
};

UtilRun RunUtilized(ScheduleKind kind, int32_t p, int32_t m, int32_t chunks, double f, double b,
                    double w, bool host) {
  Result<PipelineSchedule> schedule = BuildSchedule(kind, p, m, chunks);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  UtilRun run{
      BuildStepGraph(*schedule, UtilCosts(p * chunks, f / chunks, b / chunks, w / chunks, host),
                     UtilConfig(p, host)),
      {},
      {}};
  Result<StepTimeline> timeline = Simulate(run.step.graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().message();
  run.timeline = *timeline;
  run.u = MeasureUtilization(run.step, run.timeline);
  return run;
}

// Every stage's terms add up to the step.
void ExpectStepPartition(const StepUtilization& u, const std::string& what) {
  ASSERT_FALSE(u.compute_s.empty()) << what;
  for (size_t s = 0; s < u.compute_s.size(); ++s) {
    const double sum = u.compute_s[s] + u.tp_s[s] + u.optimizer_s[s] + u.comm_wait_s[s] +
                       u.host_wait_s[s] + u.host_wait_after_s[s] + u.bubble_s[s] + u.tail_s[s];
    EXPECT_NEAR(sum, u.step_s, 1e-12) << what << ", stage " << s;
    EXPECT_DOUBLE_EQ(u.busy_s[s], u.compute_s[s] + u.tp_s[s]) << what;
  }
}

struct BubbleCase {
  ScheduleKind kind;
  int32_t chunks;
  double w;  // the weight-backward's share, ms; the 1F1B family runs B and W as one pass
  // The bubble the closed form gives for p = 4, m = 8 and F = B = W (= 1 ms), or a negative
  // number where the test compares with the run without a host thread only.
  double closed_form;
};

// Qi et al. 2024 and Narayanan et al. 2021: 1F1B (p-1)/(m+p-1); interleaved with v chunks
// (p-1)/(v m + p-1); ZB-H1 idles (p-1)(F + B - W) of m(F + B + W) + that.
const BubbleCase kBubbleCases[] = {
    {ScheduleKind::k1F1B, 1, 1, 3.0 / 11},
    {ScheduleKind::kInterleaved, 2, 1, 3.0 / 19},
    {ScheduleKind::kZbH1, 1, 1, 3.0 / 27},
    {ScheduleKind::kZbV, 2, 1, -1},
};

TEST(StepUtilization, TheBubbleIsTheClosedFormWhenAHostThreadIssuesTheWork) {
  const int32_t p = 4, m = 8;
  for (const BubbleCase& c : kBubbleCases) {
    const std::string what(kScheduleNames.Name(c.kind));
    const UtilRun gpu_only = RunUtilized(c.kind, p, m, c.chunks, 1, 1, c.w, false);
    const UtilRun host = RunUtilized(c.kind, p, m, c.chunks, 1, 1, c.w, true);
    if (c.closed_form >= 0) {
      EXPECT_NEAR(gpu_only.u.bubble_fraction, c.closed_form, 1e-9) << what;
    }
    // The host waits at every transfer, so its issue adds 0.05 ms per hop: the bubble moves by
    // that, not by the pipeline's waits that the host thread sat through.
    EXPECT_NEAR(host.u.bubble_fraction, gpu_only.u.bubble_fraction, 0.015) << what;
    // The host's own time is at most its 0.05 ms lead before each pass and the optimizer step.
    double host_wait = 0;
    for (int32_t s = 0; s < p; ++s)
      host_wait += host.u.host_wait_s[s] + host.u.host_wait_after_s[s];
    int64_t issues = p;  // the optimizer steps
    for (TaskId id = 0; id < host.step.graph.num_tasks(); ++id) {
      if (host.step.work[id].kind == WorkKind::kPass) ++issues;
    }
    EXPECT_LE(host_wait, 1e-9 + static_cast<double>(issues) * 50e-6) << what;
    EXPECT_GT(host_wait, 0) << what;
    ExpectStepPartition(gpu_only.u, what + " without a host thread");
    ExpectStepPartition(host.u, what + " with a host thread");
  }
}

TEST(StepUtilization, AHostBoundStepIsHostTimeNotBubble) {
  // Passes of 0.1 ms that take the host 2 ms to issue, all of it before the kernels start: the
  // GPU waits for the host through the step, on every stage.
  const int32_t p = 2, m = 4;
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, p, m, 1);
  ASSERT_TRUE(schedule.ok());
  std::vector<ChunkCost> costs = UtilCosts(p, 0.1, 0.1, 0, false);
  for (ChunkCost& c : costs) {
    for (PassCost* pass : {&c.forward, &c.backward_input, &c.backward_weight}) {
      pass->host = pass->host_lead = UtilMs(2);
    }
  }
  const StepGraph step = BuildStepGraph(*schedule, costs, UtilConfig(p, true));
  Result<StepTimeline> timeline = Simulate(step.graph);
  ASSERT_TRUE(timeline.ok());
  const StepUtilization u = MeasureUtilization(step, *timeline);
  ExpectStepPartition(u, "host-bound 1F1B");
  for (int32_t s = 0; s < p; ++s) {
    EXPECT_GT(u.host_wait_s[s], 10 * u.compute_s[s]) << "stage " << s;
  }
}

// The simulator's breakdown, over shipped inputs, sums to the step for every schedule, with the
// shipped megatron-core host thread and without one; the per-stage compute column is the
// breakdown's compute.
TEST(StepUtilization, TheBreakdownSumsToTheStepForEverySchedule) {
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(Shipped("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 2);
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe,       ScheduleKind::k1F1B,
                                ScheduleKind::kInterleaved, ScheduleKind::kZbH1,
                                ScheduleKind::kZbV,         ScheduleKind::kDualPipeV};
  for (ScheduleKind kind : kinds) {
    for (bool host : {false, true}) {
      Strategy s = PipelineStrategy(4, 2, 8, kind);
      s.tp = 2;
      s.sp = true;
      if (kind == ScheduleKind::kGpipe) s.vpp = 1;
      if (kind == ScheduleKind::kZbH1) s.vpp = 1;
      SimulationOptions options;
      if (host) options.framework = *megatron;
      const std::string what =
          std::string(kScheduleNames.Name(kind)) + (host ? " with megatron-core" : " alone");
      Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s, options);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status().message();
      const StepBreakdown& b = r->breakdown;
      EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.optimizer_s + b.host_s,
                  r->step_time_s, 1e-9 * r->step_time_s)
          << what;
      double compute = 0;
      for (const StageResult& stage : r->stages) compute += stage.compute_s;
      EXPECT_NEAR(compute / static_cast<double>(r->stages.size()), b.compute_s, 1e-12) << what;
      EXPECT_GT(b.bubble_s, 0.05 * r->step_time_s) << what;
    }
  }
}

}  // namespace
}  // namespace loom
