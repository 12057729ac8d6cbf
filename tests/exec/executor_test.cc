// The executor runs rank programs as the simulator times them: with a fake clock exactly, and
// with real threads and real waits in the order the simulator predicted.

#include "exec/executor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/exec_plan.h"
#include "exec/loopback_backend.h"
#include "exec/timed_backend.h"
#include "schedule/schedule.h"
#include "sim/engine.h"
#include "sim/step_builder.h"
#include "sim/step_comparison.h"

namespace loom {
namespace {

constexpr int64_t kMsNanos = 1'000'000;
SimTime Ms(double ms) { return SimTime::FromSeconds(ms * 1e-3); }

// Time that passes only when slept.
class FakeClock : public Clock {
 public:
  double NowSeconds() override { return now_s_; }
  void SleepSeconds(double seconds) override { now_s_ += seconds; }

 private:
  double now_s_ = 1000;
};

// One rank alone: no messages ever.
class NoTransport : public MessageTransport {
 public:
  Status PostCollective(TaskId, GroupId, int32_t) override {
    return Status::Internal("no collectives here");
  }
  Status Send(TaskId, int32_t) override { return Status::Internal("no other ranks"); }
  Status Poll(std::vector<TaskId>*, std::vector<TaskId>*) override { return Status::Ok(); }
  Status Flush() override { return Status::Ok(); }
};

TaskId Add(TaskGraph& g, StreamId stream, SimTime duration, const char* name) {
  Task t;
  t.stream = stream;
  t.duration = duration;
  t.name = g.Intern(name);
  return g.AddTask(t);
}

// compute: F (10 ms) ... G (5 ms); comm: send (2 ms) after F; G waits for the send.
TaskGraph OneRankWithTwoStreams() {
  TaskGraph g;
  const StreamId compute = g.AddStream(0, "compute"), comm = g.AddStream(0, "comm");
  const TaskId f = Add(g, compute, Ms(10), "F");
  const TaskId g1 = Add(g, compute, Ms(5), "G");
  const TaskId send = Add(g, comm, Ms(2), "send");
  g.AddDependency(f, send);
  g.AddDependency(send, g1);
  return g;
}

TEST(Executor, RunsOneRankExactlyAsTheEngineTimesItWithAFakeClock) {
  const TaskGraph g = OneRankWithTwoStreams();
  Result<ExecPlan> plan = PlanExecution(g, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  FakeClock clock;
  NoTransport transport;
  TimedBackend backend(g, transport, clock, 1.0);
  Result<RankTimes> times = RunRankProgram(*plan, 0, backend);
  ASSERT_TRUE(times.ok()) << times.status().message();
  Result<StepTimeline> predicted = Simulate(g);
  ASSERT_TRUE(predicted.ok());
  const StepTimeline measured = MeasuredTimeline(g, {*times});
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    EXPECT_EQ(measured.start[t], predicted->start[t]) << g.DescribeTask(t);
    EXPECT_EQ(measured.end[t], predicted->end[t]) << g.DescribeTask(t);
  }
  EXPECT_EQ(measured.makespan, Ms(17));
  EXPECT_EQ(measured.stream_busy[0], Ms(15));
  EXPECT_EQ(measured.start_sequence, (std::vector<int32_t>{0, 2, 1}));
}

TEST(Executor, PlanTimeRunsFasterByTheSpeedup) {
  const TaskGraph g = OneRankWithTwoStreams();
  Result<ExecPlan> plan = PlanExecution(g, 1);
  ASSERT_TRUE(plan.ok());
  FakeClock clock;
  NoTransport transport;
  TimedBackend backend(g, transport, clock, 10.0);
  const double real_start_s = clock.NowSeconds();
  Result<RankTimes> times = RunRankProgram(*plan, 0, backend);
  ASSERT_TRUE(times.ok()) << times.status().message();
  EXPECT_EQ(MeasuredTimeline(g, {*times}).makespan, Ms(17));
  EXPECT_NEAR(clock.NowSeconds() - real_start_s, 17e-4, 1e-9);
}

// Starts nothing that ever ends.
class FrozenBackend : public TaskBackend {
 public:
  Status Start(TaskId) override { return Status::Ok(); }
  Status StartCollective(TaskId, GroupId, int32_t) override { return Status::Ok(); }
  Status Notify(TaskId, int32_t) override { return Status::Ok(); }
  Status Poll(std::vector<TaskEnd>*, std::vector<TaskId>*) override {
    now_ += Ms(1);
    return Status::Ok();
  }
  SimTime Now() override { return now_; }

