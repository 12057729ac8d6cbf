// Tasks on shared-bandwidth channels (engine.h): processor sharing, checked against end times
// worked out by hand.

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "sim/engine.h"

namespace loom {
namespace {

SimTime Us(double micros) { return SimTime::FromMicros(micros); }

class Step {
 public:
  StreamId Stream(int32_t rank) {
    return graph.AddStream(rank, "s" + std::to_string(graph.num_streams()));
  }
  ChannelId Channel(const std::string& name) { return graph.AddChannel(name); }
  RouteId Route(std::initializer_list<ChannelId> channels) {
    return graph.AddRoute(std::vector<ChannelId>(channels));
  }
  // A task on a stream of its own on |rank|.
  TaskId Run(double micros, RouteId route = kNoRoute, int32_t rank = 0) {
    return graph.AddTask({.stream = Stream(rank), .duration = Us(micros), .route = route});
  }
  // A task that becomes ready at |ready_us|, after a task without a route.
  TaskId RunFrom(double ready_us, double micros, RouteId route, int32_t rank = 0) {
    const StreamId stream = Stream(rank);
    const TaskId before = graph.AddTask({.stream = stream, .duration = Us(ready_us)});
    const TaskId task = graph.AddTask({.stream = stream, .duration = Us(micros), .route = route});
    graph.AddDependency(before, task);
    return task;
  }
  StepTimeline Simulate() {
    Result<StepTimeline> result = loom::Simulate(graph);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : StepTimeline{};
  }

  TaskGraph graph;
};

TEST(ChannelSharing, TwoEqualTransfersStartedTogetherBothTakeTwiceAsLong) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId a = step.Run(10, nic);
  const TaskId b = step.Run(10, nic);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.start[a], Us(0));
  EXPECT_EQ(t.start[b], Us(0));
  EXPECT_EQ(t.end[a], Us(20));
  EXPECT_EQ(t.end[b], Us(20));
  EXPECT_EQ(t.channel_busy, std::vector<SimTime>{Us(20)});
  EXPECT_EQ(t.channel_shared, std::vector<SimTime>{Us(20)});
}

TEST(ChannelSharing, TransferJoiningHalfwaySlowsBothFromThen) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId first = step.Run(10, nic);
  const TaskId second = step.RunFrom(5, 10, nic);
  const StepTimeline t = step.Simulate();
  // 5 us alone, then 5 us of work left at half speed: 10 us more.
  EXPECT_EQ(t.end[first], Us(15));
  // 5 us of work at half speed until 15 us, the other 5 alone.
  EXPECT_EQ(t.start[second], Us(5));
  EXPECT_EQ(t.end[second], Us(20));
  EXPECT_EQ(t.channel_busy[0], Us(20));
  EXPECT_EQ(t.channel_shared[0], Us(10));
}

TEST(ChannelSharing, ThreeTransfersWithUnequalWorkEndInTurn) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId a = step.Run(3, nic);
  const TaskId b = step.Run(6, nic);
  const TaskId c = step.Run(9, nic);
  const StepTimeline t = step.Simulate();
  // Thirds until a's 3 us of work are done (9 us), halves until b's other 3 (15 us), then c alone.
  EXPECT_EQ(t.end[a], Us(9));
  EXPECT_EQ(t.end[b], Us(15));
  EXPECT_EQ(t.end[c], Us(18));
}

TEST(ChannelSharing, TaskOnTwoChannelsProgressesAtTheSmallerShare) {
  Step step;
  const ChannelId x = step.Channel("x");
  const ChannelId y = step.Channel("y");
  const TaskId both = step.Run(12, step.Route({x, y}));
  const TaskId on_x1 = step.Run(30, step.Route({x}));
  const TaskId on_x2 = step.Run(30, step.Route({x}));
  const TaskId on_y = step.Run(30, step.Route({y}));
  const StepTimeline t = step.Simulate();
  // x carries three tasks, y two: |both| gets a third and ends at 36 us.
  EXPECT_EQ(t.end[both], Us(36));
  // |on_y| keeps its half (the third |both| leaves unused on y is not handed over): 18 us of work
  // by 36 us, the other 12 alone.
  EXPECT_EQ(t.end[on_y], Us(48));
  // 12 us of work each by 36 us, the other 18 at half speed.
  EXPECT_EQ(t.end[on_x1], Us(72));
  EXPECT_EQ(t.end[on_x2], Us(72));
}

TEST(ChannelSharing, CollectiveRunsAtItsSlowestMembersShare) {
  Step step;
  const ChannelId nic0 = step.Channel("rank0 nic");
  const ChannelId nic1 = step.Channel("rank1 nic");
  const TaskId m0 = step.Run(8, step.Route({nic0}), 0);
  const TaskId m1 = step.Run(10, step.Route({nic1}), 1);  // the longest member: 10 us alone
  step.graph.AddCollective(std::vector<TaskId>{m0, m1});
  const TaskId other = step.Run(4, step.Route({nic1}), 1);
  const StepTimeline t = step.Simulate();
  // nic1 is shared until |other| is done at 8 us (4 us of work each); the collective then has
  // 6 us left alone. Rank 0's member waits for rank 1's although its own NIC was free.
  EXPECT_EQ(t.end[other], Us(8));
  EXPECT_EQ(t.start[m0], Us(0));
  EXPECT_EQ(t.start[m1], Us(0));
  EXPECT_EQ(t.end[m0], Us(14));
  EXPECT_EQ(t.end[m1], Us(14));
  EXPECT_EQ(t.channel_shared[nic0], Us(0));
  EXPECT_EQ(t.channel_shared[nic1], Us(8));
}

TEST(ChannelSharing, CollectiveCountsOncePerMemberOnAChannel) {
  Step step;
  const ChannelId switch_port = step.Channel("switch");
  const TaskId m0 = step.Run(5, step.Route({switch_port}), 0);
  const TaskId m1 = step.Run(5, step.Route({switch_port}), 1);
  step.graph.AddCollective(std::vector<TaskId>{m0, m1});
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[m0], Us(10));
  EXPECT_EQ(t.end[m1], Us(10));
}

// Issue 18: a group with k ranks on a node is timed over k NICs (cost/nccl_model.h), and each
// member's route holds its own GPU's NIC, so each NIC carries the group's traffic for 1/k of the
// node's load. Two such groups on the same node's NICs (the data-parallel groups of two pipeline
// stages placed on one node, say) share every NIC and slow each other to half speed; a third
// transfer on one NIC slows only the groups that cross it.
TEST(ChannelSharing, TwoGroupsOnOneNodesNicsSlowEachOther) {
  Step step;
  const ChannelId nic0 = step.Channel("node0 gpu0 nic");
  const ChannelId nic1 = step.Channel("node0 gpu1 nic");
  const ChannelId remote0 = step.Channel("node1 gpu0 nic");
  const ChannelId remote1 = step.Channel("node1 gpu1 nic");
  // Group A: 2 nodes x 2 ranks, 10 us alone; group B: the same NICs, 10 us alone.
  const TaskId a0 = step.Run(10, step.Route({nic0}), 0);
  const TaskId a1 = step.Run(10, step.Route({nic1}), 1);
  const TaskId a2 = step.Run(10, step.Route({remote0}), 2);
  const TaskId a3 = step.Run(10, step.Route({remote1}), 3);
  step.graph.AddCollective(std::vector<TaskId>{a0, a1, a2, a3});
  const TaskId b0 = step.Run(10, step.Route({nic0}), 0);
  const TaskId b1 = step.Run(10, step.Route({nic1}), 1);
  const TaskId b2 = step.Run(10, step.Route({remote0}), 2);
  const TaskId b3 = step.Run(10, step.Route({remote1}), 3);
  step.graph.AddCollective(std::vector<TaskId>{b0, b1, b2, b3});
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[a0], Us(20));
  EXPECT_EQ(t.end[b3], Us(20));
  EXPECT_EQ(t.channel_shared[nic0], Us(20));
  EXPECT_EQ(t.channel_shared[remote1], Us(20));
}

TEST(ChannelSharing, TransferAloneTakesItsDurationAndOthersAreUnaffected) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId plain = step.Run(7);
  const TaskId after_plain = step.Run(3);
  step.graph.AddDependency(plain, after_plain);
  const TaskId alone = step.RunFrom(2, 5, nic);
  const TaskId queued = step.RunFrom(7, 4, nic);  // starts just as |alone| ends
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[plain], Us(7));
  EXPECT_EQ(t.start[after_plain], Us(7));
  EXPECT_EQ(t.end[after_plain], Us(10));
  EXPECT_EQ(t.end[alone], Us(7));
  EXPECT_EQ(t.end[queued], Us(11));
  EXPECT_EQ(t.channel_busy[0], Us(9));
  EXPECT_EQ(t.channel_shared[0], Us(0));
}

TEST(ChannelSharing, ZeroDurationTransferTakesNoShare) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId long_one = step.Run(10, nic);
  const TaskId instant = step.RunFrom(4, 0, nic);
  const TaskId after = step.Run(1);
  step.graph.AddDependency(instant, after);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.start[instant], Us(4));
  EXPECT_EQ(t.end[instant], Us(4));
  EXPECT_EQ(t.start[after], Us(4));
  EXPECT_EQ(t.end[long_one], Us(10));
}

TEST(ChannelSharing, LinkIsHeldExclusivelyWhileTheChannelIsShared) {
  Step step;
  const LinkId link = step.graph.AddLink("stage0->stage1");
  const RouteId nic = step.Route({step.Channel("nic")});
  const TaskId first =
      step.graph.AddTask({.stream = step.Stream(0), .link = link, .duration = Us(4), .route = nic});
  const TaskId second =
      step.graph.AddTask({.stream = step.Stream(0), .link = link, .duration = Us(4), .route = nic});
  const TaskId bulk = step.Run(20, nic);
  const StepTimeline t = step.Simulate();
  // The link serialises the two sends; each shares the NIC with |bulk|.
  EXPECT_EQ(t.end[first], Us(8));
  EXPECT_EQ(t.start[second], Us(8));
  EXPECT_EQ(t.end[second], Us(16));
  // 8 us of work by 16 us, the other 12 alone.
  EXPECT_EQ(t.end[bulk], Us(28));
}

TEST(ChannelSharing, DeadlockIsStillReported) {
  Step step;
  const RouteId nic = step.Route({step.Channel("nic")});
  const StreamId stream = step.Stream(0);
  const TaskId a = step.graph.AddTask({.stream = stream, .duration = Us(1), .route = nic});
  const TaskId b = step.graph.AddTask({.stream = stream, .duration = Us(1), .route = nic});
  step.Run(3, nic);
  step.graph.AddDependency(b, a);
  const Result<StepTimeline> result = Simulate(step.graph);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("deadlock: 2 of 3 tasks never started"),
            std::string::npos)
      << result.status().message();
}

