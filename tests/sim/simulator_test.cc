#include "sim/simulator.h"

#include <gtest/gtest.h>

#include "sim/sim_test_support.h"
#include "sim/trace.h"
#include "workload/activation_memory.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

Strategy Gpt3Interleaved() {
  Strategy s;
  s.tp = 8;
  s.pp = 8;
  s.dp = 2;
  s.vpp = 2;
  s.sp = true;
  s.schedule = ScheduleKind::kInterleaved;
  s.recompute = Recompute::kSelective;
  s.micro_batch = 1;
  s.global_batch = 64;
  s.seq_len = 2048;
  s.zero_stage = 1;
  return s;
}

TEST(Simulator, SameInputGivesIdenticalResultsAndTrace) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Result<SimulationResult> a = SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved());
  Result<SimulationResult> b = SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved());
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->timeline.makespan, b->timeline.makespan);
  EXPECT_EQ(ChromeTraceJson(a->step.graph, a->timeline, &a->memory),
            ChromeTraceJson(b->step.graph, b->timeline, &b->memory));
}

// A pipeline send carries b x s/cp x h activations split over tp, in the dtype activations are
// kept in: fp32 sends twice the bytes of bf16, and fp8 GEMMs keep bf16 activations.
TEST(Simulator, PipelineSendsCarryActivationsInTheirDtype) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-h100.json", 16);
  Strategy s = Gpt3Interleaved();
  const int64_t elements = int64_t{1} * 2048 * 12288 / 8;  // micro_batch * seq * hidden / tp
  for (const auto& [dtype, bytes] : {std::pair{Dtype::kBf16, 2}, std::pair{Dtype::kFp32, 4},
                                     std::pair{Dtype::kTf32, 4}, std::pair{Dtype::kFp8, 2}}) {
    s.dtype = dtype;
    Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s);
    ASSERT_TRUE(step.ok()) << step.status().message();
    EXPECT_EQ(step->payloads.p2p_bytes, elements * bytes) << kDtypeNames.Name(dtype);
  }
}

TEST(Simulator, MfuIsModelFlopsOverStepTimeGpusAndPeak) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double model_flops = ModelFlopsPerToken(in.model, 2048).training * 64 * 2048;
  EXPECT_NEAR(r->mfu, model_flops / (r->step_time_s * 128 * 312e12), 1e-12);
  EXPECT_NEAR(r->tokens_per_s, 64.0 * 2048 / r->step_time_s, 1e-6);
  // Selective recompute replays only the attention core: HFU a little above MFU.
  EXPECT_GT(r->hfu, r->mfu);
  EXPECT_LT(r->hfu, r->mfu * 1.05);
  EXPECT_EQ(r->stages.size(), 8u);
  const StepBreakdown& b = r->breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.optimizer_s, r->step_time_s, 1e-6);
  // The critical path has no gaps: its tasks' times add up to the step.
  const CriticalPathSummary& c = r->critical_path;
  EXPECT_NEAR(c.compute_s + c.tp_comm_s + c.pp_comm_s + c.dp_comm_s + c.optimizer_s, r->step_time_s,
              1e-6);
  EXPECT_GT(c.tp_comm_s, 0);
  EXPECT_GT(c.optimizer_s, 0);
}

