#include "sim/step_comparison.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/sim_test_support.h"
#include "sim/simulator.h"
#include "sim/step_utilization.h"

namespace loom {
namespace {

SimTime Us(int64_t micros) { return SimTime::FromNanos(micros * 1000); }

Task MakeTask(StreamId stream, int64_t micros, NameId name, NameId category) {
  Task t;
  t.stream = stream;
  t.duration = Us(micros);
  t.name = name;
  t.category = category;
  return t;
}

// Two stages, each with a compute and a comm stream:
//   rank 0: F0 [0,10] -> send [10,14] (pp, comm) -> rank 1: F0 [14,24], B0 [24,44]
//   rank 0: B0 [10,30]; a dp all-reduce of both ranks (after rank 0's F0 and rank 1's B0) [44,50].
// Activations: 100 bytes from each F0's start to its B0's end; the all-reduce holds a 50-byte
// buffer while it runs.
struct TwoStages {
  StepGraph step;
  TaskId f0 = 0, send = 0, f1 = 0, b1 = 0, b0 = 0, reduce0 = 0, reduce1 = 0;
  std::vector<MemoryBaseline> baselines;
  StepTimeline predicted;
};

TwoStages MakeTwoStages() {
  TwoStages s;
  TaskGraph& g = s.step.graph;
  s.step.stages = 2;
  s.step.replicas = 1;
  s.step.compute_category = g.Intern("compute");
  s.step.tp_category = g.Intern("tp");
  s.step.pp_category = g.Intern("pp");
  s.step.dp_category = g.Intern("dp");
  s.step.optimizer_category = g.Intern("optimizer");
  s.step.model_states = g.AddPool("model states");
  s.step.activations = g.AddPool("activations");
  const PoolId buffers = g.AddPool("buffers");
  const StreamId compute0 = g.AddStream(0, "compute"), comm0 = g.AddStream(0, "comm");
  const StreamId compute1 = g.AddStream(1, "compute"), comm1 = g.AddStream(1, "comm");
  s.step.compute_stream = {compute0, compute1};
  Task f = MakeTask(compute0, 10, g.Intern("F0"), s.step.compute_category);
  f.alloc_at_start_bytes = 100;
  f.pool = s.step.activations;
  Task b = MakeTask(compute0, 20, g.Intern("B0"), s.step.compute_category);
  b.free_at_end_bytes = 100;
  b.pool = s.step.activations;
  s.f0 = g.AddTask(f);
  s.send = g.AddTask(MakeTask(comm0, 4, g.Intern("send"), s.step.pp_category));
  g.AddDependency(s.f0, s.send);
  f.stream = compute1;
  b.stream = compute1;
  s.f1 = g.AddTask(f);
  s.b1 = g.AddTask(b);
  g.AddDependency(s.send, s.f1);
  s.b0 = g.AddTask(MakeTask(compute0, 20, g.Intern("B0"), s.step.compute_category));
  g.AddMemoryEvent(s.b0, MemoryPhase::kAtEnd, s.step.activations, -100);
  s.reduce0 = g.AddTask(MakeTask(comm0, 6, g.Intern("all-reduce"), s.step.dp_category));
  s.reduce1 = g.AddTask(MakeTask(comm1, 6, g.Intern("all-reduce"), s.step.dp_category));
  for (TaskId reduce : {s.reduce0, s.reduce1}) {
    g.AddMemoryEvent(reduce, MemoryPhase::kAtStart, buffers, 50);
    g.AddMemoryEvent(reduce, MemoryPhase::kAtEnd, buffers, -50);
  }
  g.AddDependency(s.f0, s.reduce0);
  g.AddDependency(s.b1, s.reduce1);
  const TaskId members[] = {s.reduce0, s.reduce1};
  g.AddCollective(members);
  s.baselines = {{0, s.step.model_states, 1000}, {1, s.step.model_states, 1000}};
  Result<StepTimeline> predicted = Simulate(g);
  EXPECT_TRUE(predicted.ok()) << predicted.status().message();
  if (predicted.ok()) s.predicted = *predicted;
  return s;
}

// |timeline| with every time multiplied by |numerator| / |denominator|.
StepTimeline Scaled(const StepTimeline& timeline, int64_t numerator, int64_t denominator) {
  const auto scale = [&](SimTime t) {
    return SimTime::FromNanos(t.nanos() * numerator / denominator);
  };
  StepTimeline out = timeline;
  for (SimTime& t : out.start) t = scale(t);
  for (SimTime& t : out.end) t = scale(t);
  for (SimTime& t : out.stream_busy) t = scale(t);
  out.makespan = scale(out.makespan);
  return out;
}

void Move(StepTimeline& timeline, TaskId task, int64_t start_us, int64_t end_us) {
  timeline.start[task] = Us(start_us);
  timeline.end[task] = Us(end_us);
}

Result<StepComparison> CompareOne(const TwoStages& s, const StepTimeline& measured,
                                  SimTime margin = Us(1),
                                  std::optional<std::vector<int64_t>> peaks = std::nullopt) {
  const std::vector<StepTimeline> steps = {measured};
  return CompareStep(s.step, s.baselines, s.predicted, steps, std::move(peaks), margin);
}

TEST(TwoStageFixture, SimulatesAsDrawn) {
  const TwoStages s = MakeTwoStages();
  EXPECT_EQ(s.predicted.start[s.f1], Us(14));
  EXPECT_EQ(s.predicted.start[s.b0], Us(10));
  EXPECT_EQ(s.predicted.start[s.reduce0], Us(44));
  EXPECT_EQ(s.predicted.makespan, Us(50));
}

TEST(StepUtilization, TwoStagesIdleIsBubble) {
  const TwoStages s = MakeTwoStages();
  const StepUtilization u = MeasureUtilization(s.step, s.predicted);
  // Both stages run 30 us of compute within the pipeline's 44 us.
  EXPECT_NEAR(u.span_s, 44e-6, 1e-15);
  ASSERT_EQ(u.busy_s.size(), 2u);
  EXPECT_NEAR(u.busy_s[0], 30e-6, 1e-15);
  EXPECT_NEAR(u.busy_s[1], 30e-6, 1e-15);
  EXPECT_NEAR(u.bubble_s[0], 14e-6, 1e-15);
  EXPECT_NEAR(u.bubble_s[1], 14e-6, 1e-15);
  EXPECT_EQ(u.comm_wait_s[0], 0);
  EXPECT_NEAR(u.bubble_fraction, 28.0 / 88.0, 1e-12);
}

// One stage: compute [0,10], its tp collective [10,15], compute [15,25], then a 3 us optimizer;
// a ring transfer [0,12] beside the first compute task.
TEST(StepUtilization, OneStageCountsTpRingWaitAndOptimizer) {
  StepGraph step;
  TaskGraph& g = step.graph;
  step.stages = 1;
  step.replicas = 1;
  step.compute_category = g.Intern("compute");
  step.tp_category = g.Intern("tp");
  step.optimizer_category = g.Intern("optimizer");
  step.cp_category = g.Intern("cp");
  const StreamId compute = g.AddStream(0, "compute"), tp = g.AddStream(0, "tp"),
                 cp = g.AddStream(0, "cp");
  step.compute_stream = {compute};
  const TaskId c1 = g.AddTask(MakeTask(compute, 10, g.Intern("F"), step.compute_category));
  // The ring transfer ends 2 us after the tp collective that follows c1: the stream waits 5 us for
  // tp, then 2 us for the ring (the 7 us after c1 are counted once).
  const TaskId ring = g.AddTask(MakeTask(cp, 17, g.Intern("ring"), step.cp_category));
  const TaskId t1 = g.AddTask(MakeTask(tp, 5, g.Intern("tp"), step.tp_category));
  g.AddDependency(c1, t1);
  const TaskId c2 = g.AddTask(MakeTask(compute, 10, g.Intern("F"), step.compute_category));
  g.AddDependency(t1, c2);
  g.AddDependency(ring, c2);
  g.AddTask(MakeTask(compute, 3, g.Intern("optimizer"), step.optimizer_category));
  step.ring_transfers.push_back({ring, c1});
  Result<StepTimeline> timeline = Simulate(g);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  const StepUtilization u = MeasureUtilization(step, *timeline);
  EXPECT_NEAR(u.span_s, 27e-6, 1e-15);
  EXPECT_NEAR(u.step_s, 30e-6, 1e-15);
  EXPECT_NEAR(u.compute_s[0], 20e-6, 1e-15);
  EXPECT_NEAR(u.busy_s[0], 25e-6, 1e-15);
  EXPECT_NEAR(u.tp_s[0], 5e-6, 1e-15);
  EXPECT_NEAR(u.optimizer_s[0], 3e-6, 1e-15);
  EXPECT_NEAR(u.comm_wait_s[0], 2e-6, 1e-15);
  EXPECT_EQ(u.tail_s[0], 0);
  EXPECT_EQ(u.bubble_s[0], 0);
  EXPECT_EQ(u.bubble_fraction, 0);
}

// One stage whose second pass waits 5 us for a gather: the idle time is communication wait.
TEST(StepUtilization, OneStageIdleIsCommunicationWaitNotBubble) {
  StepGraph step;
  TaskGraph& g = step.graph;
  step.stages = 1;
  step.compute_category = g.Intern("compute");
  step.dp_category = g.Intern("dp");
  const StreamId compute = g.AddStream(0, "compute"), dp = g.AddStream(0, "dp");
  const TaskId gather = g.AddTask(MakeTask(dp, 15, g.Intern("gather"), step.dp_category));
  g.AddTask(MakeTask(compute, 10, g.Intern("F"), step.compute_category));
  const TaskId second = g.AddTask(MakeTask(compute, 10, g.Intern("F"), step.compute_category));
  g.AddDependency(gather, second);
  Result<StepTimeline> timeline = Simulate(g);
  ASSERT_TRUE(timeline.ok()) << timeline.status().message();
  const StepUtilization u = MeasureUtilization(step, *timeline);
  EXPECT_NEAR(u.span_s, 25e-6, 1e-15);
  EXPECT_NEAR(u.comm_wait_s[0], 5e-6, 1e-15);
  EXPECT_EQ(u.bubble_s[0], 0);
  EXPECT_EQ(u.bubble_fraction, 0);
}

TEST(StepUtilization, AgreesWithTheSimulatorsSummary) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s;
  s.tp = 8;
  s.pp = 8;
  s.dp = 2;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.seq_len = 2048;
  s.zero_stage = 1;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const StepUtilization u = MeasureUtilization(r->step, r->timeline);
  EXPECT_EQ(u.bubble_fraction, r->bubble_fraction);
  ASSERT_EQ(r->stages.size(), u.bubble_s.size());
  for (size_t i = 0; i < u.bubble_s.size(); ++i) {
    EXPECT_EQ(u.bubble_s[i], r->stages[i].bubble_s);
    EXPECT_EQ(u.compute_s[i], r->stages[i].compute_s);
  }
  EXPECT_GT(u.bubble_fraction, 0.05);
}

TEST(CompareStep, MeasuredEqualToSimulatedStepHasNoErrors) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 4;
  s.micro_batch = 1;
  s.global_batch = 32;
  s.seq_len = 2048;
  Result<PreparedStep> prepared = PrepareTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  Result<SimulationResult> r = SimulatePreparedStep(in.model, in.cluster, *prepared);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<MemoryBaseline> baselines = ModelStateBaselines(r->step, *prepared);
  const std::vector<StepTimeline> measured = {r->timeline};
  Result<StepComparison> c =
      CompareStep(r->step, baselines, r->timeline, measured, std::nullopt, Us(1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->step_time_s.predicted, r->step_time_s);
  EXPECT_EQ(c->step_time_s.error_pct, 0);
  EXPECT_EQ(c->bubble_fraction.predicted, r->bubble_fraction);
  EXPECT_EQ(c->peak_memory_bytes.predicted, static_cast<double>(r->peak_memory_bytes));
  EXPECT_EQ(c->peak_memory_bytes.error_pct, 0);
  EXPECT_EQ(c->order.dependency_violations, 0);
  EXPECT_EQ(c->order.rendezvous_violations, 0);
  EXPECT_EQ(c->order.order_inversions, 0);
  EXPECT_GT(c->order.pairs_checked, 1000);
  EXPECT_TRUE(c->order.examples.empty());
  ASSERT_GE(c->classes.size(), 3u);
  bool has_compute = false;
  for (const ClassComparison& k : c->classes) {
    EXPECT_EQ(k.seconds.error_pct, 0) << k.name;
    has_compute = has_compute || k.name == "compute";
  }
  EXPECT_TRUE(has_compute);
}

TEST(CompareStep, ScaledDurationsGiveTenPercentErrors) {
  const TwoStages s = MakeTwoStages();
  Result<StepComparison> c = CompareOne(s, Scaled(s.predicted, 11, 10));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->steps, 1);
  EXPECT_NEAR(c->step_time_s.predicted, 50e-6, 1e-15);
  EXPECT_NEAR(c->step_time_s.measured, 55e-6, 1e-15);
  EXPECT_NEAR(c->step_time_s.error_pct, 10, 1e-9);
  EXPECT_NEAR(c->bubble_fraction.predicted, 28.0 / 88.0, 1e-12);
  EXPECT_NEAR(c->bubble_fraction.error_pct, 0, 1e-9);
  EXPECT_EQ(c->peak_memory_bytes.predicted, 1100);
  EXPECT_EQ(c->peak_memory_bytes.error_pct, 0);
  ASSERT_EQ(c->classes.size(), 3u);
  EXPECT_EQ(c->classes[0].name, "compute");
  EXPECT_EQ(c->classes[0].tasks, 4);
  EXPECT_NEAR(c->classes[0].seconds.predicted, 60e-6, 1e-15);
  EXPECT_EQ(c->classes[1].name, "pp");
  EXPECT_EQ(c->classes[2].name, "dp");
  EXPECT_NEAR(c->classes[2].seconds.predicted, 12e-6, 1e-15);
  for (const ClassComparison& k : c->classes) EXPECT_NEAR(k.seconds.error_pct, 10, 1e-9) << k.name;
  EXPECT_EQ(c->order.dependency_violations, 0);
  EXPECT_EQ(c->order.rendezvous_violations, 0);
  EXPECT_EQ(c->order.order_inversions, 0);
  // Rank 0: F0-send, F0-all-reduce, B0-all-reduce (send and B0 both start at 10 us); rank 1:
  // F0-all-reduce, B0-all-reduce.
  EXPECT_EQ(c->order.pairs_checked, 5);
}

