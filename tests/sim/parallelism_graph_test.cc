// The step graph's communication overlap, ZeRO and ring-attention tasks against hand-worked
// timelines: every number below is derived in the comment above it.

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "schedule/schedule.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/sim_test_support.h"
#include "sim/step_builder.h"

namespace loom {
namespace {

constexpr int64_t kMs = 1'000'000;
SimTime Ms(double ms) { return SimTime::FromNanos(static_cast<int64_t>(ms * kMs)); }

// One stage, |m| micro-batches of 1F1B (F then BW): F |f| ms, B |b| ms, W |w| ms.
ChunkCost Chunk(double f, double b, double w) {
  ChunkCost c;
  c.forward.time = Ms(f);
  c.backward_input.time = Ms(b);
  c.backward_weight.time = Ms(w);
  c.kept_activation_bytes = 1;
  return c;
}

StepGraphConfig OneStage() {
  StepGraphConfig config;
  config.dp.optimizer_time = {SimTime()};
  config.dp.param_gather_time = {SimTime()};
  return config;
}

struct StepRun {
  StepGraph step;
  StepTimeline timeline;
};

StepRun BuildAndRun(int32_t m, const ChunkCost& chunk, const StepGraphConfig& config) {
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 1, m, 1);
  EXPECT_TRUE(schedule.ok());
  StepRun run{BuildStepGraph(*schedule, {chunk}, config), {}};
  Result<StepTimeline> timeline = Simulate(run.step.graph);
  EXPECT_TRUE(timeline.ok()) << timeline.status().message();
  run.timeline = *timeline;
  return run;
}

// m = 2, F 1 ms, BW 2 ms, two buckets of 1 ms: F 0..1, BW 1..3, F 3..4, BW 4..6. Overlapped: the
// last BW is cut in two; bucket 0 reduces 5..6 beside the second half, bucket 1 6..7: step 7 ms.
// Not overlapped: both wait for the end of the backward at 6 ms: 6..7 and 7..8, step 8 ms.
TEST(ParallelismGraph, GradReduceOverlapHidesAllButTheLastBucket) {
  StepGraphConfig config = OneStage();
  config.dp.buckets = {2};
  config.dp.bucket_time = {Ms(1)};
  config.dp.overlap_grad_reduce = true;
  StepRun overlapped = BuildAndRun(2, Chunk(1, 1, 1), config);
  EXPECT_EQ(overlapped.timeline.makespan, Ms(7));
  EXPECT_TRUE(RunsBesideCompute(overlapped.step, overlapped.timeline, overlapped.step.dp_category));
  config.dp.overlap_grad_reduce = false;
  StepRun serial = BuildAndRun(2, Chunk(1, 1, 1), config);
  EXPECT_EQ(serial.timeline.makespan, Ms(8));
  EXPECT_FALSE(RunsBesideCompute(serial.step, serial.timeline, serial.step.dp_category));
}

// m = 1, F 3 ms, BW 2 ms, three buckets, a 3 ms weight all-gather. After the optimizer: 5 + 3 =
// 8 ms. At the start, bucket by bucket (1 ms each): the forward's thirds run 1..2, 2..3, 3..4,
// each behind its bucket, then BW 4..6: 6 ms.
TEST(ParallelismGraph, ParamGatherOverlapRunsBucketsUnderTheForward) {
  StepGraphConfig config = OneStage();
  config.dp.buckets = {3};
  config.dp.bucket_time = {SimTime()};
  config.dp.param_gather_time = {Ms(3)};
  StepRun after = BuildAndRun(1, Chunk(3, 1, 1), config);
  EXPECT_EQ(after.timeline.makespan, Ms(8));
  config.dp.overlap_param_gather = true;
  StepRun overlapped = BuildAndRun(1, Chunk(3, 1, 1), config);
  EXPECT_EQ(overlapped.timeline.makespan, Ms(6));
  EXPECT_TRUE(RunsBesideCompute(overlapped.step, overlapped.timeline, overlapped.step.dp_category));
}

// ZeRO-3 over two layers of 1,000 bytes, each gathered in 1 ms and its gradients reduced in 1 ms
// after every micro-batch.
StepGraphConfig ZeroThreeTwoLayers() {
  StepGraphConfig config = OneStage();
  config.dp.buckets = {2};
  config.dp.bucket_time = {Ms(1)};
  config.dp.reduce_every_micro_batch = true;
  config.zero3.layer_gathers = 2;
  config.zero3.layer_gather_time = Ms(1);
  config.zero3.layer_gather_bytes = 1000;
  return config;
}

// ZeRO-3 with two layers, m = 1: gathers of 1 ms, F 2 ms (1 per layer), BW 4 ms (2 per layer),
// reduce-scatters of 1 ms per layer. Gathers G0 0..1, G1 1..2; F layers 1..2, 2..3; the backward's
// G2 may start once F layer 0 freed its weights (2): 2..3; G3 once F layer 1 did (3): 3..4; BW
// layers 3..5 and 5..7; reduce-scatters 5..6 and 7..8: step 8 ms. At most two layers' weights
// are gathered at once.
TEST(ParallelismGraph, ZeroThreeGathersEachLayerOneAheadAndFreesIt) {
  StepRun run = BuildAndRun(1, Chunk(2, 2, 2), ZeroThreeTwoLayers());
  EXPECT_EQ(run.timeline.makespan, Ms(8));
  Result<MemoryReport> memory = TrackMemory(run.step.graph, run.timeline, {});
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(memory->ranks[0].peak_bytes, 2001);  // two layers and the micro-batch's 1 byte
  EXPECT_EQ(memory->ranks[0].peak_bytes_by_pool[run.step.gathered_weights], 2000);
  EXPECT_TRUE(RunsBesideCompute(run.step, run.timeline, run.step.dp_category));
}

// ZeroThreeTwoLayers fetched synchronously: each gather issued by the host in 0.5 ms, a
// backward's issue 0.25 ms more; the host thread on, issuing the passes at no cost.
StepGraphConfig SynchronousZeroThree() {
  StepGraphConfig config = ZeroThreeTwoLayers();
  config.zero3.synchronous_fetch = true;
  config.zero3.gather_issue_time = Ms(0.5);
  config.zero3.reduce_issue_time = Ms(0.25);
  config.host.enabled = true;
  config.host.optimizer_lead = {SimTime()};
  return config;
}

// DeepSpeed's synchronous fetch (ZeroThreeConfig::synchronous_fetch) as SynchronousZeroThree sets
// it. F0's own gather is issued first [0, 0.5], runs [0.5, 1.5]; the issue
// of G1 waits for it [1.5, 2]; F0 [2, 3] beside G1 [2, 3]; G2's issue waits for F0 [3, 3.5]; F1
// [3.5, 4.5] beside G2 [3.5, 4.5]; G3's issue [4.5, 5.25]; BW0 [5.25, 7.25] beside G3 [5.25,
// 6.25]; its reduction [7.25, 8.25]; the last issue waits for it (torch.cuda.synchronize())
// [8.25, 9]; BW1 [9, 11]; reduction [11, 12]: step 12 ms, against 8 with the overlapped fetch.
// With half of every gather not prefetchable, that half runs after the segment before ends: G1's
// [3, 3.5] pushes F1 to [4, 5], G2's [5, 5.5] BW0 to [6.25, 8.25], G3's [8.25, 8.75] is hidden
// by the reduction [8.25, 9.25]: BW1 [10, 12], step 13 ms.
TEST(ParallelismGraph, ZeroThreeSynchronousFetchOverlapsOnlyTheNextGather) {
  for (auto [share, step_ms] : {std::pair{0.0, 12.0}, std::pair{0.5, 13.0}}) {
    StepGraphConfig config = SynchronousZeroThree();
    config.zero3.unprefetched_share = share;
    StepRun run = BuildAndRun(1, Chunk(2, 2, 2), config);
    EXPECT_EQ(run.timeline.makespan, Ms(step_ms)) << "share " << share;
    std::vector<TaskId> passes, issues;
    for (TaskId t = 0; t < run.step.graph.num_tasks(); ++t) {
      if (run.step.work[t].kind == WorkKind::kPass) passes.push_back(t);
      if (run.step.graph.DescribeTask(t).find("zero-3 fetch issue") != std::string::npos)
        issues.push_back(t);
    }
    ASSERT_EQ(passes.size(), 4u);
    EXPECT_EQ(issues.size(), 5u);  // one per gather, and the first fetch's own
    EXPECT_EQ(run.timeline.start[passes[0]], Ms(2));
    EXPECT_EQ(run.timeline.start[passes[3]], Ms(share > 0 ? 10 : 9));
  }
  // The host's work after the optimizer (DeepSpeed's gather of its persistent weights) ends the
  // step: 2 ms more.
  StepGraphConfig config = SynchronousZeroThree();
  config.zero3.post_step_host_time = Ms(2);
  EXPECT_EQ(BuildAndRun(1, Chunk(2, 2, 2), config).timeline.makespan, Ms(14));
  // Without the host thread there is no one to wait: the overlapped fetch of the test above.
  config = SynchronousZeroThree();
  config.host.enabled = false;
  EXPECT_EQ(BuildAndRun(1, Chunk(2, 2, 2), config).timeline.makespan, Ms(8));
}

// Later DeepSpeed's fetch (not synchronous): the host issues each gather in 0.5 ms (a backward's
// 0.25 ms more, its reduction's) before the segment's own issue, waiting for nothing on the GPU;
// the gather still runs one segment ahead. Host: I0 [0, 0.5], I1 [0.5, 1], I2 [1, 1.75], I3
// [1.75, 2.5]. G0 waits for I0 [0.5, 1.5]: F0 [1.5, 2.5]; G1 [1.5, 2.5]: F1 [2.5, 3.5]; G2 once
// F0 ended [2.5, 3.5]: BW0 [3.5, 5.5], its reduction [5.5, 6.5]; G3 [3.5, 4.5]: BW1 [5.5, 7.5],
// reduction [7.5, 8.5]: step 8.5 ms, half a millisecond (the first issue) over the issue-free
// 8. With half of every gather not prefetchable, that half waits for the segment before: G0's
// [1, 1.5] (none before), F0 [1.5, 2.5]; G1's first half [1.5, 2] and rest [2.5, 3]: F1 [3, 4];
// G2 [3, 3.5] and [4, 4.5]: BW0 [4.5, 6.5]; G3 [4.5, 5] and [6.5, 7]: BW1 [7, 9], its reduction
// [9, 10]: 10 ms.
TEST(ParallelismGraph, ZeroThreeIssuedFetchRunsAheadUnlessItCannotBePrefetched) {
  for (auto [share, step_ms] : {std::pair{0.0, 8.5}, std::pair{0.5, 10.0}}) {
    StepGraphConfig config = SynchronousZeroThree();
    config.zero3.synchronous_fetch = false;
    config.zero3.unprefetched_share = share;
    StepRun run = BuildAndRun(1, Chunk(2, 2, 2), config);
    EXPECT_EQ(run.timeline.makespan, Ms(step_ms)) << "share " << share;
    int issues = 0;
    for (TaskId t = 0; t < run.step.graph.num_tasks(); ++t)
      issues += run.step.graph.DescribeTask(t).find("zero-3 fetch issue") != std::string::npos;
    EXPECT_EQ(issues, 4);  // one per gather: none waits for the GPU, so none comes first
  }
}

// ZeRO-2 reduce-scatters every micro-batch's gradients: m = 3 with one bucket gives 3 reductions.
TEST(ParallelismGraph, ZeroTwoReducesEveryMicroBatch) {
  StepGraphConfig config = OneStage();
  config.dp.buckets = {1};
  config.dp.bucket_time = {Ms(1)};
  int reductions_once = 0, reductions_each = 0;
  for (bool each : {false, true}) {
    config.dp.reduce_every_micro_batch = each;
    StepRun run = BuildAndRun(3, Chunk(1, 1, 1), config);
    int& count = each ? reductions_each : reductions_once;
    for (TaskId t = 0; t < run.step.graph.num_tasks(); ++t)
      count += run.step.graph.task(t).category == run.step.dp_category;
  }
  EXPECT_EQ(reductions_once, 1);
  EXPECT_EQ(reductions_each, 3);
}

// Ring attention in a 6 ms forward: 2 ms of other kernels, then 4 blocks of 1 ms of attention
// with 3 ring transfers of |send| ms, each beside the block before it. Each step takes
// max(block, send): 2 + 3 * max(1, send) + 1.
TEST(ParallelismGraph, RingTransfersOverlapTheAttentionBlockBeforeThem) {
  StepGraphConfig config = OneStage();
  config.cp_ring = true;
  for (auto [send, step_ms] : {std::pair{2.0, 9.0}, std::pair{0.5, 6.0}, std::pair{1.0, 6.0}}) {
    ChunkCost chunk = Chunk(6, 0, 0);
    chunk.forward.attention = Ms(4);
    chunk.forward.ring_step = Ms(send);
    chunk.forward.ring_steps = 3;
    StepRun run = BuildAndRun(1, chunk, config);
    EXPECT_EQ(run.timeline.makespan, Ms(step_ms)) << "send " << send;
    EXPECT_EQ(run.step.ring_transfers.size(), 3u);
    EXPECT_TRUE(RunsBesideCompute(run.step, run.timeline, run.step.cp_category));
  }
}

// --tp-comm-overlap: of 2 ms of tp collectives, 1.5 run beside the 3 ms of kernels and 0.5
// after them: the forward ends at 3.5 ms instead of 5.
TEST(ParallelismGraph, HiddenTensorParallelCommRunsBesideTheKernels) {
  ChunkCost chunk = Chunk(5, 0, 0);
  chunk.forward.tp_comm = Ms(2);
  StepRun plain = BuildAndRun(1, chunk, OneStage());
  EXPECT_EQ(plain.timeline.makespan, Ms(5));
  EXPECT_FALSE(RunsBesideCompute(plain.step, plain.timeline, plain.step.tp_category));
  chunk.forward.tp_hidden = Ms(1.5);
  StepRun overlapped = BuildAndRun(1, chunk, OneStage());
  EXPECT_EQ(overlapped.timeline.makespan, Ms(3.5));
  EXPECT_TRUE(
      RunsBesideCompute(overlapped.step, overlapped.timeline, overlapped.step.tp_hidden_category));
}

}  // namespace
}  // namespace loom
