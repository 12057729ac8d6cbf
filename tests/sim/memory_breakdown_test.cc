#include "sim/memory_breakdown.h"

#include <numeric>

#include <gtest/gtest.h>

#include "sim/sim_test_support.h"
#include "sim/simulator.h"
#include "workload/model_states.h"

namespace loom {
namespace {

// Llama 3 8B on one DGX H100: tp 2, pp 4, eight micro-batches of one sequence.
Strategy Pipeline(ScheduleKind schedule, Recompute recompute) {
  Strategy s;
  s.tp = 2;
  s.pp = 4;
  s.dp = 1;
  s.sp = true;
  s.schedule = schedule;
  s.vpp = schedule == ScheduleKind::kInterleaved || schedule == ScheduleKind::kZbV ? 2 : 1;
  s.recompute = recompute;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 4096;
  s.zero_stage = 1;
  return s;
}

SimulationResult MustSimulate(const Strategy& s, int64_t nodes = 1) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", nodes);
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : SimulationResult{};
}

int64_t Sum(const MemoryBreakdown& b) {
  return std::accumulate(b.items.begin(), b.items.end(), int64_t{0},
                         [](int64_t total, const MemoryItemBytes& i) { return total + i.bytes; });
}

// What every breakdown must say, whatever the strategy: its items sum to its stage's simulated
// peak exactly, the model states are the workload's, and the peak task changed memory at the peak.
void ExpectConsistent(const SimulationResult& r, const Strategy& s) {
  const Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  ASSERT_EQ(r.memory_by_stage.size(), static_cast<size_t>(s.pp));
  for (const MemoryBreakdown& b : r.memory_by_stage) {
    SCOPED_TRACE("stage " + std::to_string(b.stage));
    EXPECT_EQ(b.peak_bytes, r.stages[b.stage].peak_memory_bytes);
    EXPECT_EQ(Sum(b), b.peak_bytes);
    const Result<RankModelStates> states = ModelStatesPerRank(in.model, s, b.stage);
    ASSERT_TRUE(states.ok());
    EXPECT_EQ(b.Bytes(MemoryItem::kWeights), states->gpu.weights);
    EXPECT_EQ(b.Bytes(MemoryItem::kGradients), states->gpu.gradients);
    EXPECT_EQ(b.Bytes(MemoryItem::kOptimizerStates), states->gpu.optimizer);
    ASSERT_GE(b.peak_task.task, 0);
    EXPECT_LE(r.timeline.start[b.peak_task.task], b.peak_time);
    EXPECT_GE(r.timeline.end[b.peak_task.task], b.peak_time);
  }
  EXPECT_EQ(r.memory_by_stage[r.peak_stage].peak_bytes, r.peak_memory_bytes);
}

TEST(MemoryBreakdown, OneFOneBStageStashesPipelineDepthMinusItsIndex) {
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const Strategy s = Pipeline(ScheduleKind::k1F1B, recompute);
    const SimulationResult r = MustSimulate(s);
    ExpectConsistent(r, s);
    for (const MemoryBreakdown& b : r.memory_by_stage) {
      // Narayanan et al. 2021, Section 2.2.1: stage s of p holds p - s micro-batches in flight.
      EXPECT_EQ(b.stashed_micro_batches, 4 - b.stage)
          << kRecomputeNames.Name(recompute) << " stage " << b.stage;
    }
  }
}