TEST(CompareStep, MarginLeavesOutPairsPredictedCloseTogether) {
  const TwoStages s = MakeTwoStages();
  Result<StepComparison> c = CompareOne(s, s.predicted, Us(25));
  ASSERT_TRUE(c.ok()) << c.status().message();
  // 25 us or more apart: F0-all-reduce and B0-all-reduce on rank 0, F0-all-reduce on rank 1.
  EXPECT_EQ(c->order.pairs_checked, 3);
}

TEST(CompareStep, SwappedOrderIsAnInversion) {
  StepGraph step;
  TaskGraph& g = step.graph;
  step.stages = 1;
  const StreamId a_stream = g.AddStream(0, "compute"), b_stream = g.AddStream(0, "comm");
  const TaskId a = g.AddTask(MakeTask(a_stream, 5, g.Intern("a"), kEmptyName));
  g.AddTask(MakeTask(b_stream, 10, g.Intern("c"), kEmptyName));
  const TaskId b = g.AddTask(MakeTask(b_stream, 5, g.Intern("b"), kEmptyName));
  Result<StepTimeline> predicted = Simulate(g);
  ASSERT_TRUE(predicted.ok()) << predicted.status().message();
  StepTimeline measured = *predicted;
  Move(measured, a, 12, 17);
  measured.makespan = Us(17);
  const std::vector<StepTimeline> steps = {measured};
  Result<StepComparison> c = CompareStep(step, {}, *predicted, steps, std::nullopt, Us(1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->order.pairs_checked, 1);  // a-c start together
  EXPECT_EQ(c->order.order_inversions, 1);
  EXPECT_EQ(c->order.dependency_violations, 0);
  ASSERT_EQ(c->order.examples.size(), 1u);
  EXPECT_NE(c->order.examples[0].find(g.DescribeTask(a)), std::string::npos)
      << c->order.examples[0];
  EXPECT_NE(c->order.examples[0].find(g.DescribeTask(b)), std::string::npos)
      << c->order.examples[0];
  ASSERT_EQ(c->classes.size(), 1u);
  EXPECT_EQ(c->classes[0].name, "other");
}

// Every pair of tasks on one rank and different streams, counted one by one.
int64_t BruteForceInversions(const TaskGraph& g, const StepTimeline& predicted,
                             const StepTimeline& measured, SimTime margin, int64_t& pairs) {
  const SimTime gap = Max(margin, SimTime::FromNanos(1));
  int64_t inversions = 0;
  pairs = 0;
  for (TaskId a = 0; a < g.num_tasks(); ++a) {
    for (TaskId b = 0; b < g.num_tasks(); ++b) {
      if (g.rank_of(a) != g.rank_of(b) || g.task(a).stream == g.task(b).stream) continue;
      if (predicted.start[a] + gap > predicted.start[b]) continue;
      ++pairs;
      if (measured.start[b] < measured.start[a]) ++inversions;
    }
  }
  return inversions;
}

TEST(CompareStep, InversionCountMatchesBruteForce) {
  StepGraph step;
  TaskGraph& g = step.graph;
  step.stages = 2;
  std::mt19937 random(7);
  std::uniform_int_distribution<int64_t> micros(0, 6);
  std::vector<StreamId> streams;
  for (int32_t rank = 0; rank < 2; ++rank) {
    for (int32_t i = 0; i < 3; ++i) streams.push_back(g.AddStream(rank, "s" + std::to_string(i)));
  }
  for (int32_t i = 0; i < 300; ++i) {
    g.AddTask(
        MakeTask(streams[random() % streams.size()], micros(random), g.Intern("t"), kEmptyName));
  }
  Result<StepTimeline> predicted = Simulate(g);
  ASSERT_TRUE(predicted.ok()) << predicted.status().message();
  StepTimeline measured = *predicted;
  for (TaskId id = 0; id < g.num_tasks(); ++id) {
    const SimTime jitter = Us(micros(random)) - Us(3);
    measured.start[id] = Max(SimTime(), measured.start[id] + jitter);
    measured.end[id] = measured.start[id] + g.task(id).duration;
  }
  measured.start_sequence.clear();
  const std::vector<StepTimeline> steps = {measured};
  for (int64_t margin_us : {0, 1, 5}) {
    Result<StepComparison> c =
        CompareStep(step, {}, *predicted, steps, std::nullopt, Us(margin_us));
    ASSERT_TRUE(c.ok()) << c.status().message();
    int64_t pairs = 0;
    const int64_t inversions = BruteForceInversions(g, *predicted, measured, Us(margin_us), pairs);
    EXPECT_EQ(c->order.order_inversions, inversions) << margin_us;
    EXPECT_EQ(c->order.pairs_checked, pairs) << margin_us;
    EXPECT_GT(inversions, 0);
    EXPECT_EQ(c->order.examples.size(), 5u);
  }
}

TEST(CompareStep, ViolatedDependencyIsCountedAndNamed) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.f1, 12, 22);  // before the send that feeds it ends at 14 us
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->order.dependency_violations, 1);
  EXPECT_EQ(c->order.rendezvous_violations, 0);
  ASSERT_FALSE(c->order.examples.empty());
  const std::string& example = c->order.examples[0];
  EXPECT_NE(example.find("dependency violated"), std::string::npos) << example;
  EXPECT_NE(example.find(s.step.graph.DescribeTask(s.f1)), std::string::npos) << example;
  EXPECT_NE(example.find(s.step.graph.DescribeTask(s.send)), std::string::npos) << example;
}