 private:
  SimTime now_;
};

TEST(Executor, GivesUpAfterTheTimeoutNamingWhatStillWaits) {
  const TaskGraph g = OneRankWithTwoStreams();
  Result<ExecPlan> plan = PlanExecution(g, 1);
  ASSERT_TRUE(plan.ok());
  FrozenBackend backend;
  RunOptions options;
  options.timeout = Ms(50);
  Result<RankTimes> times = RunRankProgram(*plan, 0, backend, options);
  ASSERT_FALSE(times.ok());
  EXPECT_EQ(times.status().code(), Status::Code::kDeadlineExceeded);
  const std::string& m = times.status().message();
  EXPECT_NE(m.find("rank 0 did not finish its step"), std::string::npos) << m;
  EXPECT_NE(m.find("'F'"), std::string::npos) << m;
  EXPECT_NE(m.find("started, never ended"), std::string::npos) << m;
  EXPECT_NE(m.find("'send'"), std::string::npos) << m;
  EXPECT_NE(m.find("waits for 1 dependencies"), std::string::npos) << m;
}

// A pipeline of |stages| stages and |replicas| data-parallel replicas with F, B and W of
// 4, 4 and 2 ms per chunk, 0.5 ms transfers and, with replicas, a 1 ms gradient all-reduce per
// chunk and a 1 ms optimizer step.
StepGraph Pipeline(ScheduleKind kind, int32_t stages, int32_t micro_batches, int32_t chunks,
                   int32_t replicas) {
  Result<PipelineSchedule> schedule = BuildSchedule(kind, stages, micro_batches, chunks);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  ChunkCost c;
  c.forward.time = Ms(4);
  c.backward_input.time = Ms(4);
  c.backward_weight.time = Ms(2);
  c.kept_activation_bytes = 1 << 20;
  const int32_t v = stages * chunks;
  StepGraphConfig config;
  config.replicas = replicas;
  config.pipeline.p2p_time = Ms(0.5);
  config.dp.optimizer_time.assign(static_cast<size_t>(stages), Ms(1));
  config.dp.param_gather_time.assign(static_cast<size_t>(stages), SimTime());
  if (replicas > 1) {
    config.dp.buckets.assign(static_cast<size_t>(v), 1);
    config.dp.bucket_time.assign(static_cast<size_t>(v), Ms(1));
  }
  return BuildStepGraph(*schedule, std::vector<ChunkCost>(static_cast<size_t>(v), c), config);
}

struct PipelineCase {
  const char* name;
  ScheduleKind kind;
  int32_t stages, micro_batches, chunks, replicas;
};

class ExecutorPipeline : public testing::TestWithParam<PipelineCase> {};

TEST_P(ExecutorPipeline, ThreadsRunTheSimulatorsOrder) {
  const PipelineCase& c = GetParam();
  const StepGraph step = Pipeline(c.kind, c.stages, c.micro_batches, c.chunks, c.replicas);
  Result<ExecPlan> plan = PlanExecution(step.graph, c.stages * c.replicas);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Result<StepTimeline> predicted = Simulate(step.graph);
  ASSERT_TRUE(predicted.ok());
  LoopbackNetwork network(*plan);
  Result<StepTimeline> measured = network.RunStep(1.0);
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  std::vector<StepTimeline> steps{*measured};
  Result<StepComparison> comparison = CompareStep(step, {}, *predicted, steps, std::nullopt, Ms(2));
  ASSERT_TRUE(comparison.ok()) << comparison.status().message();
  const OrderCheck& order = comparison->order;
  const std::string examples = order.examples.empty() ? "" : order.examples[0];
  EXPECT_EQ(order.dependency_violations, 0) << examples;
  EXPECT_EQ(order.rendezvous_violations, 0) << examples;
  EXPECT_EQ(order.order_inversions, 0) << examples;
  EXPECT_GT(order.pairs_checked, 0);
  // Waits never end early; what the execution adds (polling, threads sharing two cores) stays
  // well under the step.
  EXPECT_GE(measured->makespan.nanos(), predicted->makespan.nanos() - c.stages * kMsNanos / 1000);
  EXPECT_LT(measured->makespan.ToSeconds(), 1.5 * predicted->makespan.ToSeconds());
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, ExecutorPipeline,
    testing::Values(PipelineCase{"OneFOneB", ScheduleKind::k1F1B, 4, 8, 1, 1},
                    PipelineCase{"Interleaved", ScheduleKind::kInterleaved, 4, 8, 2, 1},
                    PipelineCase{"ZbH1", ScheduleKind::kZbH1, 4, 8, 1, 1},
                    PipelineCase{"ZbV", ScheduleKind::kZbV, 4, 8, 2, 1},
                    PipelineCase{"OneFOneBTwoReplicas", ScheduleKind::k1F1B, 2, 4, 1, 2}),
    [](const testing::TestParamInfo<PipelineCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom
