// Issue 5's parallelisms through the whole simulator, on shipped models and clusters: each
// feature must move the step time or the memory the way its mechanism says, and show in the
// trace as tasks running beside compute.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/sim_test_support.h"
#include "sim/simulator.h"

namespace loom {
namespace {

SimulationResult MustSimulate(const Inputs& in, const Strategy& s) {
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : SimulationResult{};
}

// Llama 3 8B on 4 DGX H100, tp 4 with sp, long sequences.
Strategy LongContext(int64_t cp) {
  Strategy s;
  s.tp = 4;
  s.sp = true;
  s.cp = cp;
  s.dp = 8 / cp;
  s.micro_batch = 1;
  s.global_batch = 16;
  s.seq_len = 32768;
  s.recompute = Recompute::kSelective;
  return s;
}

TEST(Parallelism, MoreContextParallelismLeavesLessActivationMemoryPerRank) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  int64_t previous = INT64_MAX;
  for (int64_t cp : {1, 2, 4, 8}) {
    SimulationResult r = MustSimulate(in, LongContext(cp));
    const int64_t activations = r.memory.ranks[0].peak_bytes_by_pool[r.step.activations];
    EXPECT_LT(activations, previous) << "cp " << cp;
    previous = activations;
  }
}

TEST(Parallelism, RingAttentionOverlapsItsTransfersAndBeatsTheAllGather) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  Strategy s = LongContext(4);
  SimulationResult ring = MustSimulate(in, s);
  s.cp_comm = CpComm::kAllGather;
  SimulationResult gather = MustSimulate(in, s);
  EXPECT_TRUE(RunsBesideCompute(ring.step, ring.timeline, ring.step.cp_category));
  EXPECT_FALSE(ring.step.ring_transfers.empty());
  EXPECT_TRUE(gather.step.ring_transfers.empty());
  EXPECT_LT(ring.step_time_s, gather.step_time_s);
  // Same kernels either way: the ring changes only how K/V move.
  EXPECT_NEAR(ring.breakdown.compute_s, gather.breakdown.compute_s,
              0.02 * gather.breakdown.compute_s);
}

// The hidden share runs beside the kernels: it is neither compute-stream time nor exposed
// communication, so a pipeline's bubble stays visible and the breakdown still sums to the step.
TEST(Parallelism, TensorParallelOverlapKeepsTheBreakdownWhole) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.sp = true;
  s.tp_comm_overlap = true;
  s.global_batch = 8;
  s.seq_len = 4096;
  SimulationResult r = MustSimulate(in, s);
  const StepBreakdown& b = r.breakdown;
  EXPECT_NEAR(b.compute_s + b.exposed_comm_s + b.bubble_s + b.optimizer_s, r.step_time_s,
              1e-6 * r.step_time_s);
  // 1F1B with 8 micro-batches on 4 stages: about (p - 1) / (m + p - 1) = 3/11 of the step idles.
  EXPECT_GT(r.bubble_fraction, 0.2);
}

TEST(Parallelism, TensorParallelOverlapHidesCollectivesUnderGemms) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.global_batch = 8;
  s.seq_len = 4096;
  SimulationResult plain = MustSimulate(in, s);
  s.tp_comm_overlap = true;
  SimulationResult overlapped = MustSimulate(in, s);
  EXPECT_LT(overlapped.step_time_s, plain.step_time_s);
  EXPECT_TRUE(
      RunsBesideCompute(overlapped.step, overlapped.timeline, overlapped.step.tp_hidden_category));
  EXPECT_FALSE(RunsBesideCompute(plain.step, plain.timeline, plain.step.tp_category));
  // Hidden, not removed: the first of tp chunks of each collective stays exposed.
  EXPECT_GT(overlapped.critical_path.tp_comm_s, 0.0);
}