TEST(CompareStep, StreamOrderIsADependency) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.b0, 8, 28);  // before F0 on its stream ends at 10 us
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->order.dependency_violations, 1);
  ASSERT_FALSE(c->order.examples.empty());
  EXPECT_NE(c->order.examples[0].find("stream order violated"), std::string::npos)
      << c->order.examples[0];
}

TEST(CompareStep, CollectiveMembersThatDoNotOverlapBreakRendezvous) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.reduce0, 30, 36);
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->order.rendezvous_violations, 1);
  EXPECT_EQ(c->order.dependency_violations, 0);
  ASSERT_EQ(c->order.examples.size(), 1u);
  EXPECT_NE(c->order.examples[0].find(s.step.graph.DescribeTask(s.reduce0)), std::string::npos);
  // Touching at one instant is a common point.
  Move(measured, s.reduce0, 38, 44);
  c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->order.rendezvous_violations, 0);
}

TEST(CompareStep, MedianOfThreeStepsIsTheMiddleOne) {
  const TwoStages s = MakeTwoStages();
  const std::vector<StepTimeline> steps = {s.predicted, Scaled(s.predicted, 13, 10),
                                           Scaled(s.predicted, 11, 10)};
  Result<StepComparison> c =
      CompareStep(s.step, s.baselines, s.predicted, steps, std::nullopt, Us(1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->steps, 3);
  EXPECT_NEAR(c->step_time_s.measured, 55e-6, 1e-15);
  EXPECT_NEAR(c->measured_min_step_s, 50e-6, 1e-15);
  EXPECT_NEAR(c->measured_max_step_s, 65e-6, 1e-15);
  EXPECT_NEAR(c->classes[0].seconds.error_pct, 10, 1e-9);
}

TEST(CompareStep, EvenCountTakesTheLowerMiddleStep) {
  const TwoStages s = MakeTwoStages();
  const std::vector<StepTimeline> steps = {Scaled(s.predicted, 12, 10), s.predicted,
                                           Scaled(s.predicted, 13, 10),
                                           Scaled(s.predicted, 11, 10)};
  Result<StepComparison> c =
      CompareStep(s.step, s.baselines, s.predicted, steps, std::nullopt, Us(1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_NEAR(c->step_time_s.measured, 55e-6, 1e-15);
  EXPECT_NEAR(c->classes[1].seconds.error_pct, 10, 1e-9);
}

TEST(CompareStep, LateFreeRaisesTheMeasuredPeak) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.b0, 10, 46);  // frees its activations after the all-reduce's buffer is taken
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->peak_memory_bytes.predicted, 1100);
  EXPECT_EQ(c->peak_memory_bytes.measured, 1150);
  EXPECT_NEAR(c->peak_memory_bytes.error_pct, 100.0 * 50 / 1100, 1e-9);
  EXPECT_EQ(c->order.dependency_violations, 0);
}

