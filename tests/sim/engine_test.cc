#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace loom {
namespace {

SimTime EngineMicros(double micros) { return SimTime::FromMicros(micros); }

// A graph with helpers that keep the tests to the point: one stream per call, named tasks.
class EngineStep {
 public:
  StreamId Stream(int32_t rank, const std::string& name = "s") {
    return graph.AddStream(rank, name);
  }
  TaskId Run(StreamId stream, double micros, const std::string& name, LinkId link = kNoLink) {
    return graph.AddTask({.stream = stream,
                          .link = link,
                          .duration = EngineMicros(micros),
                          .name = graph.Intern(name)});
  }
  StepTimeline Simulate() {
    Result<StepTimeline> result = loom::Simulate(graph);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : StepTimeline{};
  }

  TaskGraph graph;
};

TEST(Engine, TiesRunInInsertionOrder) {
  EngineStep step;
  const TaskId a = step.Run(step.Stream(0), 5, "a");
  const TaskId b = step.Run(step.Stream(1), 5, "b");
  const TaskId c = step.Run(step.Stream(2), 1, "c");  // after b
  const TaskId d = step.Run(step.Stream(3), 1, "d");  // after a
  step.graph.AddDependency(b, c);
  step.graph.AddDependency(a, d);
  const StepTimeline timeline = step.Simulate();
  // a and b start at 0 in id order; both end at 5 us, a's end event was queued first, so d (its
  // successor) starts before c.
  EXPECT_EQ(timeline.start_sequence, (std::vector<int32_t>{0, 1, 3, 2}));
  EXPECT_EQ(timeline.start[c], EngineMicros(5));
  EXPECT_EQ(timeline.start[d], EngineMicros(5));
}

TEST(Engine, DependencyDelaysStartUntilItEnds) {
  EngineStep step;
  const TaskId a = step.Run(step.Stream(0), 10, "a");
  const TaskId b = step.Run(step.Stream(1), 4, "b");
  step.graph.AddDependency(a, b);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.start[b], EngineMicros(10));
  EXPECT_EQ(timeline.end[b], EngineMicros(14));
  EXPECT_EQ(timeline.makespan, EngineMicros(14));
}

TEST(Engine, StreamRunsTasksInTheOrderTheyWereAdded) {
  EngineStep step;
  const StreamId other = step.Stream(1);
  const StreamId stream = step.Stream(0);
  const TaskId blocker = step.Run(other, 30, "blocker");
  const TaskId first = step.Run(stream, 5, "first");    // waits for blocker
  const TaskId second = step.Run(stream, 2, "second");  // ready at 0, but may not overtake
  step.graph.AddDependency(blocker, first);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.start[first], EngineMicros(30));
  EXPECT_EQ(timeline.start[second], EngineMicros(35));
  EXPECT_EQ(timeline.end[second], EngineMicros(37));
}

TEST(Engine, StreamBusyCountsRunningTimeNotWaiting) {
  EngineStep step;
  const StreamId a = step.Stream(0);
  const StreamId b = step.Stream(1);
  const TaskId x = step.Run(a, 10, "x");
  const TaskId y = step.Run(b, 3, "y");
  step.Run(b, 4, "z");
  step.graph.AddDependency(x, y);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.stream_busy, (std::vector<SimTime>{EngineMicros(10), EngineMicros(7)}));
  EXPECT_EQ(timeline.makespan, EngineMicros(17));
}

TEST(Engine, TwoTransfersShareALinkFirstComeFirstServed) {
  EngineStep step;
  const LinkId nic = step.graph.AddLink("nic");
  const TaskId first = step.Run(step.Stream(0), 10, "first", nic);
  const TaskId second = step.Run(step.Stream(1), 10, "second", nic);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.start[first], EngineMicros(0));
  EXPECT_EQ(timeline.end[first], EngineMicros(10));
  EXPECT_EQ(timeline.start[second], EngineMicros(10));
  EXPECT_EQ(timeline.end[second], EngineMicros(20));
}