// GPT-3 on TP8 PP8 DP2: every stage boundary and every data-parallel group crosses nodes. With two
// chunks per stage, the gradient buckets of the later chunk are reduced while the earlier chunk's
// backward passes still send gradients through the same NICs.
TEST(Simulator, GradientBucketsAndPipelineSendsShareTheNics) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  SimulationOptions alone;
  alone.share_bandwidth = false;
  Result<SimulationResult> shared = SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved());
  Result<SimulationResult> apart =
      SimulateTrainingStep(in.model, in.cluster, Gpt3Interleaved(), alone);
  ASSERT_TRUE(shared.ok() && apart.ok());
  // Sharing never speeds a step up; whether the slowed sends below lengthen it depends on the
  // pipeline's slack, which the calibration moves.
  EXPECT_GE(shared->step_time_s, apart->step_time_s);

  const StepGraph& step = shared->step;
  const StepTimeline& t = shared->timeline;
  int32_t slowed_sends = 0;
  for (TaskId send = 0; send < step.graph.num_tasks(); ++send) {
    const Task& task = step.graph.task(send);
    if (task.category != step.pp_category) continue;
    EXPECT_EQ(apart->timeline.end[send] - apart->timeline.start[send], task.duration);
    if (t.end[send] - t.start[send] == task.duration) continue;
    ++slowed_sends;
    // A send leaves through the sender's NIC and arrives through the receiver's; it is slowed
    // only while a gradient bucket of one of the two ranks is in flight.
    const std::span<const ChannelId> route = step.graph.route_channels(task.route);
    const int32_t sender = step.graph.rank_of(send);
    ASSERT_EQ(route[0], step.inter_node_port[sender].tx);
    bool overlaps_bucket = false;
    for (TaskId other = 0; other < step.graph.num_tasks(); ++other) {
      if (step.graph.task(other).category != step.dp_category) continue;
      const int32_t rank = step.graph.rank_of(other);
      overlaps_bucket |= (rank == sender || step.inter_node_port[rank].rx == route[1]) &&
                         t.start[other] < t.end[send] && t.start[send] < t.end[other];
    }
    EXPECT_TRUE(overlaps_bucket) << step.graph.DescribeTask(send);
  }
  EXPECT_GT(slowed_sends, 0);
  ASSERT_EQ(step.inter_node_port.size(), 8u);
  SimTime nic_shared;
  for (const Port& port : step.inter_node_port) {
    nic_shared += t.channel_shared[port.tx] + t.channel_shared[port.rx];
  }
  EXPECT_GT(nic_shared, SimTime::Zero());
  // The tensor-parallel collectives stay inside the node, on NVLink, away from that traffic.
  ASSERT_EQ(step.intra_node_port.size(), 8u);
  for (const Port& port : step.intra_node_port)
    EXPECT_EQ(t.channel_shared[port.tx], SimTime::Zero());
}

// Llama 3 8B on one DGX H100 with TP4 DP2: both groups inside the node. With
// --overlap-grad-reduce the gradient buckets of the last backward are reduced over NVLink while the
// rest of that backward runs its tp collectives over the same ports.
TEST(Simulator, GradientBucketsAndTensorParallelCollectivesShareNvlink) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.tp = 4;
  s.pp = 1;
  s.dp = 2;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 512;
  s.overlap_grad_reduce = true;
  SimulationOptions alone;
  alone.share_bandwidth = false;
  Result<SimulationResult> shared = SimulateTrainingStep(in.model, in.cluster, s);
  Result<SimulationResult> apart = SimulateTrainingStep(in.model, in.cluster, s, alone);
  ASSERT_TRUE(shared.ok()) << shared.status().message();
  ASSERT_TRUE(apart.ok());
  EXPECT_GT(shared->step_time_s, apart->step_time_s);
  const StepGraph& step = shared->step;
  int32_t slowed_tp = 0;
  for (TaskId id = 0; id < step.graph.num_tasks(); ++id) {
    if (step.graph.task(id).category != step.tp_category) continue;
    slowed_tp +=
        shared->timeline.end[id] - shared->timeline.start[id] > step.graph.task(id).duration;
  }
  EXPECT_GT(slowed_tp, 0);
  EXPECT_TRUE(step.inter_node_port.empty());
  ASSERT_EQ(step.intra_node_port.size(), 1u);
  EXPECT_GT(shared->timeline.channel_shared[step.intra_node_port[0].tx], SimTime::Zero());
  // The slowed collectives count as exposed communication, so the breakdown still adds up.
  const StepBreakdown& b = shared->breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.optimizer_s, shared->step_time_s,
              1e-9);
  EXPECT_GT(b.exposed_comm_s, apart->breakdown.exposed_comm_s);
  EXPECT_NEAR(b.compute_s, apart->breakdown.compute_s, 1e-12);
}

TEST(Simulator, FullRecomputeCostsTimeAndSavesMemory) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy selective = Gpt3Interleaved();
  Strategy full = selective;
  full.recompute = Recompute::kFull;
  Result<SimulationResult> a = SimulateTrainingStep(in.model, in.cluster, selective);
  Result<SimulationResult> b = SimulateTrainingStep(in.model, in.cluster, full);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(b->step_time_s, a->step_time_s);
  EXPECT_LT(b->peak_memory_bytes, a->peak_memory_bytes);
  EXPECT_GT(b->hfu, b->mfu * 1.2);  // the whole forward again: 4/3 of the model FLOPs
}