TEST(CompareStep, MeasuredWithoutStartSequenceReplaysMemory) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  measured.start_sequence.clear();
  measured.stream_busy.clear();
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->peak_memory_bytes.measured, 1100);
}

TEST(CompareStep, GivenMeasuredPeaksOverrideTheReplay) {
  const TwoStages s = MakeTwoStages();
  Result<StepComparison> c = CompareOne(s, s.predicted, Us(1), std::vector<int64_t>{2200, 1650});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->peak_memory_bytes.measured, 2200);
  EXPECT_NEAR(c->peak_memory_bytes.error_pct, 100, 1e-9);
  Result<StepComparison> wrong = CompareOne(s, s.predicted, Us(1), std::vector<int64_t>{2200});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("one per rank"), std::string::npos)
      << wrong.status().message();
}

TEST(CompareStep, NoMeasuredStepsIsInvalid) {
  const TwoStages s = MakeTwoStages();
  Result<StepComparison> c = CompareStep(s.step, s.baselines, s.predicted, {}, std::nullopt, Us(1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
}

TEST(CompareStep, TimelineOfAnotherSizeIsInvalid) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  measured.end.pop_back();
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("measured step 0"), std::string::npos)
      << c.status().message();
}

TEST(CompareStep, TaskEndingBeforeItStartsIsInvalid) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.send, 14, 10);
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(s.step.graph.DescribeTask(s.send)), std::string::npos);
}

