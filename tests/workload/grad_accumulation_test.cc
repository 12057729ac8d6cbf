#include "workload/grad_accumulation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload/layer_ops.h"
#include "workload/model_states.h"
#include "workload/shipped_model.h"

namespace loom {
namespace {

Strategy Tp(int64_t tp, GradAccumulation accumulation, int64_t micro_batch = 1,
            int64_t seq = 2048) {
  Strategy s;
  s.tp = tp;
  s.sp = tp > 1;
  s.micro_batch = micro_batch;
  s.global_batch = micro_batch;
  s.seq_len = seq;
  s.grad_accumulation = accumulation;
  return s;
}

LayerOps Layer(const ModelSpec& m, const Strategy& s, int64_t layer = 0) {
  Result<LayerOps> ops = BuildTransformerLayerOps(m, s, {.layer = layer});
  EXPECT_TRUE(ops.ok()) << (ops.ok() ? "" : ops.status().message());
  return ops.ok() ? *ops : LayerOps();
}

// The grad_accumulate ops of |ops|' W list.
std::vector<MemoryShape> Accumulations(const LayerOps& ops) {
  std::vector<MemoryShape> out;
  for (const Op& op : ops.backward_weight) {
    if (op.name == OpName::kGradAccumulate) out.push_back(std::get<MemoryShape>(op.shape));
  }
  EXPECT_TRUE(ops.forward.empty() || ops.forward.back().name != OpName::kGradAccumulate);
  return out;
}

// Parameters the one grad_accumulate op of |ops| adds, from its bytes written per parameter.
int64_t AddedParams(const LayerOps& ops, int64_t accumulator_bytes) {
  const std::vector<MemoryShape> adds = Accumulations(ops);
  EXPECT_EQ(adds.size(), 1u);
  return adds.empty() ? 0 : adds[0].bytes_written / accumulator_bytes;
}

std::vector<bool> AccumulateFlags(const LayerOps& ops) {
  std::vector<bool> flags;
  for (const Op& op : ops.backward_weight) {
    if (const auto* g = std::get_if<GemmShape>(&op.shape)) flags.push_back(g->accumulate_fp32);
  }
  return flags;
}

TEST(GradAccumulation, FusedAccumulatesEveryWgradGemmInFp32AndAddsOnlyBiasesAndNorms) {
  const LayerOps ops = Layer(Shipped("gpt3-175b"), Tp(8, GradAccumulation::kFused));
  EXPECT_EQ(AccumulateFlags(ops), std::vector<bool>(4, true));
  EXPECT_EQ(ops.backward_weight.back().name, OpName::kGradAccumulate);
  // h = 12288, tp 8: QKV bias 3h/8, output-projection bias h (row parallel: whole), MLP-up bias
  // 4h/8, MLP-down bias h, two LayerNorms of 2h: 84480 parameters. Each add reads the fp32
  // main_grad and the bf16 gradient and writes main_grad: 6 bytes read, 4 written.
  const int64_t h = 12288;
  const int64_t others = 3 * h / 8 + h + 4 * h / 8 + h + 2 * 2 * h;
  EXPECT_EQ(others, 84480);
  const std::vector<MemoryShape> adds = Accumulations(ops);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].bytes_read, others * 6);
  EXPECT_EQ(adds[0].bytes_written, others * 4);
}

TEST(GradAccumulation, AddCoversEveryParameterOfTheLayerOnce) {
  const ModelSpec m = Shipped("gpt3-175b");
  const Strategy s = Tp(8, GradAccumulation::kAdd);
  const LayerOps ops = Layer(m, s);
  EXPECT_EQ(AccumulateFlags(ops), std::vector<bool>(4, false));
  Result<int64_t> params = LayerParametersPerRank(m, s, 0);
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(AddedParams(ops, 4), *params);
  EXPECT_EQ(Accumulations(ops)[0].bytes_read, *params * 6);
}

TEST(GradAccumulation, TrafficFollowsParametersPerGpuNotTokens) {
  const ModelSpec m = Shipped("gpt3-175b");
  const int64_t base = AddedParams(Layer(m, Tp(8, GradAccumulation::kAdd)), 4);
  // Four times the tokens of a micro-batch, in sequences or in length: the same traffic.
  EXPECT_EQ(AddedParams(Layer(m, Tp(8, GradAccumulation::kAdd, /*micro_batch=*/4)), 4), base);
  EXPECT_EQ(AddedParams(Layer(m, Tp(8, GradAccumulation::kAdd, 1, /*seq=*/8192)), 4), base);
  // Half the tensor-parallel ranks: each holds about twice the parameters (norms and row-parallel
  // biases are replicated, so not exactly).
  const int64_t tp4 = AddedParams(Layer(m, Tp(4, GradAccumulation::kAdd)), 4);
  EXPECT_NEAR(static_cast<double>(tp4) / static_cast<double>(base), 2.0, 1e-3);
  // A wider model: 12 h^2 + 13 h per layer, so 175B's layer over 22B's (h 6144) is about 4x.
  const int64_t narrow =
      AddedParams(Layer(Shipped("megatron-22b"), Tp(8, GradAccumulation::kAdd)), 4);
  EXPECT_NEAR(static_cast<double>(base) / static_cast<double>(narrow), 4.0, 1e-2);
}