// Megatron-LM's column-parallel linears (the shipped megatron-core profile) issue their backward
// collectives beside their own GEMMs: the step is shorter than with every collective blocking,
// the hidden part runs on the tp stream beside compute, and its NCCL kernels hold SMs, which
// slows the GEMMs beside them.
TEST(Parallelism, MegatronsAsynchronousBackwardHidesCollectivesAndSlowsTheGemmsBeside) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 1);
  Result<FrameworkProfile> megatron =
      LoadFrameworkProfile(Shipped("hardware/frameworks/megatron-core.json"));
  ASSERT_TRUE(megatron.ok()) << megatron.status().message();
  ASSERT_TRUE(megatron->tp_backward_overlap);
  FrameworkProfile blocking = *megatron;
  blocking.tp_backward_overlap = false;
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = 4;
  s.seq_len = 2048;
  s.dtype = Dtype::kFp16;
  s.recompute = Recompute::kSelective;
  in.model.num_layers = 8;
  const auto run = [&](const FrameworkProfile& f) {
    SimulationOptions options;
    options.framework = f;
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? std::move(r).value() : SimulationResult{};
  };
  const SimulationResult on = run(*megatron);
  const SimulationResult off = run(blocking);
  EXPECT_LT(on.step_time_s, off.step_time_s);
  EXPECT_TRUE(RunsBesideCompute(on.step, on.timeline, on.step.tp_hidden_category));
  EXPECT_GT(on.breakdown.compute_slowed_s, off.breakdown.compute_slowed_s);
  EXPECT_LT(on.breakdown.exposed_comm_s, off.breakdown.exposed_comm_s);
  // NCCL's 24 NVLink channels of a DGX A100 (dgx-a100.json), one CTA each.
  EXPECT_NE(on.sm_basis.find("asynchronous tp collectives hold 24 SMs"), std::string::npos)
      << on.sm_basis;
  EXPECT_EQ(off.sm_basis.find("asynchronous"), std::string::npos) << off.sm_basis;
}

// The shipped framework file hardware/frameworks/<name>.json.
FrameworkProfile ShippedFrameworkProfile(const std::string& name) {
  Result<FrameworkProfile> f =
      LoadFrameworkProfile(Shipped("hardware/frameworks/" + name + ".json"));
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? *f : FrameworkProfile{};
}

// Narayanan et al. 2021 Table 2's ZeRO-3 job of GPT-3 175B on 768 GPUs: dp 768, micro-batch 2,
// fp16, full recompute, the reductions overlapped.
Strategy TableTwoZeroThree() {
  Strategy s;
  s.dp = 768;
  s.zero_stage = 3;
  s.micro_batch = 2;
  s.global_batch = 1536;
  s.seq_len = 2048;
  s.dtype = Dtype::kFp16;
  s.recompute = Recompute::kFull;
  s.overlap_grad_reduce = true;
  return s;
}

