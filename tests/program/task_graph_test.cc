#include "program/task_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom {
namespace {

TaskId AddNamed(TaskGraph& graph, StreamId stream, const std::string& name) {
  return graph.AddTask(
      {.stream = stream, .duration = SimTime::FromMicros(1), .name = graph.Intern(name)});
}

TEST(TaskGraph, InternStoresEachStringOnce) {
  TaskGraph graph;
  const NameId f = graph.Intern("F mb0");
  EXPECT_EQ(graph.Intern("F mb0"), f);
  EXPECT_NE(graph.Intern("B mb0"), f);
  EXPECT_EQ(graph.Name(f), "F mb0");
  EXPECT_EQ(graph.Name(kEmptyName), "");
}

TEST(TaskGraph, IdsAreDenseAndTheStreamGivesTheRank) {
  TaskGraph graph;
  const StreamId s0 = graph.AddStream(0, "compute");
  const StreamId s3 = graph.AddStream(3, "comm");
  EXPECT_EQ(s0, 0);
  EXPECT_EQ(s3, 1);
  EXPECT_EQ(AddNamed(graph, s0, "a"), 0);
  EXPECT_EQ(AddNamed(graph, s3, "b"), 1);
  EXPECT_EQ(graph.num_ranks(), 4);
  EXPECT_EQ(graph.rank_of(1), 3);
  EXPECT_EQ(graph.num_pools(), 1);  // the default pool
  EXPECT_EQ(graph.Name(graph.pool_name(kDefaultPool)), "default");
  EXPECT_EQ(graph.DescribeTask(1), "'b' (task 1, rank 3 stream 'comm')");
  EXPECT_TRUE(graph.build_status().ok());
}

TEST(TaskGraph, TaskIsSmallPlainData) {
  // A step holds ~50k tasks; keep them within one 64-byte cache line.
  EXPECT_LE(sizeof(Task), 48u);
}

TEST(TaskGraph, FirstInvalidCallIsRecorded) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  graph.AddTask({.stream = s, .link = 2});
  graph.AddTask({.stream = s, .duration = SimTime::FromNanos(-1)});
  EXPECT_EQ(graph.build_status().message(),
            "task graph: task 0: unknown link; add it with AddLink() first");
  EXPECT_EQ(graph.Validate().message(), graph.build_status().message());
}

TEST(TaskGraph, RouteNamesDistinctKnownChannels) {
  TaskGraph graph;
  const ChannelId tx = graph.AddChannel("rank 0 nic tx");
  const ChannelId rx = graph.AddChannel("rank 1 nic rx");
  const RouteId route = graph.AddRoute(std::vector<ChannelId>{tx, rx});
  EXPECT_EQ(route, 0);
  EXPECT_EQ(graph.num_channels(), 2);
  EXPECT_EQ(graph.Name(graph.channel_name(rx)), "rank 1 nic rx");
  EXPECT_EQ(std::vector<ChannelId>(graph.route_channels(route).begin(),
                                   graph.route_channels(route).end()),
            (std::vector<ChannelId>{tx, rx}));
  EXPECT_TRUE(graph.build_status().ok());

  const auto error_of = [](std::vector<ChannelId> channels) {
    TaskGraph g;
    g.AddChannel("nic tx");
    EXPECT_EQ(g.AddRoute(channels), kNoRoute);
    return g.build_status().message();
  };
  EXPECT_EQ(error_of({}), "task graph: route 0 has no channels");
  EXPECT_EQ(error_of({0, 1}),
            "task graph: route 0: unknown channel 1; add it with AddChannel() first");
  EXPECT_EQ(error_of({0, 0}), "task graph: route 0: channel 'nic tx' is listed twice");
}

TEST(TaskGraph, TaskOnAnUnknownRouteIsAnError) {
  TaskGraph graph;
  graph.AddTask({.stream = graph.AddStream(0, "pp"), .route = 0});
  EXPECT_EQ(graph.build_status().message(),
            "task graph: task 0: unknown route; add it with AddRoute() first");
  EXPECT_EQ(graph.task(0).route, kNoRoute);
}

TEST(TaskGraph, SelfDependencyIsAnError) {
  TaskGraph graph;
  const TaskId a = AddNamed(graph, graph.AddStream(0, "s"), "a");
  graph.AddDependency(a, a);
  EXPECT_EQ(graph.build_status().message(),
            "task graph: 'a' (task 0, rank 0 stream 's') depends on itself");
  EXPECT_TRUE(graph.dependencies().empty());
}

TEST(TaskGraph, UnknownDependencyIsAnError) {
  TaskGraph graph;
  AddNamed(graph, graph.AddStream(0, "s"), "a");
  graph.AddDependency(0, 7);
  EXPECT_EQ(graph.build_status().message(),
            "task graph: dependency 0 -> 7: unknown task id (the graph has 1 tasks)");
}

TEST(TaskGraph, CollectiveMembersMustBeOnDistinctStreams) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "comm");
  const TaskId a = AddNamed(graph, s, "ar");
  const TaskId b = AddNamed(graph, s, "ar");
  EXPECT_EQ(graph.AddCollective(std::vector<TaskId>{a, b}), kNoGroup);
  EXPECT_EQ(
      graph.build_status().message(),
      "task graph: collective 0: 'ar' (task 0, rank 0 stream 'comm') and 'ar' (task 1, rank 0 "
      "stream 'comm') share a stream, so the second could never start with the first");
}

TEST(TaskGraph, TaskJoinsAtMostOneCollective) {
  TaskGraph graph;
  const TaskId a = AddNamed(graph, graph.AddStream(0, "comm"), "ar");
  const TaskId b = AddNamed(graph, graph.AddStream(1, "comm"), "ar");
  EXPECT_EQ(graph.AddCollective(std::vector<TaskId>{a, b}), 0);
  EXPECT_EQ(graph.group_of(b), 0);
  EXPECT_EQ(graph.group_members(0).size(), 2u);
  EXPECT_EQ(graph.AddCollective(std::vector<TaskId>{b}), kNoGroup);
  EXPECT_NE(graph.build_status().message().find("is already in collective 0"), std::string::npos);
}

TEST(TaskGraph, ValidateAcceptsADag) {
  TaskGraph graph;
  const StreamId s0 = graph.AddStream(0, "s");
  const StreamId s1 = graph.AddStream(1, "s");
  const TaskId a = AddNamed(graph, s0, "a");
  const TaskId b = AddNamed(graph, s1, "b");
  AddNamed(graph, s0, "c");
  graph.AddDependency(a, b);
  EXPECT_TRUE(graph.Validate().ok()) << graph.Validate().ToString();
}

TEST(TaskGraph, ValidateNamesTheTasksOnADependencyCycle) {
  TaskGraph graph;
  const TaskId a = AddNamed(graph, graph.AddStream(0, "s"), "a");
  const TaskId b = AddNamed(graph, graph.AddStream(1, "s"), "b");
  const TaskId c = AddNamed(graph, graph.AddStream(2, "s"), "c");
  graph.AddDependency(a, b);
  graph.AddDependency(b, c);
  graph.AddDependency(c, a);
  EXPECT_EQ(graph.Validate().message(),
            "task graph has a cycle, so the step can never finish: 'a' (task 0, rank 0 stream 's') "
            "-[dependency]-> 'b' (task 1, rank 1 stream 's') -[dependency]-> 'c' (task 2, rank 2 "
            "stream 's') -[dependency]-> 'a' (task 0, rank 0 stream 's'); reorder the streams or "
            "remove a dependency");
}

TEST(TaskGraph, ValidateFindsACycleThroughStreamOrder) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "s");
  const TaskId a = AddNamed(graph, s, "a");
  const TaskId b = AddNamed(graph, s, "b");
  graph.AddDependency(b, a);
  const std::string message = graph.Validate().message();
  EXPECT_NE(message.find("'a' (task 0, rank 0 stream 's') -[stream order]-> 'b'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("'b' (task 1, rank 0 stream 's') -[dependency]-> 'a'"), std::string::npos)
      << message;
}

TEST(TaskGraph, ValidateFindsCollectivesOrderedDifferentlyOnTwoRanks) {
  TaskGraph graph;
  const StreamId comm0 = graph.AddStream(0, "comm");
  const StreamId comm1 = graph.AddStream(1, "comm");
  const TaskId x0 = AddNamed(graph, comm0, "X");
  const TaskId y0 = AddNamed(graph, comm0, "Y");
  const TaskId y1 = AddNamed(graph, comm1, "Y");
  const TaskId x1 = AddNamed(graph, comm1, "X");
  graph.AddCollective(std::vector<TaskId>{x0, x1});
  graph.AddCollective(std::vector<TaskId>{y0, y1});
  const std::string message = graph.Validate().message();
  EXPECT_NE(message.find("=[same collective]="), std::string::npos) << message;
  EXPECT_NE(message.find("-[stream order]->"), std::string::npos) << message;
}

TEST(TaskGraph, DependencyInsideOneCollectiveIsACycle) {
  TaskGraph graph;
  const TaskId a = AddNamed(graph, graph.AddStream(0, "comm"), "a");
  const TaskId b = AddNamed(graph, graph.AddStream(1, "comm"), "b");
  graph.AddCollective(std::vector<TaskId>{a, b});
  graph.AddDependency(a, b);  // b must wait for a to end, but a ends only together with b
  EXPECT_EQ(graph.Validate().message(),
            "task graph has a cycle, so the step can never finish: 'a' (task 0, rank 0 stream "
            "'comm') -[dependency]-> 'b' (task 1, rank 1 stream 'comm') =[same collective]= 'a' "
            "(task 0, rank 0 stream 'comm'); reorder the streams or remove a dependency");
}

}  // namespace
}  // namespace loom