// Without recompute, the peak is reached when the first steady-state forward allocates: stage s's
// forward of micro-batch p - s - 1.
void ExpectForwardsPeak(bool tp_comm_overlap) {
  Strategy s = Pipeline(ScheduleKind::k1F1B, Recompute::kNone);
  s.tp_comm_overlap = tp_comm_overlap;
  const SimulationResult r = MustSimulate(s);
  for (const MemoryBreakdown& b : r.memory_by_stage) {
    const PeakTask& t = b.peak_task;
    EXPECT_EQ(t.kind, WorkKind::kPass);
    EXPECT_EQ(t.pass, Pass::kF);
    EXPECT_EQ(t.micro_batch, 4 - b.stage - 1);
    EXPECT_EQ(t.virtual_stage, b.stage);
    EXPECT_EQ(t.chunk, 0);
    EXPECT_EQ(t.stream, "compute");
    EXPECT_EQ(t.start, b.peak_time);
    EXPECT_GT(t.end, t.start);
    EXPECT_EQ(DescribePeakTask(t), "F of micro-batch " + std::to_string(3 - b.stage) +
                                       ", chunk 0 (virtual stage " + std::to_string(b.stage) + ")");
  }
}

TEST(MemoryBreakdown, PeakTaskIsTheForwardThatAllocatesLast) { ExpectForwardsPeak(false); }

// With --tp-comm-overlap a zero-length marker starts each pass and allocates for it: the kernels
// it starts are named instead.
TEST(MemoryBreakdown, PeakTaskOfAPassWithHiddenTpIsItsKernels) { ExpectForwardsPeak(true); }

TEST(MemoryBreakdown, LogitsAreKeptOnTheLastStageOnly) {
  const Strategy s = Pipeline(ScheduleKind::k1F1B, Recompute::kSelective);
  const SimulationResult r = MustSimulate(s);
  for (const MemoryBreakdown& b : r.memory_by_stage) {
    if (b.stage + 1 < s.pp) {
      EXPECT_EQ(b.Bytes(MemoryItem::kLogits), 0) << "stage " << b.stage;
    } else {
      // One micro-batch in flight: its fp32 softmax over the vocabulary (128256 / tp 2 entries per
      // token) is most of what the loss keeps.
      const int64_t softmax = int64_t{4096} * (128256 / 2) * 4;
      EXPECT_GE(b.Bytes(MemoryItem::kLogits), softmax);
      EXPECT_LT(b.Bytes(MemoryItem::kLogits), softmax + softmax / 100);
    }
  }
}

TEST(MemoryBreakdown, SelectiveAndFullRecomputeHoldReplayBuffers) {
  for (Recompute recompute : {Recompute::kSelective, Recompute::kFull}) {
    const Strategy s = Pipeline(ScheduleKind::k1F1B, recompute);
    const SimulationResult r = MustSimulate(s);
    ExpectConsistent(r, s);
    bool any = false;
    for (const MemoryBreakdown& b : r.memory_by_stage)
      any = any || b.Bytes(MemoryItem::kRecomputeBuffers) > 0;
    EXPECT_TRUE(any) << kRecomputeNames.Name(recompute);
  }
}

// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving):
// stage s runs (p - s - 1) * 2 + (v - 1) * p warm-up forwards, and the first steady-state
// forward holds one more.
TEST(MemoryBreakdown, InterleavedStashesMegatronsWarmUpPlusOne) {
  const Strategy s = Pipeline(ScheduleKind::kInterleaved, Recompute::kNone);
  const SimulationResult r = MustSimulate(s);
  ExpectConsistent(r, s);
  for (const MemoryBreakdown& b : r.memory_by_stage) {
    EXPECT_EQ(b.stashed_micro_batches, (4 - b.stage - 1) * 2 + (2 - 1) * 4 + 1)
        << "stage " << b.stage;
  }
}

TEST(MemoryBreakdown, ZeroBubbleVSumsToThePeak) {
  const Strategy s = Pipeline(ScheduleKind::kZbV, Recompute::kNone);
  const SimulationResult r = MustSimulate(s);
  ExpectConsistent(r, s);
  // The V places the loss on stage 0 (its second chunk), beside the embedding.
  EXPECT_GT(r.memory_by_stage[0].Bytes(MemoryItem::kLogits), 0);
}

TEST(MemoryBreakdown, ZeroThreeGatheredWeightsAreCommunicationBuffers) {
  Strategy s = Pipeline(ScheduleKind::k1F1B, Recompute::kSelective);
  s.pp = 1;
  s.tp = 2;
  s.dp = 4;
  s.zero_stage = 3;
  const SimulationResult r = MustSimulate(s);
  ExpectConsistent(r, s);
  const MemoryBreakdown& b = r.memory_by_stage[0];
  EXPECT_GT(b.Bytes(MemoryItem::kCommunicationBuffers), 0);
  EXPECT_EQ(b.Bytes(MemoryItem::kCommunicationBuffers),
            r.memory.ranks[0].peak_bytes_by_pool[r.step.gathered_weights]);
  // One stage holds the loss too.
  EXPECT_GT(b.Bytes(MemoryItem::kLogits), 0);
}

TEST(MemoryBreakdown, ItemsFollowTheEnumOrderAndNameEveryPoolOnce) {
  const SimulationResult r = MustSimulate(Pipeline(ScheduleKind::k1F1B, Recompute::kNone));
  const std::vector<MemoryItemBytes>& items = r.memory_by_stage[0].items;
  std::vector<MemoryItem> kinds;
  for (const MemoryItemBytes& i : items) kinds.push_back(i.item);
  EXPECT_EQ(kinds,
            (std::vector<MemoryItem>{MemoryItem::kWeights, MemoryItem::kGradients,
                                     MemoryItem::kOptimizerStates, MemoryItem::kStashedActivations,
                                     MemoryItem::kRecomputeBuffers, MemoryItem::kLogits}));
}

// A plan file written before the split holds one "model states" pool: read back, its breakdown
// names it as one item and still sums to the peak.
TEST(MemoryBreakdown, PlanFilesWithOneModelStatesPoolKeepIt) {
  StepGraph step;
  step.stages = 1;
  step.replicas = 1;
  TaskGraph& g = step.graph;
  g.AddPool("model states");
  g.AddPool("activations");
  NameStepParts(step);
  const StreamId compute = g.AddStream(0, "compute");
  g.AddTask({.stream = compute,
             .duration = SimTime::FromMicros(10),
             .alloc_at_start_bytes = 40,
             .pool = step.activations});
  g.AddTask({.stream = compute,
             .duration = SimTime::FromMicros(10),
             .free_at_end_bytes = 40,
             .pool = step.activations});
  const Result<StepTimeline> timeline = Simulate(g);
  ASSERT_TRUE(timeline.ok());
  const MemoryBaseline baseline[] = {{0, step.model_states, 1000}};
  const Result<MemoryReport> memory = TrackMemory(g, *timeline, baseline);
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  Result<PipelineSchedule> schedule = BuildSchedule(ScheduleKind::k1F1B, 1, 1, 1);
  ASSERT_TRUE(schedule.ok());
  const std::vector<MemoryBreakdown> b = BreakDownMemory(step, *timeline, *memory, *schedule);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].peak_bytes, 1040);
  EXPECT_EQ(b[0].Bytes(MemoryItem::kModelStates), 1000);
  EXPECT_EQ(b[0].Bytes(MemoryItem::kStashedActivations), 40);
  EXPECT_EQ(b[0].items.size(), 2u);
  EXPECT_EQ(b[0].stashed_micro_batches, 1);
  // No work is recorded in such a graph: the task is named by its stream.
  EXPECT_EQ(b[0].peak_task.task, 0);
  EXPECT_EQ(b[0].peak_task.micro_batch, -1);
}

TEST(MemoryBreakdown, PeakStageIsTheFirstOfTheHighest) {
  std::vector<MemoryBreakdown> stages(3);
  stages[0].peak_bytes = 5;
  stages[1].peak_bytes = 9;
  stages[2].peak_bytes = 9;
  EXPECT_EQ(PeakStage(stages), 1);
  EXPECT_EQ(PeakStage({}), 0);
}

}  // namespace
}  // namespace loom