// DeepSpeed's ZeRO-3 of 2021 (hardware/frameworks/deepspeed-zero3-2021.json) on GPT-3 175B over
// 96 DGX A100 nodes, dp 768, full recompute, worked from its file and the model:
// - a gather per linear weight: 4 x 96 = 384 a pass, each issued in 11.1 us x 768 ranks;
// - the layer's weights are QKV 3h^2, projection h^2, MLP 4h^2 and 4h^2 (h^2 = 151M): after the
//   recompute a weight is released when twice the weights after it exceed 1e9 (QKV 18h^2,
//   projection 16h^2, up 8h^2; not down, 0): the backward gathers 8 of every 12 parameters twice;
// - no weight reaches 1e9 parameters, so every gather is prefetched;
// - persistent weights (under 1e5 parameters): 2 x 193 norm tensors (two LayerNorms a layer and
//   the final one, weight and bias) and 4 biases a layer: 770 tensors of 12288-49152 parameters,
//   each held in 768 slices: 591360 copies of 13.3 us after the step, 7.865 s.
TEST(Parallelism, DeepSpeedZeroThreeFetchesEachWeightAsItsCodeDoes) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 96);
  const FrameworkProfile deepspeed = ShippedFrameworkProfile("deepspeed-zero3-2021");
  Strategy s = TableTwoZeroThree();
  SimulationOptions options;
  options.framework = deepspeed;
  Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s, options);
  ASSERT_TRUE(step.ok()) << step.status().message();
  const ZeroThreeConfig& z = step->config.zero3;
  EXPECT_EQ(z.layer_gathers, 384);
  EXPECT_EQ(step->config.dp.buckets, std::vector<int32_t>{384});
  EXPECT_TRUE(z.synchronous_fetch);
  EXPECT_EQ(z.gather_issue_time, SimTime::FromNanos(11'100 * 768));
  EXPECT_EQ(z.reduce_issue_time, SimTime());  // all-reduced from a flat bucket, no list
  // By time rather than parameters (the collectives' latency is per call): about 8 / 12 more.
  EXPECT_NEAR(z.backward_gathers, 1.0 + 8.0 / 12.0, 0.02);
  EXPECT_EQ(z.unprefetched_share, 0.0);
  EXPECT_NEAR(z.post_step_host_time.ToSeconds(), 591360 * 13.3e-6, 1e-6);
  EXPECT_NE(step->sharded_basis.find("4 linear weights"), std::string::npos) << step->sharded_basis;
  // The 530B model's QKV (1.26e9 parameters) and MLP weights (1.68e9) reach 1e9: the
  // weight after each of them cannot be prefetched (the projection, the MLP's down projection and
  // the next layer's QKV): 8 of 12 parameters' gathers, by time about two thirds.
  Inputs big = Load("models/megatron-530b.json", "hardware/clusters/dgx-a100.json", 280);
  s.dp = 2240;
  s.micro_batch = 1;
  s.global_batch = 2240;
  Result<PreparedStep> large = PrepareTrainingStep(big.model, big.cluster, s, options);
  ASSERT_TRUE(large.ok()) << large.status().message();
  EXPECT_NEAR(large->config.zero3.unprefetched_share, 8.0 / 12.0, 0.03);
  // Without the framework's zero3 object: loom's overlapped per-layer gathers.
  FrameworkProfile plain = deepspeed;
  plain.zero3.reset();
  options.framework = plain;
  s = TableTwoZeroThree();
  Result<PreparedStep> overlapped = PrepareTrainingStep(in.model, in.cluster, s, options);
  ASSERT_TRUE(overlapped.ok());
  EXPECT_EQ(overlapped->config.zero3.layer_gathers, 96);
  EXPECT_FALSE(overlapped->config.zero3.synchronous_fetch);
  EXPECT_TRUE(overlapped->sharded_basis.empty());
}

// Later DeepSpeed (hardware/frameworks/megatron-deepspeed-2024.json) on the same job: a gather
// per weight into a flat buffer, issued without waiting for the GPU, no per-rank host work for it;
// each gradient sliced per rank before its reduce-scatter; the same re-gathers and prefetch rule;
// the persistent weights in one flat gather. It runs between loom's overlapped gather a layer and
// DeepSpeed 2021's synchronous fetch.
TEST(Parallelism, LaterDeepSpeedFetchesEachWeightWithoutWaitingForTheGpu) {
  Inputs in = Load("models/gpt3-175b.json", "hardware/clusters/dgx-a100.json", 96);
  const Strategy s = TableTwoZeroThree();
  const FrameworkProfile later = ShippedFrameworkProfile("megatron-deepspeed-2024");
  SimulationOptions options;
  options.framework = later;
  Result<PreparedStep> step = PrepareTrainingStep(in.model, in.cluster, s, options);
  ASSERT_TRUE(step.ok()) << step.status().message();
  const ZeroThreeConfig& z = step->config.zero3;
  EXPECT_EQ(z.layer_gathers, 384);
  EXPECT_FALSE(z.synchronous_fetch);
  EXPECT_EQ(z.gather_issue_time, SimTime());
  EXPECT_GT(later.zero3->list_collective_us_per_rank, 0);
  EXPECT_NEAR(z.reduce_issue_time.ToSeconds(),
              later.zero3->list_collective_us_per_rank * 768 * 1e-6, 1e-8);
  EXPECT_NEAR(z.backward_gathers, 1.0 + 8.0 / 12.0, 0.02);
  EXPECT_EQ(z.post_step_host_time, SimTime());
  const auto step_s = [&](const FrameworkProfile& f) {
    options.framework = f;
    Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->step_time_s : 0.0;
  };
  FrameworkProfile overlapped = later;
  overlapped.zero3.reset();
  const double loom_default = step_s(overlapped), later_s = step_s(later);
  const double early = step_s(ShippedFrameworkProfile("deepspeed-zero3-2021"));
  EXPECT_GT(later_s, loom_default);
  EXPECT_LT(later_s, early);
}

// ZeRO-3's weight gathers over a DGX A100's NVLink (GPT-3 1.3B on 8 GPUs) run beside the passes
// that use the previous layer's weights. Their NCCL kernels hold 24 of the 108 SMs; their traffic
// also takes about two fifths of the HBM bandwidth (NcclHbmShare), so the unfused attention's
// softmax and dropout and the other memory-bound kernels lose more than the SMs alone would cost
// them: the same graph with the gathers holding SMs only runs its compute faster.
TEST(Parallelism, GathersBesideMemoryBoundKernelsTakeHbmBandwidthToo) {
  Inputs in = Load("models/gpt3-1.3b.json", "hardware/clusters/dgx-a100.json", 1);
  Strategy s;
  s.dp = 8;
  s.zero_stage = 3;
  s.micro_batch = 4;
  s.global_batch = 32;
  s.seq_len = 2048;
  s.dtype = Dtype::kFp16;
  SimulationOptions options;
  options.kernels.attention = AttentionKernel::kUnfused;
  options.kernels.dropout = true;
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  TaskGraph sms_only = r->step.graph;
  int32_t holders = 0;
  for (TaskId t = 0; t < sms_only.num_tasks(); ++t) {
    SmUse use = sms_only.sm_use(t);
    if (!use.Holds()) continue;
    ++holders;
    EXPECT_GT(use.hbm, 0.3f);
    EXPECT_LT(use.hbm, 0.5f);
    use.hbm = 0;
    sms_only.SetSmUse(t, use);
  }
  ASSERT_GT(holders, 0);
  Result<StepTimeline> without = Simulate(sms_only);
  ASSERT_TRUE(without.ok()) << without.status().message();
  ASSERT_EQ(without->sm_lost.size(), 1u);
  EXPECT_GT(r->breakdown.compute_slowed_s, 1.2 * without->sm_lost[0].ToSeconds());
  EXPECT_GT(r->step_time_s, without->makespan.ToSeconds());
  EXPECT_NE(r->sm_basis.find("of the HBM bandwidth from memory-bound kernels"), std::string::npos)
      << r->sm_basis;
}

TEST(Parallelism, GradReduceOverlapOnlyHelps) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 4);
  Strategy s;
  s.tp = 2;
  s.dp = 16;
  s.global_batch = 64;
  s.seq_len = 4096;
  s.zero_stage = 1;
  SimulationResult off = MustSimulate(in, s);
  s.overlap_grad_reduce = true;
  SimulationResult on = MustSimulate(in, s);
  s.overlap_param_gather = true;
  SimulationResult both = MustSimulate(in, s);
  EXPECT_LT(on.step_time_s, off.step_time_s);
  EXPECT_LT(both.step_time_s, on.step_time_s);
  EXPECT_TRUE(RunsBesideCompute(on.step, on.timeline, on.step.dp_category));
  EXPECT_FALSE(RunsBesideCompute(off.step, off.timeline, off.step.dp_category));
}

