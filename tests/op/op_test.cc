#include "op/op.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(OpName, EveryNameRoundTripsThroughItsText) {
  for (int i = 0; i <= static_cast<int>(OpName::kGradAccumulate); ++i) {
    const OpName name = static_cast<OpName>(i);
    const std::string_view text = OpNameString(name);
    ASSERT_FALSE(text.empty()) << i;
    EXPECT_EQ(ParseOpName(text), name) << text;
  }
  EXPECT_EQ(OpNameString(OpName::kQkvProjDgrad), "qkv_proj.dgrad");
  EXPECT_FALSE(ParseOpName("qkv_proj.dgrad ").has_value());
}

TEST(OpFlops, GemmIsTwiceTheMultiplyAddsOfEveryBatch) {
  const GemmShape g{.m = 4096, .n = 1024, .k = 512, .batch = 3};
  EXPECT_EQ(GemmFlops(g), 2LL * 3 * 4096 * 1024 * 512);
  EXPECT_EQ(OpFlops(MakeGemm(OpName::kQkvProj, g)), GemmFlops(g));
  EXPECT_EQ(OpFlops(MakeMemory(OpName::kInputNorm, {.bytes_read = 10, .bytes_written = 10})), 0);
}

TEST(OpFlops, CausalAttentionKernelRunsTheUnmaskedFractionAndBackwardTwoAndAHalfTimes) {
  AttentionShape a{.batch = 1,
                   .heads = 8,
                   .kv_heads = 8,
                   .seq_q = 1024,
                   .seq_kv = 1024,
                   .head_dim_qk = 128,
                   .head_dim_v = 128,
                   .causal = true};
  const double model = 2.0 * 8 * 1024 * 1024 * 256;
  EXPECT_EQ(AttentionModelFlops(a), static_cast<int64_t>(model));
  EXPECT_DOUBLE_EQ(AttentionKernelFlops(a), model * 1025 / 2048);
  a.backward = true;
  EXPECT_EQ(AttentionModelFlops(a), static_cast<int64_t>(2 * model));
  EXPECT_DOUBLE_EQ(AttentionKernelFlops(a), 2.5 * model * 1025 / 2048);
}

TEST(OpTotals, SumFlopsAndSavedBytesOverTheList) {
  const std::vector<Op> ops = {
      MakeGemm(OpName::kMlpUp, {.m = 2, .n = 3, .k = 4}, 100),
      MakeMemory(OpName::kMlpActivation, {.bytes_read = 8, .bytes_written = 8}, 28),
      MakeCollective(OpName::kMlpOutputReduce, {.kind = CollectiveKind::kAllReduce, .bytes = 64})};
  EXPECT_EQ(TotalFlops(ops), 48);
  EXPECT_EQ(TotalSavedBytes(ops), 128);
  EXPECT_EQ(ops[2].kind, OpKind::kCollective);
}

}  // namespace
}  // namespace loom
