// The engine's sharing of a GPU's SMs between compute and the transfers that hold some of them
// (sim/engine.h, sim/sm_sharing.h).
#include "sim/sm_sharing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/engine.h"

namespace loom {
namespace {

SimTime SmMicros(double micros) { return SimTime::FromMicros(micros); }

class SmStep {
 public:
  StreamId Stream(int32_t rank, const std::string& name) { return graph.AddStream(rank, name); }
  TaskId Compute(StreamId stream, double micros) {
    const TaskId id = graph.AddTask({.stream = stream, .duration = SmMicros(micros)});
    graph.SetSmUse(id, {.yields = true});
    return id;
  }
  TaskId Transfer(StreamId stream, double micros, float holds, float hbm = 0) {
    const TaskId id = graph.AddTask({.stream = stream, .duration = SmMicros(micros)});
    graph.SetSmUse(id, {.holds = holds, .hbm = hbm});
    return id;
  }
  // Compute with |memory| of its time alone in memory-bound kernels.
  TaskId MemoryBound(StreamId stream, double micros, float memory) {
    const TaskId id = graph.AddTask({.stream = stream, .duration = SmMicros(micros)});
    graph.SetSmUse(id, {.memory = memory, .yields = true});
    return id;
  }
  StepTimeline Simulate() {
    Result<StepTimeline> result = loom::Simulate(graph);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? std::move(result).value() : StepTimeline{};
  }
  TaskGraph graph;
};

// 100 us of compute beside a 40 us transfer holding a quarter of the SMs: 30 us of its work done
// by 40 us, the other 70 at full rate, so it ends at 110 us, 10 us lost.
TEST(SmSharing, ComputeBesideAHolderRunsOnTheSmsLeftWhileItRuns) {
  SmStep step;
  const TaskId compute = step.Compute(step.Stream(0, "compute"), 100);
  const TaskId transfer = step.Transfer(step.Stream(0, "dp"), 40, 0.25f);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[transfer], SmMicros(40));
  EXPECT_EQ(t.end[compute], SmMicros(110));
  ASSERT_EQ(t.sm_lost.size(), 1u);
  EXPECT_EQ(t.sm_lost[0], SmMicros(10));
}

// Shares add up while holders overlap, and the rate comes back as each one ends.
TEST(SmSharing, OverlappingHoldersAddTheirShares) {
  SmStep step;
  const TaskId compute = step.Compute(step.Stream(0, "compute"), 100);
  step.Transfer(step.Stream(0, "dp"), 20, 0.25f);      // 0-20: 0.25 + 0.25 held, rate 0.5
  step.Transfer(step.Stream(0, "gather"), 40, 0.25f);  // 20-40: rate 0.75
  const StepTimeline t = step.Simulate();
  // Work by 40 us: 20 x 0.5 + 20 x 0.75 = 25; the other 75 at full rate.
  EXPECT_EQ(t.end[compute], SmMicros(115));
}

// A holder on another GPU, a task that neither holds nor yields, and a compute task that starts
// after the holder has ended all run at their time alone.
TEST(SmSharing, OnlyYieldingTasksOfTheHoldersRankWhileItRunsSlow) {
  SmStep step;
  const TaskId other_rank = step.Compute(step.Stream(1, "compute"), 100);
  const StreamId compute = step.Stream(0, "compute");
  const TaskId plain =
      step.graph.AddTask({.stream = step.Stream(0, "host"), .duration = SmMicros(50)});
  step.Transfer(step.Stream(0, "dp"), 40, 0.5f);
  const TaskId first = step.Compute(compute, 40);
  const TaskId later = step.Compute(compute, 10);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[other_rank], SmMicros(100));
  EXPECT_EQ(t.end[plain], SmMicros(50));
  EXPECT_EQ(t.end[first], SmMicros(60));  // 20 us of work by 40 us, 20 more after
  EXPECT_EQ(t.end[later], SmMicros(70));
}

// However much the holders take, compute keeps SmSharing::kMinRate of the GPU.
TEST(SmSharing, ComputeKeepsTheMinimumRate) {
  SmStep step;
  const TaskId compute = step.Compute(step.Stream(0, "compute"), 10);
  step.Transfer(step.Stream(0, "a"), 1000, 0.75f);
  step.Transfer(step.Stream(0, "b"), 1000, 0.75f);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[compute], SmMicros(10 / SmSharing::kMinRate));
}