// ZeRO stages trade memory for communication (Rajbhandari et al. 2020, Figure 1).
TEST(Parallelism, HigherZeroStagesHoldLessAndCommunicateMore) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 8);
  Strategy s;
  s.dp = 64;
  s.global_batch = 128;
  s.seq_len = 4096;
  s.recompute = Recompute::kFull;
  s.overlap_grad_reduce = true;
  std::vector<SimulationResult> runs;
  for (int64_t zero : {0, 1, 2, 3}) {
    s.zero_stage = zero;
    runs.push_back(MustSimulate(in, s));
  }
  for (size_t z = 1; z < runs.size(); ++z) {
    EXPECT_LT(runs[z].peak_memory_bytes, runs[z - 1].peak_memory_bytes) << "zero " << z;
  }
  // ZeRO-3 gathers every layer's weights in the forward and again in the backward: more
  // data-parallel traffic than ZeRO-1's one gather after the step. (Its step need not be slower:
  // with 8 ranks per node the data-parallel group crosses nodes on 8 NICs, and the per-layer
  // gathers hide under compute while ZeRO-1's gather after the optimizer does not.)
  const auto dp_busy = [](const SimulationResult& r) {
    SimTime total;
    for (TaskId t = 0; t < r.step.graph.num_tasks(); ++t) {
      if (r.step.graph.task(t).category == r.step.dp_category)
        total += r.step.graph.task(t).duration;
    }
    return total;
  };
  EXPECT_GT(dp_busy(runs[3]), dp_busy(runs[1]));
  // ZeRO-3's per-layer gathers hold at most two layers beyond the shards.
  const SimulationResult& z3 = runs[3];
  const int64_t gathered = z3.memory.ranks[0].peak_bytes_by_pool[z3.step.gathered_weights];
  int64_t layer_bytes = 0;
  for (TaskId t = 0; t < z3.step.graph.num_tasks(); ++t) {
    const Task& task = z3.step.graph.task(t);
    if (task.pool == z3.step.gathered_weights)
      layer_bytes = std::max(layer_bytes, task.alloc_at_start_bytes);
  }
  EXPECT_GT(layer_bytes, 0);
  EXPECT_EQ(gathered, 2 * layer_bytes);
}

