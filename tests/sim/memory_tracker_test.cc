#include "sim/memory_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom {
namespace {

SimTime AtMicros(double micros) { return SimTime::FromMicros(micros); }

Result<MemoryReport> Track(const TaskGraph& graph, const std::vector<MemoryBaseline>& baselines) {
  const Result<StepTimeline> timeline = Simulate(graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().ToString();
  if (!timeline.ok()) return timeline.status();
  return TrackMemory(graph, *timeline, baselines);
}

void ExpectTimeline(const RankMemory& rank,
                    const std::vector<std::pair<double, int64_t>>& expected) {
  ASSERT_EQ(rank.timeline.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rank.timeline[i].time, AtMicros(expected[i].first)) << "sample " << i;
    EXPECT_EQ(rank.timeline[i].bytes, expected[i].second) << "sample " << i;
  }
}

// Two micro-batches on one stage, GPipe order: F0 F1 B1 B0, 10 us each. Forwards keep 100 bytes
// of activations each until their backward; B1 also uses 30 bytes of workspace.
TEST(MemoryTracker, PeakTimeAndTimelineOfAKnownSequence) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  const PoolId activations = graph.AddPool("activations");
  const PoolId workspace = graph.AddPool("workspace");
  const PoolId weights = graph.AddPool("weights");
  graph.AddTask(
      {.stream = s, .duration = AtMicros(10), .alloc_at_start_bytes = 100, .pool = activations});
  graph.AddTask(
      {.stream = s, .duration = AtMicros(10), .alloc_at_start_bytes = 100, .pool = activations});
  const TaskId b1 = graph.AddTask(
      {.stream = s, .duration = AtMicros(10), .free_at_end_bytes = 100, .pool = activations});
  graph.AddMemoryEvent(b1, MemoryPhase::kAtStart, workspace, 30);
  graph.AddMemoryEvent(b1, MemoryPhase::kAtEnd, workspace, -30);
  graph.AddTask(
      {.stream = s, .duration = AtMicros(10), .free_at_end_bytes = 100, .pool = activations});

  const Result<MemoryReport> report = Track(graph, {{.rank = 0, .pool = weights, .bytes = 1000}});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const RankMemory& rank = report->ranks.at(0);
  EXPECT_EQ(rank.peak_bytes, 1230);
  EXPECT_EQ(rank.peak_time, AtMicros(20));
  EXPECT_EQ(rank.peak_bytes_by_pool, (std::vector<int64_t>{0, 200, 30, 1000}));
  EXPECT_EQ(rank.end_bytes, 1000);
  ExpectTimeline(rank, {{0, 1100}, {10, 1200}, {20, 1230}, {30, 1100}, {40, 1000}});
  // B1's workspace set the peak, with both forwards' activations live (the baseline counts none).
  EXPECT_EQ(rank.peak_task, b1);
  EXPECT_EQ(rank.peak_buffers_by_pool, (std::vector<int32_t>{0, 2, 1, 0}));
}

TEST(MemoryTracker, ABaselineAlonePeaksWithNoTask) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  const PoolId weights = graph.AddPool("weights");
  graph.AddTask({.stream = s, .duration = AtMicros(10)});
  const Result<MemoryReport> report = Track(graph, {{.rank = 0, .pool = weights, .bytes = 64}});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ranks[0].peak_bytes, 64);
  EXPECT_EQ(report->ranks[0].peak_task, -1);
  EXPECT_EQ(report->ranks[0].peak_buffers_by_pool, (std::vector<int32_t>{0, 0}));
}

TEST(MemoryTracker, FreesAtAnEndApplyBeforeAllocationsAtTheSameStart) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  // Each kernel takes 100 bytes of workspace; the second reuses the first's freed blocks.
  graph.AddTask({.stream = s,
                 .duration = AtMicros(10),
                 .alloc_at_start_bytes = 100,
                 .free_at_end_bytes = 100});
  graph.AddTask({.stream = s,
                 .duration = AtMicros(10),
                 .alloc_at_start_bytes = 100,
                 .free_at_end_bytes = 100});
  const Result<MemoryReport> report = Track(graph, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->ranks[0].peak_bytes, 100);
  EXPECT_EQ(report->ranks[0].peak_time, AtMicros(0));
  ExpectTimeline(report->ranks[0], {{0, 100}, {20, 0}});
}

TEST(MemoryTracker, ZeroLengthTaskAllocatesBeforeItFrees) {
  TaskGraph graph;
  const StreamId s = graph.AddStream(0, "compute");
  graph.AddTask({.stream = s, .duration = AtMicros(5)});
  graph.AddTask({.stream = s, .alloc_at_start_bytes = 64, .free_at_end_bytes = 64});
  const Result<MemoryReport> report = Track(graph, {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  // The spike lasts no time, so the timeline never shows it, but the peak does.
  EXPECT_EQ(report->ranks[0].peak_bytes, 64);
  EXPECT_EQ(report->ranks[0].peak_time, AtMicros(5));
  ExpectTimeline(report->ranks[0], {{0, 0}});
}

TEST(MemoryTracker, RanksAreCountedSeparately) {
  TaskGraph graph;
  graph.AddTask({.stream = graph.AddStream(0, "compute"),
                 .duration = AtMicros(4),
                 .alloc_at_start_bytes = 7});
  graph.AddTask({.stream = graph.AddStream(1, "compute"),
                 .duration = AtMicros(4),
                 .alloc_at_start_bytes = 9,
                 .free_at_end_bytes = 9});
  const Result<MemoryReport> report =
      Track(graph, {{.rank = 1, .pool = kDefaultPool, .bytes = 50}});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[0].peak_bytes, 7);
  EXPECT_EQ(report->ranks[0].end_bytes, 7);
  EXPECT_EQ(report->ranks[1].peak_bytes, 59);
  EXPECT_EQ(report->ranks[1].end_bytes, 50);
  ExpectTimeline(report->ranks[1], {{0, 59}, {4, 50}});
}

TEST(MemoryTracker, FreeWithoutAllocationIsAnErrorNamingTheTask) {
  TaskGraph graph;
  const PoolId activations = graph.AddPool("activations");
  graph.AddTask({.stream = graph.AddStream(0, "compute"),
                 .duration = AtMicros(2),
                 .name = graph.Intern("B mb3"),
                 .free_at_end_bytes = 100,
                 .pool = activations});
  const Result<MemoryReport> report = Track(graph, {});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "memory: pool 'activations' on rank 0 would hold -100 bytes at 2.000 us, after "
            "'B mb3' (task 0, rank 0 stream 'compute') frees 100 bytes; every free needs an "
            "earlier allocation (or a baseline) in the same pool and rank");
}

TEST(MemoryTracker, BaselineOnAnUnknownRankIsAnError) {
  TaskGraph graph;
  graph.AddTask({.stream = graph.AddStream(0, "compute"), .duration = AtMicros(2)});
  const Result<MemoryReport> report = Track(graph, {{.rank = 4, .pool = 0, .bytes = 1}});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("rank 4"), std::string::npos);
}

}  // namespace
}  // namespace loom
