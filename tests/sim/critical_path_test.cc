#include "sim/critical_path.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom {
namespace {

SimTime PathMicros(double micros) { return SimTime::FromMicros(micros); }

TaskId Add(TaskGraph& graph, StreamId stream, double micros, LinkId link = kNoLink) {
  return graph.AddTask({.stream = stream, .link = link, .duration = PathMicros(micros)});
}

std::vector<CriticalStep> PathOf(const TaskGraph& graph, SimTime* makespan = nullptr) {
  const Result<StepTimeline> timeline = Simulate(graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().ToString();
  if (!timeline.ok()) return {};
  if (makespan != nullptr) *makespan = timeline->makespan;
  std::vector<CriticalStep> path = CriticalPath(graph, *timeline);
  SimTime total;
  for (const CriticalStep& step : path) {
    total += timeline->end[step.task] - timeline->start[step.task];
  }
  EXPECT_EQ(total, timeline->makespan) << "the path must cover the step without gaps";
  return path;
}

void ExpectPath(const std::vector<CriticalStep>& path, const std::vector<TaskId>& tasks,
                const std::vector<Binding>& bindings) {
  ASSERT_EQ(path.size(), tasks.size());
  for (size_t i = 0; i < path.size(); ++i) {
    EXPECT_EQ(path[i].task, tasks[i]) << "step " << i;
    EXPECT_EQ(path[i].bound_by, bindings[i]) << "step " << i;
  }
}

// Rank 0 computes a (10 us) and sends it (5 us); rank 1 computes c, then b once the send is done.
struct SendGraph {
  explicit SendGraph(double c_micros) {
    const StreamId compute0 = graph.AddStream(0, "compute");
    const StreamId comm0 = graph.AddStream(0, "comm");
    const StreamId compute1 = graph.AddStream(1, "compute");
    a = Add(graph, compute0, 10);
    send = Add(graph, comm0, 5, graph.AddLink("0->1"));
    c = Add(graph, compute1, c_micros);
    b = Add(graph, compute1, 20);
    graph.AddDependency(a, send);
    graph.AddDependency(send, b);
  }
  TaskGraph graph;
  TaskId a, send, c, b;
};

TEST(CriticalPath, FollowsDependenciesThroughASend) {
  const SendGraph g(/*c_micros=*/12);
  SimTime makespan;
  ExpectPath(PathOf(g.graph, &makespan), {g.a, g.send, g.b},
             {Binding::kStepStart, Binding::kDependency, Binding::kDependency});
  EXPECT_EQ(makespan, PathMicros(35));
}

TEST(CriticalPath, FollowsStreamOrderWhenTheStreamWasBusyLonger) {
  const SendGraph g(/*c_micros=*/30);
  SimTime makespan;
  ExpectPath(PathOf(g.graph, &makespan), {g.c, g.b}, {Binding::kStepStart, Binding::kStreamOrder});
  EXPECT_EQ(makespan, PathMicros(50));
}

TEST(CriticalPath, FollowsTheLinksPreviousHolder) {
  TaskGraph graph;
  const LinkId nic = graph.AddLink("nic");
  const TaskId t1 = Add(graph, graph.AddStream(0, "comm"), 10, nic);
  const TaskId t2 = Add(graph, graph.AddStream(1, "comm"), 10, nic);
  const TaskId x = Add(graph, graph.AddStream(1, "compute"), 4);
  graph.AddDependency(t2, x);
  ExpectPath(PathOf(graph), {t1, t2, x},
             {Binding::kStepStart, Binding::kLink, Binding::kDependency});
}

TEST(CriticalPath, GoesThroughTheCollectiveMemberThatArrivedLast) {
  TaskGraph graph;
  const TaskId early = Add(graph, graph.AddStream(0, "compute"), 5);
  const TaskId late = Add(graph, graph.AddStream(1, "compute"), 9);
  const TaskId m0 = Add(graph, graph.AddStream(0, "comm"), 3);
  const TaskId m1 = Add(graph, graph.AddStream(1, "comm"), 3);
  graph.AddCollective(std::vector<TaskId>{m0, m1});
  graph.AddDependency(early, m0);
  graph.AddDependency(late, m1);
  const TaskId y = Add(graph, graph.AddStream(0, "compute2"), 1);
  graph.AddDependency(m0, y);
  ExpectPath(PathOf(graph), {late, m0, y},
             {Binding::kStepStart, Binding::kRendezvous, Binding::kDependency});
}

TEST(CriticalPath, PrefersADependencyOverStreamOrderOnATie) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  const TaskId a = Add(graph, s, 5);
  const TaskId b = Add(graph, s, 5);
  graph.AddDependency(a, b);
  ExpectPath(PathOf(graph), {a, b}, {Binding::kStepStart, Binding::kDependency});
}

TEST(CriticalPath, ZeroLengthTasksDoNotLoop) {
  TaskGraph graph;
  const LinkId nic = graph.AddLink("nic");
  const TaskId a = Add(graph, graph.AddStream(0, "s"), 0, nic);
  const TaskId b = Add(graph, graph.AddStream(1, "s"), 0, nic);
  graph.AddDependency(a, b);
  const std::vector<CriticalStep> path = PathOf(graph);
  ExpectPath(path, {a, b}, {Binding::kStepStart, Binding::kDependency});
}

TEST(CriticalPath, EmptyGraphHasAnEmptyPath) {
  TaskGraph graph;
  EXPECT_TRUE(PathOf(graph).empty());
}

}  // namespace
}  // namespace loom
