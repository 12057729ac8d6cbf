// Heterogeneous clusters in the simulator (issue 25): each pipeline stage is timed on its own node
// group's GPU, and a balanced layout gives the faster GPU's stages more layers and a shorter step.

#include "sim/stage_balance.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/simulator.h"
#include "sim_test_support.h"
#include "spec/strategy.h"

namespace loom {
namespace {

// The H100 with its datasheet rates alone (no fitted efficiencies or per-kernel overhead), so that
// every kernel's time is its roofline: FLOPs over the peak or bytes over the HBM bandwidth.
GpuSpec Datasheet(const GpuSpec& gpu, double rate_scale, const std::string& name) {
  GpuSpec out = gpu;
  out.name = name;
  out.calibration = ComputeCalibration();
  for (std::optional<double>* peak :
       {&out.bf16_tflops, &out.fp16_tflops, &out.fp8_tflops, &out.tf32_tflops, &out.fp32_tflops}) {
    if (peak->has_value()) **peak *= rate_scale;
  }
  out.hbm_bandwidth_GBps *= rate_scale;
  return out;
}

// DGX H100's fabrics with one GPU a node: node 0 holds a GPU, node 1 one at half its every rate,
// so that with tp = dp = 1 pipeline stage 0 runs on the fast GPU and stage 1 on the slow one.
Inputs TwoSpeeds(double slow_scale = 0.5) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 1);
  // 24 layers split 16 / 8 at speeds 2 : 1; a vocabulary of 1,024 makes the embedding and the
  // output layer a few hundredths of a layer, too little to move a layer.
  in.model.num_layers = 24;
  in.model.vocab_size = 1024;
  ClusterSpec& c = in.cluster;
  const GpuSpec fast = Datasheet(c.gpu, 1.0, "fast");
  c.node_groups = {{fast, 1}, {Datasheet(c.gpu, slow_scale, "slow"), 1}};
  c.gpu = fast;
  c.gpus_per_node = 1;
  c.nvlink_domain_gpus.reset();
  c.nodes = 2;
  return in;
}

Strategy TwoStageSplit() {
  Strategy s;
  s.pp = 2;
  s.micro_batch = 1;
  s.global_batch = 16;
  s.seq_len = 2048;
  return s;
}