TEST(GradAccumulation, AutogradAddsInTheParamDtypeFromTheSecondMicroBatchOn) {
  const ModelSpec m = Shipped("gpt3-175b");
  Strategy s = Tp(8, GradAccumulation::kAutograd);
  s.dtype = Dtype::kFp16;
  // One micro-batch: the gradient becomes .grad, nothing is added.
  EXPECT_TRUE(Accumulations(Layer(m, s)).empty());
  EXPECT_EQ(AccumulateFlags(Layer(m, s)), std::vector<bool>(4, false));
  // Four: three adds of four, each reading two fp16 gradients and writing one.
  s.global_batch = 4;
  Result<int64_t> params = LayerParametersPerRank(m, s, 0);
  ASSERT_TRUE(params.ok());
  const std::vector<MemoryShape> adds = Accumulations(Layer(m, s));
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].bytes_written, (*params - *params / 4) * 2);
  EXPECT_EQ(adds[0].bytes_read, (*params - *params / 4) * 4);
}

TEST(GradAccumulation, Bf16GradientBufferIsAccumulatedInBf16) {
  Strategy s = Tp(8, GradAccumulation::kFused);
  s.grad_reduce_in_bf16 = true;
  EXPECT_EQ(GradAccumulatorBytes(s), 2);
  const LayerOps ops = Layer(Shipped("gpt3-175b"), s);
  EXPECT_EQ(AccumulateFlags(ops), std::vector<bool>(4, false));
  EXPECT_EQ(AddedParams(ops, 2), 84480);
  s.dtype = Dtype::kFp8;  // fp8 keeps bf16 gradients, and the same choice
  EXPECT_EQ(GradAccumulatorBytes(s), 2);
  s.grad_reduce_in_bf16 = false;
  EXPECT_EQ(GradAccumulatorBytes(s), 4);
  EXPECT_EQ(AccumulateFlags(Layer(Shipped("gpt3-175b"), s)), std::vector<bool>(4, true));
}

TEST(GradAccumulation, MoeRouterAndLatentNormsAreAddedAndExpertGemmsFused) {
  // DeepSeek-V3's layer 3 (its first MoE layer) on ep 8: MLA without attention biases, RMSNorms,
  // 256 routed experts. The router's gradient is not a fused linear's (megatron/core/transformer/
  // moe/router.py), so the add covers the four norms (input, post-attention, q and kv latents)
  // and the router's 7168 x 256 weight.
  Strategy s = Tp(1, GradAccumulation::kFused, 1, 4096);
  s.ep = 8;
  s.dp = 8;
  s.global_batch = 8;
  const LayerOps ops = Layer(Shipped("deepseek-v3"), s, 3);
  EXPECT_EQ(AddedParams(ops, 4), 7168 + 7168 + 1536 + 512 + 7168 * 256);
  for (const Op& op : ops.backward_weight) {
    if (const auto* g = std::get_if<GemmShape>(&op.shape)) {
      EXPECT_EQ(g->accumulate_fp32, op.name != OpName::kRouterWgrad) << OpNameString(op.name);
    }
  }
}

TEST(GradAccumulation, EmbeddingAddsItsTableAndTheHeadOnlyItsNorm) {
  const ModelSpec m = Shipped("gpt3-175b");  // learned positions, LayerNorm, vocab 50257
  const Strategy s = Tp(8, GradAccumulation::kFused);
  Result<LayerOps> embedding = BuildEmbeddingOps(m, s);
  ASSERT_TRUE(embedding.ok());
  const int64_t shard = PaddedVocabSize(m.vocab_size, 8) / 8 * m.hidden_size;
  EXPECT_EQ(AddedParams(*embedding, 4), shard + m.max_position_embeddings * m.hidden_size);
  Result<LayerOps> output = BuildOutputOps(m, s);
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(AccumulateFlags(*output), std::vector<bool>{true});
  EXPECT_EQ(AddedParams(*output, 4), 2 * m.hidden_size);
  Strategy add = s;
  add.grad_accumulation = GradAccumulation::kAdd;
  output = BuildOutputOps(m, add);
  ASSERT_TRUE(output.ok());
  EXPECT_EQ(AddedParams(*output, 4), shard + 2 * m.hidden_size);
}

}  // namespace
}  // namespace loom