TEST(Simulator, FullModeMatchesTheSymmetricStep) {
  Inputs in = Load("models/megatron-22b.json", "hardware/clusters/dgx-a100.json", 4);
  Strategy s;
  s.tp = 8;
  s.pp = 2;
  s.dp = 2;
  s.micro_batch = 1;
  s.global_batch = 16;
  Result<SimulationResult> one = SimulateTrainingStep(in.model, in.cluster, s);
  SimulationOptions full;
  full.full = true;
  Result<SimulationResult> all = SimulateTrainingStep(in.model, in.cluster, s, full);
  ASSERT_TRUE(one.ok() && all.ok());
  EXPECT_EQ(all->step.graph.num_ranks(), 4);
  EXPECT_EQ(one->timeline.makespan, all->timeline.makespan);
}

// Korthikanti et al. 2022, Section 4.2.3 (tests/reference/korthikanti2022_activation_formulas.md):
// with 1F1B the first stage holds p micro-batches of its L/p layers, L layers' worth in all; the
// interleaved schedule multiplies this by 1 + (p-1)/(p*v). The simulator must reach these peaks
// from the schedule, with the per-layer bytes of the workload; the embedding's few bytes per
// micro-batch (token ids) come on top.
TEST(Simulator, FirstStageActivationPeakFollowsKorthikanti) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  s.dp = 1;
  s.global_batch = 16;
  Result<ActivationBytes> layer = LayerActivationBytes(in.model, s);
  Result<LayerOps> embedding = BuildEmbeddingOps(in.model, s);
  ASSERT_TRUE(layer.ok() && embedding.ok());
  const int64_t embedding_kept = SumActivationBytes(*embedding).kept;
  const int64_t p = s.pp, layers = in.model.num_layers;
  for (int64_t v : {1, 2, 3}) {
    s.vpp = v;
    s.schedule = v == 1 ? ScheduleKind::k1F1B : ScheduleKind::kInterleaved;
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
    ASSERT_TRUE(r.ok()) << r.status().message();
    // 1F1B: p chunk sets of L/p layers. Interleaved: the warm-up of 2(p-1) + (v-1)p forwards plus
    // the one in flight, of L/(pv) layers each: L (1 + (p-1)/(pv)).
    const int64_t layer_sets = v == 1 ? layers : (v * p + p - 1) * layers / (p * v);
    const int64_t peak = r->memory.ranks[0].peak_bytes_by_pool[r->step.activations];
    EXPECT_GE(peak, layer_sets * layer->kept) << "vpp " << v;
    EXPECT_LE(peak, layer_sets * layer->kept + s.global_batch * embedding_kept) << "vpp " << v;
  }
}

TEST(Simulator, InvalidStrategyListsEveryViolation) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 16);
  Strategy s = Gpt3Interleaved();
  s.tp = 3;
  s.global_batch = 63;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--tp 3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--global-batch 63"), std::string::npos)
      << r.status().message();
}

// DeepSeek-V3 as it was trained (DeepSeek-V3 report, Section 3.2): pp 16, ep 64, no tp, on 2048
// GPUs, with MLA and uneven stages (61 layers: 4 on the first stage, 1 on the last, 4 on each
// other). H100 stands in for the H800.
TEST(Simulator, DeepSeekV3SimulatesWithLatentAttentionExpertsAndUnevenStages) {
  Inputs in = Load("models/deepseek-v3.json", "hardware/clusters/dgx-h100.json", 256);
  Strategy s;
  s.pp = 16;
  s.dp = 128;
  s.ep = 64;
  s.first_stage_layers = 4;
  s.last_stage_layers = 1;
  s.micro_batch = 1;
  s.global_batch = 1920;
  s.seq_len = 4096;
  s.zero_stage = 1;
  s.recompute = Recompute::kFull;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->mfu, 0.05);
  EXPECT_LT(r->mfu, 0.6);
  EXPECT_TRUE(r->fits_in_memory);
  // The last stage holds one layer and the output head; a middle stage four MoE layers.
  EXPECT_LT(r->stages[15].compute_s, r->stages[1].compute_s);
}