TEST(Engine, LinkGoesToTheRequestReadyFirst) {
  EngineStep step;
  const LinkId nic = step.graph.AddLink("nic");
  const TaskId holder = step.Run(step.Stream(0), 10, "holder", nic);
  const TaskId late = step.Run(step.Stream(1), 2, "late", nic);    // lower id, ready at 3 us
  const TaskId early = step.Run(step.Stream(2), 2, "early", nic);  // ready at 1 us
  step.graph.AddDependency(step.Run(step.Stream(3), 3, "before late"), late);
  step.graph.AddDependency(step.Run(step.Stream(4), 1, "before early"), early);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.end[holder], EngineMicros(10));
  EXPECT_EQ(timeline.start[early], EngineMicros(10));
  EXPECT_EQ(timeline.start[late], EngineMicros(12));
}

TEST(Engine, LinkTiesGoToTheTaskAddedFirstWhateverTheEventOrder) {
  EngineStep step;
  const LinkId nic = step.graph.AddLink("nic");
  const TaskId p0 = step.Run(step.Stream(0), 5, "p0");
  const TaskId p1 = step.Run(step.Stream(1), 5, "p1");
  const TaskId low = step.Run(step.Stream(2), 10, "low", nic);
  const TaskId high = step.Run(step.Stream(3), 10, "high", nic);
  // p0 ends first in event order and readies |high| before |low|; both are ready at 5 us.
  step.graph.AddDependency(p1, low);
  step.graph.AddDependency(p0, high);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.start[low], EngineMicros(5));
  EXPECT_EQ(timeline.start[high], EngineMicros(15));
}

TEST(Engine, CollectiveStartsWhenItsLastMemberIsReady) {
  EngineStep step;
  std::vector<TaskId> members;
  const double ready_us[] = {5, 12, 8};
  const double duration_us[] = {4, 4, 6};
  for (int32_t rank = 0; rank < 3; ++rank) {
    const TaskId compute = step.Run(step.Stream(rank, "compute"), ready_us[rank], "compute");
    members.push_back(step.Run(step.Stream(rank, "comm"), duration_us[rank], "all-reduce"));
    step.graph.AddDependency(compute, members.back());
  }
  EXPECT_EQ(step.graph.AddCollective(members), 0);
  const StepTimeline timeline = step.Simulate();
  for (TaskId m : members) {
    EXPECT_EQ(timeline.start[m], EngineMicros(12));
    EXPECT_EQ(timeline.end[m], EngineMicros(18));  // the longest member's duration
  }
}

TEST(Engine, CollectiveWaitsForEveryMembersStream) {
  EngineStep step;
  const StreamId comm0 = step.Stream(0, "comm");
  const StreamId comm1 = step.Stream(1, "comm");
  step.Run(comm1, 7, "earlier transfer");
  const TaskId m0 = step.Run(comm0, 2, "all-gather");
  const TaskId m1 = step.Run(comm1, 2, "all-gather");
  step.graph.AddCollective(std::vector<TaskId>{m0, m1});
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.start[m0], EngineMicros(7));
  EXPECT_EQ(timeline.start[m1], EngineMicros(7));
}

TEST(Engine, CollectiveTakesAllItsLinksAtOnce) {
  EngineStep step;
  const LinkId nic0 = step.graph.AddLink("nic0");
  const LinkId nic1 = step.graph.AddLink("nic1");
  const TaskId busy = step.Run(step.Stream(2), 15, "other transfer", nic1);
  const TaskId m0 = step.Run(step.Stream(0), 3, "send", nic0);
  const TaskId m1 = step.Run(step.Stream(1), 3, "recv", nic1);
  step.graph.AddCollective(std::vector<TaskId>{m0, m1});
  const TaskId after = step.Run(step.Stream(3), 1, "uses nic0", nic0);
  const StepTimeline timeline = step.Simulate();
  EXPECT_EQ(timeline.end[busy], EngineMicros(15));
  EXPECT_EQ(timeline.start[m0], EngineMicros(15));
  EXPECT_EQ(timeline.start[m1], EngineMicros(15));
  // nic0 waited, idle, for the collective at the head of its queue: strict FIFO.
  EXPECT_EQ(timeline.start[after], EngineMicros(18));
}

