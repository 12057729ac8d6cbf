// Activation bytes summed from the op lists against Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", Table 2 (tests/reference/
// korthikanti2022_activation_formulas.md), for the four models of its Table 3
// (tests/reference/korthikanti2022_configs.csv). The table assumes Megatron's unfused core
// attention, dropout with 1-byte masks, fp16 and ffn 4h.

#include "workload/activation_memory.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference/reference_csv.h"

namespace loom {
namespace {

struct Config {
  std::string model;
  int64_t heads = 0, hidden = 0, layers = 0, tp = 0, micro_batch = 0;
};

constexpr int64_t kSeq = 2048;  // the paper's sequence length for every model

std::vector<Config> ReadTable3() {
  Result<CsvTable> table = ReadReferenceCsv(std::string(LOOM_SOURCE_DIR) +
                                            "/tests/reference/korthikanti2022_configs.csv");
  EXPECT_TRUE(table.ok()) << table.status().message();
  std::vector<Config> rows;
  for (size_t i = 0; table.ok() && i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    rows.push_back({r.Text("model"), r.Int("heads"), r.Int("hidden"), r.Int("layers"), r.Int("tp"),
                    r.Int("micro_batch")});
    EXPECT_TRUE(r.Finish().ok()) << r.Finish().message();
  }
  return rows;
}

// Megatron-LM's GPT: learned positions, LayerNorm, biases, GeLU MLP of 4h, MHA.
ModelSpec Gpt(const Config& c) {
  ModelSpec m;
  m.name = "korthikanti-" + c.model;
  m.hidden_size = c.hidden;
  m.intermediate_size = 4 * c.hidden;
  m.num_layers = c.layers;
  m.num_heads = c.heads;
  m.num_kv_heads = c.heads;
  m.head_dim = c.hidden / c.heads;
  m.vocab_size = 51200;
  m.max_position_embeddings = kSeq;
  m.mlp = MlpKind::kPlain;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearnedAbsolute;
  m.attention_bias = m.mlp_bias = m.tie_word_embeddings = true;
  return m;
}

Strategy Setting(const Config& c, int64_t tp, bool sp, Recompute recompute) {
  Strategy s;
  s.tp = tp;
  s.sp = sp;
  s.recompute = recompute;
  s.micro_batch = c.micro_batch;
  s.seq_len = kSeq;
  s.dtype = Dtype::kFp16;
  return s;
}

LayerOpsOptions Megatron() {
  LayerOpsOptions o;
  o.attention = AttentionKernel::kUnfused;
  o.dropout = true;
  return o;
}

ActivationBytes Layer(const Config& c, int64_t tp, bool sp, Recompute r,
                      LayerOpsOptions o = Megatron()) {
  Result<ActivationBytes> bytes = LayerActivationBytes(Gpt(c), Setting(c, tp, sp, r), o);
  EXPECT_TRUE(bytes.ok()) << (bytes.ok() ? "" : bytes.status().message());
  return bytes.ok() ? *bytes : ActivationBytes{};
}

// The terms of Table 2 in bytes: sbh, and 5as^2b (the softmax, its dropout mask and its output).
struct Terms {
  int64_t sbh, attention, t;
};
Terms TermsOf(const Config& c) {
  return {kSeq * c.micro_batch * c.hidden, 5 * c.heads * kSeq * kSeq * c.micro_batch, c.tp};
}

TEST(Korthikanti2022Table2, EveryRowForEveryModelOfTable3) {
  const std::vector<Config> configs = ReadTable3();
  ASSERT_EQ(configs.size(), 4u);
  for (const Config& c : configs) {
    SCOPED_TRACE(c.model);
    const auto [sbh, attention, t] = TermsOf(c);
    // No parallelism: sbh(34 + 5as/h).
    EXPECT_EQ(Layer(c, 1, false, Recompute::kNone).kept, 34 * sbh + attention);
    // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
    EXPECT_EQ(Layer(c, t, false, Recompute::kNone).kept, 10 * sbh + 24 * sbh / t + attention / t);
    // Tensor + sequence parallel: sbh(34/t + 5as/(ht)).
    EXPECT_EQ(Layer(c, t, true, Recompute::kNone).kept, 34 * sbh / t + attention / t);
    // Tensor parallel + selective recompute: sbh(10 + 24/t).
    EXPECT_EQ(Layer(c, t, false, Recompute::kSelective).kept, 10 * sbh + 24 * sbh / t);
    // Tensor + sequence parallel + selective recompute: 34 sbh / t.
    EXPECT_EQ(Layer(c, t, true, Recompute::kSelective).kept, 34 * sbh / t);
    // Full recompute: 2sbh, the layer's input.
    EXPECT_EQ(Layer(c, t, false, Recompute::kFull).kept, 2 * sbh);
  }
}

TEST(Korthikanti2022Table2, The22bModelInBytes) {
  // s 2048, b 4, h 6144, a 64, t 8: sbh = 50331648, 5as^2b = 5368709120.
  const Config c{"22B", 64, 6144, 48, 8, 4};
  EXPECT_EQ(Layer(c, 1, false, Recompute::kNone).kept, 7'079'985'152);
  EXPECT_EQ(Layer(c, 8, false, Recompute::kNone).kept, 1'325'400'064);
  EXPECT_EQ(Layer(c, 8, true, Recompute::kNone).kept, 884'998'144);
  EXPECT_EQ(Layer(c, 8, false, Recompute::kSelective).kept, 654'311'424);
  EXPECT_EQ(Layer(c, 8, true, Recompute::kSelective).kept, 213'909'504);
  EXPECT_EQ(Layer(c, 8, false, Recompute::kFull).kept, 100'663'296);
}

TEST(ActivationBytes, SequenceParallelFullRecomputeKeepsTheShardedInput) {
  // Megatron checkpoints the layer input as it is held, [s/t, b, h] with sp: 2sbh/t (Table 2's
  // 2sbh is the input of a layer without sp).
  for (const Config& c : ReadTable3()) {
    const auto [sbh, attention, t] = TermsOf(c);
    EXPECT_EQ(Layer(c, t, true, Recompute::kFull).kept, 2 * sbh / t) << c.model;
  }
}

TEST(ActivationBytes, RecomputeReplaysAllocateWhatTheForwardDidNotKeep) {
  const Config c{"22B", 64, 6144, 48, 8, 4};
  const auto [sbh, attention, t] = TermsOf(c);
  // Selective: the replayed core rebuilds the probabilities, mask and dropped probabilities.
  EXPECT_EQ(Layer(c, t, true, Recompute::kSelective).recompute, attention / t);
  // Full: everything a layer keeps without recompute, less the input that was kept.
  EXPECT_EQ(Layer(c, t, true, Recompute::kFull).recompute,
            34 * sbh / t + attention / t - 2 * sbh / t);
  EXPECT_EQ(Layer(c, t, true, Recompute::kNone).recompute, 0);
}

TEST(ActivationBytes, FusedAttentionKeepsLogSumExpInsteadOfProbabilities) {
  // FlashAttention keeps Q, K, V and one fp32 log-sum-exp per query row and head (4as b/t bytes),
  // never the 5as^2b/t of the probabilities and their dropout.
  for (const Config& c : ReadTable3()) {
    SCOPED_TRACE(c.model);
    const auto [sbh, attention, t] = TermsOf(c);
    LayerOpsOptions fused;
    fused.dropout = true;
    const int64_t lse = 4 * c.heads * kSeq * c.micro_batch / t;
    EXPECT_EQ(Layer(c, t, true, Recompute::kNone, fused).kept, 34 * sbh / t + lse);
    EXPECT_EQ(Layer(c, t, false, Recompute::kNone, fused).kept, 10 * sbh + 24 * sbh / t + lse);
    // Selective recompute then saves only the log-sum-exp.
    EXPECT_EQ(Layer(c, t, true, Recompute::kSelective, fused).kept, 34 * sbh / t);
  }
}

TEST(ActivationBytes, LlamaLayerSumsItsSavedTensors) {
  // Llama 3 70B, tp 8 with sp, one sequence of 8192, bf16, fused attention, no dropout.
  Result<ModelSpec> m = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-70b.json");
  ASSERT_TRUE(m.ok());
  Strategy s;
  s.tp = 8;
  s.sp = true;
  s.seq_len = 8192;
  Result<ActivationBytes> bytes = LayerActivationBytes(*m, s);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const int64_t tokens = 8192, sharded = tokens / 8, h = 8192;
  const int64_t norms_and_gemm_inputs = 4 * sharded * h * 2;   // 2 norms, QKV and MLP-up inputs
  const int64_t qkv = tokens * (8 + 1 + 1) * 128 * 2;          // 8 q heads, 1 k, 1 v per rank
  const int64_t lse = 8 * tokens * 4;                          // fp32 per query row and head
  const int64_t attention_out = tokens * 8 * 128 * 2;          // the output projection's input
  const int64_t swiglu_inputs = tokens * 2 * (28672 / 8) * 2;  // gate and up
  const int64_t down_input = tokens * (28672 / 8) * 2;
  EXPECT_EQ(bytes->kept,
            norms_and_gemm_inputs + qkv + lse + attention_out + swiglu_inputs + down_input);
  EXPECT_EQ(bytes->kept, 281'280'512);
}

TEST(ActivationBytes, MixtralLayerSumsItsSavedTensors) {
  // Mixtral 8x7B, tp 1, ep 8, one sequence of 4096, bf16, fused attention, no dropout.
  Result<ModelSpec> m = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/mixtral-8x7b.json");
  ASSERT_TRUE(m.ok());
  Strategy s;
  s.ep = 8;
  s.seq_len = 4096;
  Result<ActivationBytes> bytes = LayerActivationBytes(*m, s);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  const int64_t tokens = 4096, h = 4096, rows = 2 * tokens, ffn = 14336;
  const int64_t attention = 3 * tokens * h * 2  // input norm, QKV input, output projection input
                            + tokens * (h + 2 * 1024) * 2  // Q, K, V
                            + 32 * tokens * 4;             // log-sum-exp
  const int64_t router = 2 * tokens * h * 2                // norm input, router input
                         + tokens * 8 * 4;                 // fp32 scores
  const int64_t experts =
      rows * h * 2 + rows * 2 * ffn * 2 + rows * ffn * 2;  // up, SwiGLU, down inputs
  const int64_t combine = rows * h * 2 + rows * 4;         // expert outputs and probabilities
  EXPECT_EQ(bytes->kept, attention + router + experts + combine);
}

TEST(KeptActivationBytes, FullRecomputeOfTheFirstLayersAndSelectiveForTheRest) {
  const Config c{"22B", 64, 6144, 48, 8, 4};
  const auto [sbh, attention, t] = TermsOf(c);
  Result<int64_t> kept = KeptActivationBytes(Gpt(c), Setting(c, t, true, Recompute::kSelective), 0,
                                             48, 10, Megatron());
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(*kept, 10 * (2 * sbh / t) + 38 * (34 * sbh / t));
  Result<int64_t> none =
      KeptActivationBytes(Gpt(c), Setting(c, t, true, Recompute::kNone), 24, 24, 0, Megatron());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 24 * (34 * sbh / t + attention / t));
}

TEST(KeptActivationBytes, RangesOutsideTheModelAreErrors) {
  const Config c{"22B", 64, 6144, 48, 8, 4};
  Result<int64_t> past =
      KeptActivationBytes(Gpt(c), Setting(c, 8, true, Recompute::kNone), 40, 10, 0);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("layers 40 to 49 are not all in the model"),
            std::string::npos);
  Result<int64_t> too_many =
      KeptActivationBytes(Gpt(c), Setting(c, 8, true, Recompute::kNone), 0, 4, 5);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("--recompute-num-layers 5"), std::string::npos);
}

}  // namespace
}  // namespace loom