// Data parallelism over two DGX H100 nodes with the gradient reduction and the weight gathers
// overlapped: NCCL's kernels hold 16 of each GPU's 132 SMs (the cluster file's
// inter_node.nccl_channels) while the compute beside them runs, which makes the step longer than
// with compute at its time alone; without the key they hold no SMs, and the basis says which key,
// but their traffic still takes HBM bandwidth from the memory-bound kernels (NcclHbmShare).
Strategy OverlappedDataParallel() {
  Strategy s;
  s.dp = 16;
  s.micro_batch = 1;
  s.global_batch = 32;
  s.seq_len = 4096;
  s.zero_stage = 1;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  return s;
}

TEST(Simulator, DataParallelKernelsTakeSmsFromTheComputeBesideThem) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 2);
  SimulationOptions alone;
  alone.share_sms = false;
  Result<SimulationResult> shared =
      SimulateTrainingStep(in.model, in.cluster, OverlappedDataParallel());
  Result<SimulationResult> apart =
      SimulateTrainingStep(in.model, in.cluster, OverlappedDataParallel(), alone);
  ASSERT_TRUE(shared.ok() && apart.ok());
  EXPECT_GT(shared->step_time_s, apart->step_time_s);
  EXPECT_GT(shared->breakdown.compute_slowed_s, 0);
  EXPECT_EQ(apart->breakdown.compute_slowed_s, 0);
  EXPECT_NE(shared->sm_basis.find("hold 16 of 132 SMs (inter_node.nccl_channels)"),
            std::string::npos)
      << shared->sm_basis;
  EXPECT_TRUE(apart->sm_basis.empty());

  ClusterSpec unknown = in.cluster;
  unknown.inter_node.nccl_channels.reset();
  Result<SimulationResult> unsaid =
      SimulateTrainingStep(in.model, unknown, OverlappedDataParallel());
  ASSERT_TRUE(unsaid.ok());
  EXPECT_GT(unsaid->step_time_s, apart->step_time_s);
  EXPECT_LT(unsaid->step_time_s, shared->step_time_s);
  EXPECT_NE(unsaid->sm_basis.find("the cluster file has no inter_node.nccl_channels"),
            std::string::npos)
      << unsaid->sm_basis;
}

// Inside one node the same collectives run NVLS on H100's NVSwitches, with its 16 CTAs.
TEST(Simulator, DataParallelInsideANodeHoldsTheNvlsChannels) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s = OverlappedDataParallel();
  s.dp = 8;
  s.global_batch = 16;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->sm_basis.find("hold 16 of 132 SMs (intra_node.nvls_channels)"), std::string::npos)
      << r->sm_basis;
}

// Sustained clocks: a step whose tensor work asks more than the GPU holds at its power limit runs
// at the lower clock (CostStageChunks, TensorClock); one that asks less runs at the calibration's.
TEST(Simulator, AStepAskingMoreTensorRateThanTheGpuHoldsRunsAtALowerClock) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.micro_batch = 4;
  s.global_batch = 8;
  s.seq_len = 4096;
  in.cluster.gpu.calibration.sustained_tensor_fraction = {};
  Result<SimulationResult> free = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(free.ok()) << free.status().message();
  EXPECT_EQ(free->tensor_clock, 1.0);
  EXPECT_NE(free->clock_basis.find("has no sustained_tensor_fraction_bf16"), std::string::npos)
      << free->clock_basis;
  // A ceiling above what the step asks changes nothing.
  in.cluster.gpu.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.95;
  Result<SimulationResult> above = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(above.ok()) << above.status().message();
  EXPECT_EQ(above->tensor_clock, 1.0);
  EXPECT_EQ(above->step_time_s, free->step_time_s);
  // One below it lowers the clock in proportion and slows the step's compute by as much.
  in.cluster.gpu.calibration.SustainedTensorFractionSlot(Dtype::kBf16) = 0.4;
  Result<SimulationResult> capped = SimulateTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_LT(capped->tensor_clock, 0.7);
  EXPECT_GT(capped->tensor_clock, 0.4);
  EXPECT_GT(capped->step_time_s, free->step_time_s * 1.3);
  EXPECT_NE(capped->clock_basis.find("tensor work at 0."), std::string::npos)
      << capped->clock_basis;
}

}  // namespace
}  // namespace loom