SimulationResult SimulateBalanced(const Inputs& in, const Strategy& s) {
  Result<SimulationResult> r = SimulateTrainingStep(in.model, in.cluster, s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimulationResult{};
}

TEST(StageBalance, EachStageIsTimedOnItsOwnGroupsGpu) {
  const Inputs in = TwoSpeeds();
  const SimulationResult even = SimulateBalanced(in, TwoStageSplit());
  ASSERT_EQ(even.stages.size(), 2u);
  // 12 layers each: the slow GPU's stage computes twice as long (the output layer adds little).
  EXPECT_NEAR(even.stages[1].compute_s / even.stages[0].compute_s, 2.0, 0.05);
  Result<StageWork> work = MeasureStageWork(in.model, in.cluster, TwoStageSplit());
  ASSERT_TRUE(work.ok()) << work.status().ToString();
  EXPECT_NEAR(work->layer_s[1] / work->layer_s[0], 2.0, 1e-3);
  EXPECT_EQ(work->fixed_s[0] > 0 && work->fixed_s[1] > 0, true);
  EXPECT_LT(work->fixed_s[1], 0.1 * work->layer_s[1]);
}

// The acceptance case: the GPU twice as fast takes twice the layers, 16 of 24, and the step
// shortens. In layer-times t of the fast GPU per micro-batch (forward a third, backward two
// thirds), m = 16 micro-batches of 1F1B on 2 stages:
// - evenly split, stage 0 takes 12t and the slow stage 1 24t; stage 1 bounds the step: stage 0's
//   first forward, m of stage 1's, stage 0's last backward: 4t + 16 x 24t + 8t = 396t;
// - balanced, both take 16t: (m + pp - 1) x 16t = 272t.
// 272 / 396 = 0.687; the pipeline sends, the optimizer step and the output layer, alike in both
// and left out here, move it towards 1.
TEST(StageBalance, TheFasterGroupTakesMoreLayersAndTheStepShortens) {
  const Inputs in = TwoSpeeds();
  Result<std::vector<int64_t>> layout =
      BalancedPipelineLayout(in.model, in.cluster, TwoStageSplit());
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(*layout, (std::vector<int64_t>{16, 8}));
  Strategy balanced = TwoStageSplit();
  balanced.layout = *layout;
  const SimulationResult even = SimulateBalanced(in, TwoStageSplit());
  const SimulationResult better = SimulateBalanced(in, balanced);
  EXPECT_LT(better.step_time_s, even.step_time_s);
  EXPECT_NEAR(better.step_time_s / even.step_time_s, 272.0 / 396.0, 0.03);
  // Balanced, the two stages compute about as long.
  EXPECT_NEAR(better.stages[1].compute_s / better.stages[0].compute_s, 1.0, 0.05);
}

// With vpp chunks a stage keeps one layer a chunk at least, its layers split over the chunks as
// LayersPerVirtualStage splits them.
TEST(StageBalance, InterleavedStagesSplitTheirLayersOverTheirChunks) {
  const Inputs in = TwoSpeeds();
  Strategy s = TwoStageSplit();
  s.schedule = ScheduleKind::kInterleaved;
  s.vpp = 2;
  Result<std::vector<int64_t>> layout = BalancedPipelineLayout(in.model, in.cluster, s);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  // Virtual stages in Megatron's order: chunk 0 of stages 0, 1, then chunk 1 of stages 0, 1.
  EXPECT_EQ(*layout, (std::vector<int64_t>{8, 4, 8, 4}));
}

// Two groups of one GPU are the cluster of that GPU: the same step to the nanosecond.
TEST(StageBalance, GroupsOfOneGpuTypeSimulateAsTheClusterOfIt) {
  Inputs groups = TwoSpeeds(1.0);
  Inputs plain = groups;
  plain.cluster.node_groups.clear();
  const SimulationResult a = SimulateBalanced(groups, TwoStageSplit());
  const SimulationResult b = SimulateBalanced(plain, TwoStageSplit());
  EXPECT_EQ(a.timeline.makespan, b.timeline.makespan);
  EXPECT_DOUBLE_EQ(a.mfu, b.mfu);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  Result<std::vector<int64_t>> layout =
      BalancedPipelineLayout(groups.model, groups.cluster, TwoStageSplit());
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(*layout, (std::vector<int64_t>{12, 12}));
}

// MFU over mixed GPUs divides by the sum of their peaks: half the GPUs at half the peak make the
// denominator 3/4 of the fast cluster's, for the same model FLOPs and step.
TEST(StageBalance, MfuDividesByTheSumOfEveryGpusPeak) {
  const Inputs in = TwoSpeeds();
  const SimulationResult r = SimulateBalanced(in, TwoStageSplit());
  const double peak = in.cluster.gpu.PeakTflops(Dtype::kBf16).value() * 1e12;
  EXPECT_NEAR(r.mfu, r.model_tflops_per_gpu * 1e12 / (0.75 * peak), 1e-12);
}

// Each stage is held to its own GPU's memory: a slow GPU of too little memory fails the step, and
// the peak and limit reported are that stage's.
TEST(StageBalance, EachStageFitsInItsOwnGpusMemory) {
  Inputs in = TwoSpeeds();
  const SimulationResult roomy = SimulateBalanced(in, TwoStageSplit());
  ASSERT_TRUE(roomy.fits_in_memory);
  GpuSpec& slow = in.cluster.node_groups[1].gpu;
  // The slow GPU's memory: the stage's peak and the reserve, less a byte (its headroom is a share
  // of that memory, so solve for it).
  const MemoryReserve& reserve = roomy.reserve;
  const double share = reserve.headroom;
  slow.memory_bytes = static_cast<int64_t>(
      static_cast<double>(roomy.stages[1].peak_memory_bytes + reserve.parts_bytes) / (1 - share));
  const SimulationResult tight = SimulateBalanced(in, TwoStageSplit());
  EXPECT_FALSE(tight.fits_in_memory);
  EXPECT_EQ(tight.peak_memory_bytes, tight.stages[1].peak_memory_bytes);
  EXPECT_EQ(tight.memory_limit_bytes, slow.memory_bytes - tight.reserve.ReservedBytes());
}

}  // namespace
}  // namespace loom