TEST(CompareStep, ErrorIsInfiniteWhenOnlyTheMeasurementIsNonZero) {
  StepGraph step;
  TaskGraph& g = step.graph;
  step.stages = 1;
  const TaskId t =
      g.AddTask(MakeTask(g.AddStream(0, "compute"), 0, g.Intern("t"), g.Intern("marker")));
  Result<StepTimeline> predicted = Simulate(g);
  ASSERT_TRUE(predicted.ok()) << predicted.status().message();
  StepTimeline measured = *predicted;
  Move(measured, t, 0, 2);
  measured.makespan = Us(2);
  const std::vector<StepTimeline> steps = {measured};
  Result<StepComparison> c = CompareStep(step, {}, *predicted, steps, std::nullopt, Us(1));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(std::isinf(c->classes[0].seconds.error_pct));
  EXPECT_TRUE(std::isinf(c->step_time_s.error_pct));
  EXPECT_EQ(c->bubble_fraction.error_pct, 0);
  const nlohmann::ordered_json json = StepComparisonJson(*c);
  EXPECT_TRUE(json["step_time"]["error_fraction"].is_null());
  EXPECT_TRUE(json["classes"][0]["error_fraction"].is_null());
}

TEST(StepComparisonJson, WritesSchemaAndKeysWithUnits) {
  const TwoStages s = MakeTwoStages();
  StepTimeline measured = s.predicted;
  Move(measured, s.f1, 12, 22);
  Result<StepComparison> c = CompareOne(s, measured);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const nlohmann::ordered_json json = StepComparisonJson(*c);
  EXPECT_EQ(json["schema"], "loom.validate/2");
  EXPECT_EQ(json["steps"], 1);
  EXPECT_DOUBLE_EQ(json["step_time"]["predicted_s"].get<double>(), 50e-6);
  EXPECT_DOUBLE_EQ(json["step_time"]["measured_min_s"].get<double>(), 50e-6);
  EXPECT_TRUE(json["step_time"].contains("measured_max_s"));
  EXPECT_DOUBLE_EQ(json["bubble_fraction"]["predicted"].get<double>(),
                   c->bubble_fraction.predicted);
  EXPECT_EQ(json["peak_memory"]["predicted_bytes"], 1100);
  EXPECT_TRUE(json["peak_memory"]["measured_bytes"].is_number_integer());
  EXPECT_EQ(json["peak_memory"]["error_fraction"], 0);
  EXPECT_NEAR(json["step_time"]["error_fraction"].get<double>(), c->step_time_s.error_pct / 100,
              1e-12);
  EXPECT_EQ(json["classes"][0]["name"], "compute");
  EXPECT_EQ(json["classes"][0]["tasks"], 4);
  EXPECT_TRUE(json["classes"][0].contains("measured_s"));
  EXPECT_EQ(json["order"]["dependency_violations"], 1);
  EXPECT_EQ(json["order"]["rendezvous_violations"], 0);
  EXPECT_TRUE(json["order"].contains("order_inversions"));
  EXPECT_TRUE(json["order"].contains("pairs_checked"));
  EXPECT_EQ(json["order"]["examples"].size(), c->order.examples.size());
}

}  // namespace
}  // namespace loom