// Transfers on one channel with random sizes and ready times, on ranks whose other channels are
// free. std::mt19937's output is fixed by the standard, so every platform builds the same graph.
TaskGraph RandomTransfers(uint32_t seed) {
  std::mt19937 random(seed);
  TaskGraph graph;
  const ChannelId shared = graph.AddChannel("shared");
  for (int32_t i = 0; i < 40; ++i) {
    const StreamId stream = graph.AddStream(i % 8, "s" + std::to_string(i));
    const ChannelId own = graph.AddChannel("own" + std::to_string(i));
    const std::vector<ChannelId> channels =
        i % 3 == 0 ? std::vector<ChannelId>{shared, own} : std::vector<ChannelId>{shared};
    const TaskId wait =
        graph.AddTask({.stream = stream, .duration = SimTime::FromNanos(random() % 50'000)});
    const TaskId transfer = graph.AddTask({.stream = stream,
                                           .duration = SimTime::FromNanos(1 + random() % 20'000),
                                           .route = graph.AddRoute(channels)});
    graph.AddDependency(wait, transfer);
  }
  return graph;
}

TEST(ChannelSharing, OneChannelDoesAllItsWorkWheneverItIsBusy) {
  // Processor sharing wastes no bandwidth on a single channel: the time it carries a transfer is
  // the sum of the transfers' times alone, however they overlap (up to a nanosecond of rounding
  // per change of share).
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const TaskGraph graph = RandomTransfers(seed);
    const Result<StepTimeline> t = Simulate(graph);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    int64_t work = 0;
    int32_t slowed = 0;
    for (TaskId id = 0; id < graph.num_tasks(); ++id) {
      if (graph.task(id).route == kNoRoute) continue;
      work += graph.task(id).duration.nanos();
      EXPECT_GE(t->end[id] - t->start[id], graph.task(id).duration);
      slowed += t->end[id] - t->start[id] > graph.task(id).duration;
    }
    EXPECT_NEAR(static_cast<double>(t->channel_busy[0].nanos()), static_cast<double>(work),
                2.0 * 40)
        << seed;
    EXPECT_GT(t->channel_shared[0], SimTime::Zero());
    EXPECT_GT(slowed, 0);
  }
}

TEST(ChannelSharing, SameGraphGivesIdenticalTimelines) {
  const TaskGraph graph = RandomTransfers(7);
  const Result<StepTimeline> a = Simulate(graph);
  const Result<StepTimeline> b = Simulate(graph);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->start, b->start);
  EXPECT_EQ(a->end, b->end);
  EXPECT_EQ(a->start_sequence, b->start_sequence);
  EXPECT_EQ(a->channel_busy, b->channel_busy);
  EXPECT_EQ(a->channel_shared, b->channel_shared);
}

// A random step as in engine_test.cc, with routes: tasks on 8 streams of 4 ranks, some on one of
// 3 links, half on a route over the ranks' 4 channels, a few collectives, and with |back_edges|
// dependencies that may close a cycle.
TaskGraph RandomRoutedStep(uint32_t seed, bool back_edges) {
  std::mt19937 random(seed);
  auto below = [&](uint32_t n) { return static_cast<int32_t>(random() % n); };
  TaskGraph graph;
  for (int32_t s = 0; s < 8; ++s) graph.AddStream(s / 2, s % 2 == 0 ? "compute" : "comm");
  for (int32_t l = 0; l < 3; ++l) graph.AddLink("link" + std::to_string(l));
  for (int32_t c = 0; c < 4; ++c) graph.AddChannel("nic" + std::to_string(c));
  for (int32_t c = 0; c < 4; ++c) {
    graph.AddRoute(std::vector<ChannelId>{c});
    graph.AddRoute(std::vector<ChannelId>{c, (c + 1) % 4});
  }
  constexpr int32_t kTasks = 60;
  for (TaskId t = 0; t < kTasks; ++t) {
    graph.AddTask({.stream = below(8),
                   .link = below(3) == 0 ? below(3) : kNoLink,
                   .duration = SimTime::FromNanos(below(4) * 1000),
                   .route = below(2) == 0 ? below(8) : kNoRoute});
    for (int32_t d = below(3); t > 0 && d > 0; --d) graph.AddDependency(below(t), t);
  }
  for (int32_t g = 0; g < 4; ++g) {
    const TaskId first = below(kTasks - 2);
    const std::vector<TaskId> members = {first, first + 1, first + 2};
    bool distinct_streams = true;
    for (TaskId a : members) {
      for (TaskId b : members) {
        if (a != b && graph.task(a).stream == graph.task(b).stream) distinct_streams = false;
      }
      if (graph.group_of(a) != kNoGroup) distinct_streams = false;
    }
    if (distinct_streams) graph.AddCollective(members);
  }
  for (int32_t e = back_edges ? 2 : 0; e > 0; --e) {
    const TaskId before = below(kTasks);
    const TaskId after = below(kTasks);
    if (before != after) graph.AddDependency(std::max(before, after), std::min(before, after));
  }
  return graph;
}

TEST(ChannelSharing, RandomRoutedStepsKeepTheRulesAndDeadlockOnlyOnACycle) {
  int32_t simulated = 0, deadlocks = 0, stretched = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const TaskGraph graph = RandomRoutedStep(seed, /*back_edges=*/seed % 2 == 0);
    ASSERT_TRUE(graph.build_status().ok()) << graph.build_status().ToString();
    const Result<StepTimeline> t = Simulate(graph);
    EXPECT_EQ(t.ok(), graph.Validate().ok()) << "seed " << seed;
    if (!t.ok()) {
      ++deadlocks;
      continue;
    }
    ++simulated;
    for (const Dependency& d : graph.dependencies()) EXPECT_GE(t->start[d.after], t->end[d.before]);
    std::vector<TaskId> last_on_stream(graph.num_streams(), -1);
    for (TaskId id = 0; id < graph.num_tasks(); ++id) {
      TaskId& previous = last_on_stream[graph.task(id).stream];
      if (previous >= 0) {
        EXPECT_GE(t->start[id], t->end[previous]);
      }
      previous = id;
      const GroupId g = graph.group_of(id);
      SimTime alone = graph.task(id).duration;
      bool routed = graph.task(id).route != kNoRoute;
      for (TaskId m : g == kNoGroup ? std::span<const TaskId>() : graph.group_members(g)) {
        EXPECT_EQ(t->start[m], t->start[id]);
        EXPECT_EQ(t->end[m], t->end[id]);
        alone = Max(alone, graph.task(m).duration);
        routed |= graph.task(m).route != kNoRoute;
      }
      const SimTime took = t->end[id] - t->start[id];
      if (routed) {
        EXPECT_GE(took, alone);
        stretched += took > alone;
      } else {
        EXPECT_EQ(took, alone) << "a task off every channel takes its time alone";
      }
    }
  }
  EXPECT_GT(simulated, 100);
  EXPECT_GT(deadlocks, 30);
  EXPECT_GT(stretched, 100);
}

}  // namespace
}  // namespace loom
