#include <gtest/gtest.h>

#include "sim/pass_costs.h"
#include "sim/sim_test_support.h"
#include "sim/simulator.h"
#include "workload/layer_ops.h"

// The accumulation of weight gradients across micro-batches (workload/grad_accumulation.h) in the
// simulated step: in every micro-batch's weight pass, by the time its ops take.

namespace loom {
namespace {

// Megatron-22B on one DGX A100: tp 8, one pipeline stage, one data-parallel rank.
Strategy Tp8(GradAccumulation accumulation, int64_t micro_batches) {
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.micro_batch = 1;
  s.global_batch = micro_batches;
  s.seq_len = 2048;
  s.grad_accumulation = accumulation;
  return s;
}

// The time the grad_accumulate ops of chunk |v| take in one micro-batch, from PredictOpTimes.
double AccumulationSeconds(const ClusterSpec& cluster, const Strategy& s, const ChunkBlocks& blocks,
                           size_t v) {
  const std::vector<BlockTimes> times = PredictOpTimes(cluster, s, blocks);
  double seconds = 0;
  for (const BlockRun& run : blocks.chunks[v]) {
    const LayerOps& ops = blocks.blocks[static_cast<size_t>(run.block)];
    for (size_t i = 0; i < ops.backward_weight.size(); ++i) {
      if (ops.backward_weight[i].name != OpName::kGradAccumulate) continue;
      seconds += static_cast<double>(run.count) *
                 times[static_cast<size_t>(run.block)].backward_weight[i].ToSeconds();
    }
  }
  return seconds;
}

TEST(GradAccumulationStep, EveryMicroBatchsWeightPassCarriesTheAdds) {
  Inputs in = Load("models/megatron-22b.json", "hardware/clusters/dgx-a100.json", 1);
  const Strategy add = Tp8(GradAccumulation::kAdd, 4);
  Result<ChunkBlocks> blocks = BuildChunkBlocks(in.model, add);
  ASSERT_TRUE(blocks.ok()) << blocks.status().message();
  const double adds = AccumulationSeconds(in.cluster, add, *blocks, 0);
  EXPECT_GT(adds, 0);
  // Autograd accumulation with one micro-batch adds nothing, and its GEMMs are the same.
  Result<PreparedStep> with = PrepareTrainingStep(in.model, in.cluster, add);
  Result<PreparedStep> without =
      PrepareTrainingStep(in.model, in.cluster, Tp8(GradAccumulation::kAutograd, 1));
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_NEAR(with->costs[0].backward_weight.time.ToSeconds() -
                  without->costs[0].backward_weight.time.ToSeconds(),
              adds, 1e-9);
  EXPECT_EQ(with->costs[0].forward.time, without->costs[0].forward.time);
  // One stage, no data parallelism: every micro-batch adds its whole F, B and W, adds included.
  const ChunkCost& c = with->costs[0];
  const double per_micro_batch = c.forward.time.ToSeconds() + c.backward_input.time.ToSeconds() +
                                 c.backward_weight.time.ToSeconds();
  Result<SimulationResult> one =
      SimulateTrainingStep(in.model, in.cluster, Tp8(GradAccumulation::kAdd, 1));
  Result<SimulationResult> four = SimulateTrainingStep(in.model, in.cluster, add);
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_NEAR(four->step_time_s - one->step_time_s, 3 * per_micro_batch,
              0.01 * 3 * per_micro_batch);
}

TEST(GradAccumulationStep, AddsGrowWithParametersPerGpuNotMicroBatchSize) {
  Inputs in = Load("models/megatron-22b.json", "hardware/clusters/dgx-a100.json", 1);
  const auto adds_of = [&](const Strategy& s) {
    Result<ChunkBlocks> blocks = BuildChunkBlocks(in.model, s);
    EXPECT_TRUE(blocks.ok());
    return blocks.ok() ? AccumulationSeconds(in.cluster, s, *blocks, 0) : 0.0;
  };
  const Strategy tp8 = Tp8(GradAccumulation::kAdd, 4);
  Strategy big_micro_batch = tp8;
  big_micro_batch.micro_batch = 4;
  big_micro_batch.global_batch = 16;
  EXPECT_DOUBLE_EQ(adds_of(big_micro_batch), adds_of(tp8));
  Strategy tp4 = tp8;
  tp4.tp = 4;
  tp4.dp = 2;
  tp4.global_batch = 8;
  EXPECT_GT(adds_of(tp4), 1.8 * adds_of(tp8));
}

// Issue 18, mechanism 5: fp8 training with --grad-reduce-in-bf16, as production fp8 runs do,
// reduces 2-byte gradients: half the bytes of its default fp32 buckets, in less time.
TEST(GradReduceInBf16, Fp8ReducesTwoBytesPerGradient) {
  Inputs in = Load("models/llama3-8b.json", "hardware/clusters/dgx-h100.json", 2);
  Strategy s;
  s.tp = 2;
  s.dp = 8;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 4096;
  s.dtype = Dtype::kFp8;
  Result<PreparedStep> fp32 = PrepareTrainingStep(in.model, in.cluster, s);
  s.grad_reduce_in_bf16 = true;
  Result<PreparedStep> bf16 = PrepareTrainingStep(in.model, in.cluster, s);
  ASSERT_TRUE(fp32.ok()) << fp32.status().message();
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();
  EXPECT_EQ(2 * bf16->payloads.bucket_bytes[0], fp32->payloads.bucket_bytes[0]);
  EXPECT_LT(bf16->config.dp.bucket_time[0], fp32->config.dp.bucket_time[0]);
}

}  // namespace
}  // namespace loom