TEST(Parallelism, OptimizerOffloadMovesTheStepToTheCpu) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.dp = 8;
  s.global_batch = 16;
  s.seq_len = 4096;
  s.zero_stage = 1;
  s.recompute = Recompute::kFull;
  SimulationResult gpu = MustSimulate(in, s);
  s.offload = Offload::kOptimizer;
  SimulationResult cpu = MustSimulate(in, s);
  EXPECT_LT(cpu.peak_memory_bytes, gpu.peak_memory_bytes);
  // The CPU step over a 1/8 shard of 8B parameters at the rank's share of DRAM bandwidth is
  // slower than the GPU's: the step grows.
  EXPECT_GT(cpu.step_time_s, gpu.step_time_s);
  int offload_tasks = 0;
  for (TaskId t = 0; t < cpu.step.graph.num_tasks(); ++t) {
    offload_tasks += cpu.step.graph.task(t).category == cpu.step.offload_category;
  }
  EXPECT_GT(offload_tasks, 1);
}

TEST(Parallelism, UnevenStagesMoveLayersOffTheFirstStage) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  Strategy s;
  s.pp = 4;
  s.dp = 2;
  s.global_batch = 16;
  s.seq_len = 4096;
  SimulationResult even = MustSimulate(in, s);
  s.first_stage_layers = 6;
  s.last_stage_layers = 6;  // 32 = 6 + 10 + 10 + 6
  SimulationResult uneven = MustSimulate(in, s);
  EXPECT_LT(uneven.stages[0].compute_s, even.stages[0].compute_s);
  EXPECT_GT(uneven.stages[1].compute_s, even.stages[1].compute_s);
  EXPECT_LT(uneven.stages[0].peak_memory_bytes, even.stages[0].peak_memory_bytes);
}

TEST(Parallelism, MoreExpertImbalanceIsSlower) {
  Inputs in = Load("models/mixtral-8x7b.json", "hardware/clusters/dgx-h100.json", 2);
  Strategy s;
  s.dp = 16;
  s.ep = 8;
  s.global_batch = 32;
  s.seq_len = 4096;
  s.zero_stage = 1;
  s.recompute = Recompute::kFull;
  double previous = 0;
  for (double imbalance : {1.0, 1.5, 2.0}) {
    s.moe_imbalance = imbalance;
    SimulationResult r = MustSimulate(in, s);
    EXPECT_GT(r.step_time_s, previous) << "imbalance " << imbalance;
    previous = r.step_time_s;
  }
}

}  // namespace
}  // namespace loom