TEST(Engine, DeadlockFromStreamOrderIsAnErrorThatNamesTheWaits) {
  EngineStep step;
  const StreamId stream = step.Stream(0, "compute");
  const TaskId a = step.Run(stream, 1, "A");
  const TaskId b = step.Run(stream, 1, "B");
  step.Run(step.Stream(1), 1, "free");
  step.graph.AddDependency(b, a);  // A must wait for B, which the stream puts after A
  const Result<StepTimeline> result = Simulate(step.graph);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "deadlock: 2 of 3 tasks never started; wait cycle: 'A' (task 0, rank 0 stream "
            "'compute') waits for 'B' (task 1, rank 0 stream 'compute') (dependency); 'B' (task 1, "
            "rank 0 stream 'compute') waits for 'A' (task 0, rank 0 stream 'compute') (stream "
            "order). Make stream order agree with the dependencies, and issue collectives in the "
            "same order on every member's stream");
}

TEST(Engine, CollectivesIssuedInDifferentOrdersDeadlock) {
  EngineStep step;
  const StreamId comm0 = step.Stream(0, "comm");
  const StreamId comm1 = step.Stream(1, "comm");
  const TaskId x0 = step.Run(comm0, 1, "X");
  const TaskId y0 = step.Run(comm0, 1, "Y");
  const TaskId y1 = step.Run(comm1, 1, "Y");
  const TaskId x1 = step.Run(comm1, 1, "X");
  step.graph.AddCollective(std::vector<TaskId>{x0, x1});
  step.graph.AddCollective(std::vector<TaskId>{y0, y1});
  const Result<StepTimeline> result = Simulate(step.graph);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("4 of 4 tasks never started"), std::string::npos);
  EXPECT_NE(result.status().message().find("(collective member)"), std::string::npos);
  EXPECT_NE(result.status().message().find("(stream order)"), std::string::npos);
}

// TaskGraph::Validate() calls this a cycle (program/task_graph_test.cc); the engine agrees.
TEST(Engine, DependencyInsideOneCollectiveDeadlocks) {
  EngineStep step;
  const TaskId a = step.Run(step.Stream(0, "comm"), 1, "a");
  const TaskId b = step.Run(step.Stream(1, "comm"), 1, "b");
  step.graph.AddCollective(std::vector<TaskId>{a, b});
  step.graph.AddDependency(a, b);  // b must wait for a to end, but a ends only together with b
  EXPECT_FALSE(Simulate(step.graph).ok());
}

TEST(Engine, BuildErrorIsReturnedInsteadOfATimeline) {
  EngineStep step;
  step.graph.AddTask({.stream = 3, .duration = EngineMicros(1)});
  const Result<StepTimeline> result = Simulate(step.graph);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "task graph: task 0: unknown stream; add it with AddStream() first");
}

TEST(Engine, EmptyGraphTakesNoTime) {
  TaskGraph graph;
  const Result<StepTimeline> result = Simulate(graph);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->makespan, SimTime::Zero());
  EXPECT_TRUE(result->start.empty());
}