// A collective's members hold SMs on their own ranks from the collective's start to its end, on
// shared channels as well (the end a channel share moved).
TEST(SmSharing, CollectiveMembersHoldTheirRanksSmsOverSharedChannels) {
  SmStep step;
  const ChannelId nic0 = step.graph.AddChannel("nic 0");
  const ChannelId nic1 = step.graph.AddChannel("nic 1");
  const RouteId r0 = step.graph.AddRoute(std::vector<ChannelId>{nic0});
  const RouteId r1 = step.graph.AddRoute(std::vector<ChannelId>{nic1});
  const TaskId c0 = step.Compute(step.Stream(0, "compute"), 100);
  const TaskId c1 = step.Compute(step.Stream(1, "compute"), 100);
  const TaskId m0 =
      step.graph.AddTask({.stream = step.Stream(0, "dp"), .duration = SmMicros(20), .route = r0});
  const TaskId m1 =
      step.graph.AddTask({.stream = step.Stream(1, "dp"), .duration = SmMicros(20), .route = r1});
  step.graph.SetSmUse(m0, {.holds = 0.5f});
  step.graph.SetSmUse(m1, {.holds = 0.5f});
  step.graph.AddCollective(std::vector<TaskId>{m0, m1});
  // A second transfer on rank 0's NIC halves the collective's rate: it runs 0-40 us.
  step.graph.AddTask({.stream = step.Stream(0, "pp"), .duration = SmMicros(20), .route = r0});
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[m0], SmMicros(40));
  // 20 us of work by 40 us, 80 after.
  EXPECT_EQ(t.end[c0], SmMicros(120));
  EXPECT_EQ(t.end[c1], SmMicros(120));
}

// A graph whose tasks hold no SMs runs as before; every rank has a zero loss.
TEST(SmSharing, WithoutHoldersNothingChanges) {
  SmStep step;
  const TaskId compute = step.Compute(step.Stream(0, "compute"), 100);
  step.graph.AddTask({.stream = step.Stream(0, "dp"), .duration = SmMicros(40)});
  const StepTimeline t = step.Simulate();
  EXPECT_FALSE(step.graph.holds_sms());
  EXPECT_EQ(t.end[compute], SmMicros(100));
  EXPECT_EQ(t.sm_lost, std::vector<SimTime>{SimTime()});
}

// A transfer that takes half the HBM bandwidth and a tenth of the SMs: memory-bound kernels run
// at the bandwidth left, GEMMs at the SMs left, and a pass of both at the harmonic mix.
TEST(SmSharing, MemoryBoundKernelsRunOnTheHbmBandwidthLeft) {
  SmStep step;
  const TaskId memory = step.MemoryBound(step.Stream(0, "compute"), 100, 1.0f);
  step.Transfer(step.Stream(0, "dp"), 40, 0.1f, 0.5f);
  const TaskId gemm = step.Compute(step.Stream(1, "compute"), 100);
  step.Transfer(step.Stream(1, "dp"), 40, 0.1f, 0.5f);
  // Half memory-bound: 1 / (0.5 / 0.9 + 0.5 / 0.5) = 9 / 14 of its rate while the transfer runs.
  const TaskId mixed = step.MemoryBound(step.Stream(2, "compute"), 100, 0.5f);
  step.Transfer(step.Stream(2, "dp"), 28, 0.1f, 0.5f);
  const StepTimeline t = step.Simulate();
  // 40 us at half rate do 20 us of work; the other 80 at full rate.
  EXPECT_EQ(t.end[memory], SmMicros(120));
  // 40 us at 0.9 do 36; the other 64 at full rate.
  EXPECT_EQ(t.end[gemm], SmMicros(104));
  // 28 us at 9/14 do 18; the other 82 at full rate.
  EXPECT_EQ(t.end[mixed], SmMicros(110));
}

// Bandwidth held is no slower than SMs held where the SMs are the scarcer: the memory-bound part
// runs at the smaller of the two.
TEST(SmSharing, MemoryBoundKernelsAlsoNeedTheirSms) {
  SmStep step;
  const TaskId memory = step.MemoryBound(step.Stream(0, "compute"), 100, 1.0f);
  step.Transfer(step.Stream(0, "dp"), 40, 0.5f, 0.25f);
  const StepTimeline t = step.Simulate();
  EXPECT_EQ(t.end[memory], SmMicros(120));
}

TEST(SmSharing, BadUsesAreRecordedAsBuildErrors) {
  SmStep step;
  const TaskId t = step.graph.AddTask({.stream = step.Stream(0, "s"), .duration = SmMicros(1)});
  step.graph.SetSmUse(t, {.holds = 1.0f});
  EXPECT_NE(step.graph.build_status().message().find("a share is in [0, 1)"), std::string::npos)
      << step.graph.build_status().message();
  TaskGraph both;
  const TaskId u = both.AddTask({.stream = both.AddStream(0, "s"), .duration = SmMicros(1)});
  both.SetSmUse(u, {.holds = 0.5f, .yields = true});
  EXPECT_NE(both.build_status().message().find("both holds SMs and yields them"),
            std::string::npos);
  TaskGraph bandwidth;
  const TaskId b =
      bandwidth.AddTask({.stream = bandwidth.AddStream(0, "s"), .duration = SmMicros(1)});
  bandwidth.SetSmUse(b, {.hbm = 1.5f});
  EXPECT_NE(bandwidth.build_status().message().find("of its GPU's HBM bandwidth"),
            std::string::npos);
  TaskGraph memory;
  const TaskId m = memory.AddTask({.stream = memory.AddStream(0, "s"), .duration = SmMicros(1)});
  memory.SetSmUse(m, {.memory = -0.5f, .yields = true});
  EXPECT_NE(memory.build_status().message().find("in memory-bound kernels"), std::string::npos);
  TaskGraph unknown;
  unknown.SetSmUse(3, {.yields = true});
  EXPECT_NE(unknown.build_status().message().find("unknown task id 3"), std::string::npos);
}

}  // namespace
}  // namespace loom
