#include "exec/exec_plan.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "program/plan_file.h"
#include "program/unfold.h"
#include "sim/sim_test_support.h"
#include "sim/simulated_plan.h"

namespace loom {
namespace {

constexpr SimTime kMs = SimTime::FromNanos(1'000'000);

TaskId Add(TaskGraph& g, StreamId stream, const char* name) {
  Task t;
  t.stream = stream;
  t.duration = kMs;
  t.name = g.Intern(name);
  return g.AddTask(t);
}

TEST(ExecPlan, SplitsDependenciesIntoLocalAndRemoteAndSharesCommunicators) {
  TaskGraph g;
  const StreamId c0 = g.AddStream(0, "compute"), d0 = g.AddStream(0, "dp");
  const StreamId c1 = g.AddStream(1, "compute"), d1 = g.AddStream(1, "dp");
  const TaskId f0 = Add(g, c0, "F"), f1 = Add(g, c1, "F");
  const TaskId r0 = Add(g, d0, "reduce"), r1 = Add(g, d1, "reduce");
  const TaskId s0 = Add(g, d0, "reduce 2"), s1 = Add(g, d1, "reduce 2");
  g.AddDependency(f0, f1);  // across ranks
  g.AddDependency(f0, r0);  // same rank, other stream
  g.AddDependency(f1, r1);
  g.AddDependency(r0, s0);  // same stream: its order already
  std::vector<TaskId> first{r0, r1}, second{s0, s1};
  g.AddCollective(first);
  g.AddCollective(second);
  Result<ExecPlan> plan = PlanExecution(g, 2);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->ranks().size(), 2u);
  EXPECT_EQ(plan->ranks()[0].streams, (std::vector<StreamId>{c0, d0}));
  EXPECT_EQ(plan->ranks()[0].stream_tasks[1], (std::vector<TaskId>{r0, s0}));
  EXPECT_EQ(plan->remote_waits(f1), 1);
  EXPECT_EQ(plan->local_waits(f1), 0);
  EXPECT_EQ(plan->local_waits(r0), 1);
  EXPECT_EQ(plan->local_waits(s0), 0);
  EXPECT_EQ(
      std::vector<TaskId>(plan->remote_successors(f0).begin(), plan->remote_successors(f0).end()),
      std::vector<TaskId>{f1});
  EXPECT_EQ(
      std::vector<TaskId>(plan->local_successors(f0).begin(), plan->local_successors(f0).end()),
      std::vector<TaskId>{r0});
  // Both collectives are between ranks 0 and 1 on their "dp" streams: one communicator.
  ASSERT_EQ(plan->communicators().size(), 1u);
  EXPECT_EQ(plan->communicators()[0].ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(plan->communicator_of(0), 0);
  EXPECT_EQ(plan->communicator_of(1), 0);
}

TEST(ExecPlan, RefusesCollectivesInOppositeOrdersAsADeadlock) {
  TaskGraph g;
  const StreamId d0 = g.AddStream(0, "dp"), d1 = g.AddStream(1, "dp");
  const TaskId a0 = Add(g, d0, "a"), b0 = Add(g, d0, "b");
  const TaskId b1 = Add(g, d1, "b"), a1 = Add(g, d1, "a");
  std::vector<TaskId> a{a0, a1}, b{b0, b1};
  g.AddCollective(a);
  g.AddCollective(b);
  Result<ExecPlan> plan = PlanExecution(g, 2);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("would deadlock, so nothing was run"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("'a'"), std::string::npos) << plan.status().message();
}

TEST(ExecPlan, RefusesRanksWaitingForEachOther) {
  TaskGraph g;
  const StreamId c0 = g.AddStream(0, "compute"), c1 = g.AddStream(1, "compute");
  const TaskId x0 = Add(g, c0, "recv from 1"), y0 = Add(g, c0, "send to 1");
  const TaskId x1 = Add(g, c1, "recv from 0"), y1 = Add(g, c1, "send to 0");
  g.AddDependency(y1, x0);
  g.AddDependency(y0, x1);
  Result<ExecPlan> plan = PlanExecution(g, 2);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("would deadlock"), std::string::npos)
      << plan.status().message();
}

TEST(ExecPlan, RefusesAWorldOfAnotherSizeAndSaysHowToLaunch) {
  TaskGraph g;
  Add(g, g.AddStream(0, "compute"), "F");
  Add(g, g.AddStream(1, "compute"), "F");
  Result<ExecPlan> plan = PlanExecution(g, 4);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("for 2 ranks, but 4 processes"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("mpirun -np 2"), std::string::npos);
}

TEST(ExecPlan, RefusesACollectiveWithTwoMembersOnOneRank) {
  TaskGraph g;
  const TaskId a = Add(g, g.AddStream(0, "dp"), "a");
  const TaskId b = Add(g, g.AddStream(0, "tp"), "a");
  std::vector<TaskId> members{a, b};
  g.AddCollective(members);
  Result<ExecPlan> plan = PlanExecution(g, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("two members on rank 0"), std::string::npos)
      << plan.status().message();
}

TEST(ExecPlan, RefusesACollectiveAcrossDifferentlyNamedStreams) {
  TaskGraph g;
  const TaskId a = Add(g, g.AddStream(0, "dp"), "a");
  const TaskId b = Add(g, g.AddStream(1, "tp"), "a");
  std::vector<TaskId> members{a, b};
  g.AddCollective(members);
  Result<ExecPlan> plan = PlanExecution(g, 2);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("streams 'dp' and 'tp'"), std::string::npos)
      << plan.status().message();
}

TEST(ExecPlan, RefusesARankWithNothingToRun) {
  TaskGraph g;
  Add(g, g.AddStream(0, "compute"), "F");
  g.AddStream(1, "compute");
  Result<ExecPlan> plan = PlanExecution(g, 2);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("rank 1 has no tasks"), std::string::npos)
      << plan.status().message();
}

TEST(ExecPlan, PassesOnTheGraphsBuildError) {
  TaskGraph g;
  Add(g, g.AddStream(0, "compute"), "F");
  g.AddDependency(0, 5);
  Result<ExecPlan> plan = PlanExecution(g, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(), g.build_status().message());
}

// validate runs a plan file as it reads it back, unfolded to its GPUs: Llama 3 8B on one DGX H100
// node with pp = 4 and dp = 2 plans on one process per GPU, with no deadlock, under 1F1B and under
// ZB-V.
TEST(ExecPlan, PlansAPlanFileReadBackFromItsText) {
  for (ScheduleKind schedule : {ScheduleKind::k1F1B, ScheduleKind::kZbV}) {
    const PlanFile plan = Llama8bPlan(PipelineStrategy(4, 2, 8, schedule));
    ASSERT_GT(plan.step.graph.num_tasks(), 0);
    Result<PlanFile> back = ParsePlanFile(nlohmann::json::parse(PlanFileText(plan)), "plan.json");
    ASSERT_TRUE(back.ok()) << back.status().message();
    Result<PlanFile> unfolded = UnfoldPlan(*back);
    ASSERT_TRUE(unfolded.ok()) << unfolded.status().message();
    Result<ExecPlan> exec = PlanExecution(unfolded->step.graph, 8);
    EXPECT_TRUE(exec.ok()) << exec.status().message();
    // The replicas reduce their gradients together.
    EXPECT_GT(exec->communicators().size(), 0u);
  }
}

}  // namespace
}  // namespace loom