// Pipeline parallelism with p stages, m micro-batches and equal stage times: both GPipe and 1F1B
// take (m + p - 1)(t_f + t_b), so each stage idles a bubble fraction of (p - 1) / (m + p - 1)
// (Narayanan et al. 2021, section 2.2).
StepTimeline SimulatePipeline(int32_t p, int32_t m, bool one_f_one_b) {
  EngineStep step;
  std::vector<std::vector<TaskId>> fwd(p, std::vector<TaskId>(m));
  std::vector<std::vector<TaskId>> bwd(p, std::vector<TaskId>(m));
  for (int32_t s = 0; s < p; ++s) {
    const StreamId stream = step.Stream(s, "compute");
    const int32_t warmup = one_f_one_b ? std::min(p - s - 1, m) : m;
    int32_t next_f = 0;
    int32_t next_b = 0;
    while (next_b < m) {
      const bool do_forward = next_f < m && (next_f < warmup || next_f <= next_b + warmup);
      if (do_forward) {
        fwd[s][next_f] = step.Run(stream, 2, "F" + std::to_string(next_f));
        ++next_f;
      } else {
        bwd[s][next_b] = step.Run(stream, 3, "B" + std::to_string(next_b));
        ++next_b;
      }
    }
  }
  for (int32_t s = 0; s < p; ++s) {
    for (int32_t i = 0; i < m; ++i) {
      if (s > 0) step.graph.AddDependency(fwd[s - 1][i], fwd[s][i]);
      if (s + 1 < p) step.graph.AddDependency(bwd[s + 1][i], bwd[s][i]);
      step.graph.AddDependency(fwd[s][i], bwd[s][i]);
    }
  }
  return step.Simulate();
}

TEST(Engine, GPipeMakespanMatchesTheClosedForm) {
  const StepTimeline timeline = SimulatePipeline(/*p=*/4, /*m=*/8, /*one_f_one_b=*/false);
  EXPECT_EQ(timeline.makespan, EngineMicros((8 + 4 - 1) * (2 + 3)));
  for (SimTime busy : timeline.stream_busy) EXPECT_EQ(busy, EngineMicros(8 * (2 + 3)));
}

TEST(Engine, OneFOneBMakespanMatchesTheClosedForm) {
  const StepTimeline timeline = SimulatePipeline(/*p=*/4, /*m=*/8, /*one_f_one_b=*/true);
  EXPECT_EQ(timeline.makespan, EngineMicros((8 + 4 - 1) * (2 + 3)));
}

// A random step: tasks on 8 streams of 4 ranks, a third of them on one of 3 links, dependencies
// on earlier tasks, a few collectives, and with |back_edges| a few dependencies on later tasks,
// which may close a cycle. std::mt19937's output is fixed by the standard, so every platform
// builds the same graphs.
TaskGraph RandomStep(uint32_t seed, bool back_edges) {
  std::mt19937 random(seed);
  auto below = [&](uint32_t n) { return static_cast<int32_t>(random() % n); };
  TaskGraph graph;
  for (int32_t s = 0; s < 8; ++s) graph.AddStream(s / 2, s % 2 == 0 ? "compute" : "comm");
  for (int32_t l = 0; l < 3; ++l) graph.AddLink("link" + std::to_string(l));
  constexpr int32_t kTasks = 60;
  for (TaskId t = 0; t < kTasks; ++t) {
    graph.AddTask({.stream = below(8),
                   .link = below(3) == 0 ? below(3) : kNoLink,
                   .duration = SimTime::FromNanos(below(4) * 1000)});
    for (int32_t d = below(3); t > 0 && d > 0; --d) graph.AddDependency(below(t), t);
  }
  for (int32_t g = 0; g < 4; ++g) {
    const TaskId first = below(kTasks - 2);
    std::vector<TaskId> members = {first, first + 1 + below(2), first + 2};
    bool distinct_streams = true;
    for (TaskId a : members) {
      for (TaskId b : members) {
        if (a != b && graph.task(a).stream == graph.task(b).stream) distinct_streams = false;
      }
      if (graph.group_of(a) != kNoGroup) distinct_streams = false;
    }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    if (distinct_streams) graph.AddCollective(members);
  }
  for (int32_t e = back_edges ? 2 : 0; e > 0; --e) {
    const TaskId before = below(kTasks);
    const TaskId after = below(kTasks);
    if (before != after) graph.AddDependency(std::max(before, after), std::min(before, after));
  }
  return graph;
}

// Checks every rule of Simulate()'s contract on |timeline|.
void ExpectTimelineKeepsTheRules(const TaskGraph& graph, const StepTimeline& timeline) {
  std::vector<SimTime> ready(graph.num_tasks(), SimTime::Zero());
  for (const Dependency& d : graph.dependencies()) {
    EXPECT_GE(timeline.start[d.after], timeline.end[d.before]);
    ready[d.after] = Max(ready[d.after], timeline.end[d.before]);
  }
  std::vector<TaskId> last_on_stream(graph.num_streams(), -1);
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    TaskId& previous = last_on_stream[graph.task(t).stream];
    if (previous >= 0) {
      EXPECT_GE(timeline.start[t], timeline.end[previous]);
      ready[t] = Max(ready[t], timeline.end[previous]);
    }
    previous = t;
  }
  std::vector<TaskId> by_sequence(graph.num_tasks());
  for (TaskId t = 0; t < graph.num_tasks(); ++t) by_sequence[timeline.start_sequence[t]] = t;
  std::vector<TaskId> last_on_link(graph.num_links(), -1);
  for (TaskId t : by_sequence) {
    const LinkId link = graph.task(t).link;
    if (link == kNoLink) continue;
    const TaskId previous = last_on_link[link];
    // Members of one collective that share a link hold it together.
    if (previous >= 0 &&
        (graph.group_of(t) == kNoGroup || graph.group_of(t) != graph.group_of(previous))) {
      EXPECT_GE(timeline.start[t], timeline.end[previous]);
    }
    last_on_link[link] = t;
  }
  for (GroupId g = 0; g < graph.num_groups(); ++g) {
    SimTime all_ready, longest;
    bool uses_links = false;
    for (TaskId m : graph.group_members(g)) {
      all_ready = Max(all_ready, ready[m]);
      longest = Max(longest, graph.task(m).duration);
      uses_links |= graph.task(m).link != kNoLink;
    }
    const SimTime start = timeline.start[graph.group_members(g)[0]];
    if (uses_links) {
      EXPECT_GE(start, all_ready);
    } else {
      EXPECT_EQ(start, all_ready) << "a collective without links waits only for its last member";
    }
    for (TaskId m : graph.group_members(g)) {
      EXPECT_EQ(timeline.start[m], start);
      EXPECT_EQ(timeline.end[m], start + longest);
    }
  }
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    if (graph.task(t).link == kNoLink && graph.group_of(t) == kNoGroup) {
      EXPECT_EQ(timeline.start[t], ready[t]) << "a task without link or collective never waits";
    }
  }
}

TEST(Engine, RandomStepsKeepEveryRule) {
  int32_t simulated = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const TaskGraph graph = RandomStep(seed, /*back_edges=*/false);
    const Result<StepTimeline> timeline = Simulate(graph);
    if (!timeline.ok()) continue;  // collectives in conflicting orders; see the next test
    ++simulated;
    ExpectTimelineKeepsTheRules(graph, *timeline);
  }
  EXPECT_GT(simulated, 100);
}

TEST(Engine, DeadlocksExactlyWhenValidateFindsACycle) {
  int32_t deadlocks = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const TaskGraph graph = RandomStep(seed, /*back_edges=*/seed % 2 == 0);
    ASSERT_TRUE(graph.build_status().ok()) << graph.build_status().ToString();
    const bool valid = graph.Validate().ok();
    EXPECT_EQ(Simulate(graph).ok(), valid) << "seed " << seed;
    deadlocks += valid ? 0 : 1;
  }
  EXPECT_GT(deadlocks, 30);
  EXPECT_LT(deadlocks, 270);
}

}  // namespace
}  // namespace loom
