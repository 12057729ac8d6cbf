#include "sim/trace_collectives.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom {
namespace {

Op Collective(CommGroup group, int64_t bytes) {
  return MakeCollective(OpName::kAttentionInputAllGather,
                        {CollectiveKind::kAllGather, group, bytes});
}

int64_t At(const PassCollectiveBytes& stage, Pass pass, CommGroup group) {
  return stage.bytes[static_cast<size_t>(pass)][static_cast<size_t>(group)];
}

// Block 0 (three layers on virtual stage 0): 100 tp bytes forward, 100 in its input gradients and
// 50 in its recompute replay, 7 cp bytes in its weight gradients. Block 1 (one on virtual stage
// 1, after one of block 0): 11 ep bytes forward, no GEMM counted.
TEST(PassCollectiveBytes, SumsEachPassOverTheBlockRunsOfAVirtualStage) {
  ChunkBlocks blocks;
  LayerOps layer;
  layer.forward = {MakeGemm(OpName::kInputNorm, {.m = 8, .n = 8, .k = 8}),
                   Collective(CommGroup::kTp, 100)};
  layer.backward_input = {Collective(CommGroup::kTp, 100)};
  layer.recompute = {Collective(CommGroup::kTp, 50)};
  layer.backward_weight = {Collective(CommGroup::kCp, 7)};
  LayerOps expert;
  expert.forward = {Collective(CommGroup::kEp, 11)};
  blocks.blocks = {layer, expert};
  blocks.chunks = {{{0, 3}}, {{0, 1}, {1, 1}}};
  const std::vector<PassCollectiveBytes> stages = PassCollectiveBytesOf(blocks);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(At(stages[0], Pass::kF, CommGroup::kTp), 300);
  EXPECT_EQ(At(stages[0], Pass::kB, CommGroup::kTp), 450);
  EXPECT_EQ(At(stages[0], Pass::kW, CommGroup::kTp), 0);
  EXPECT_EQ(At(stages[0], Pass::kW, CommGroup::kCp), 21);
  EXPECT_EQ(At(stages[0], Pass::kBW, CommGroup::kTp), 450);
  EXPECT_EQ(At(stages[0], Pass::kBW, CommGroup::kCp), 21);
  EXPECT_EQ(At(stages[1], Pass::kF, CommGroup::kTp), 100);
  EXPECT_EQ(At(stages[1], Pass::kF, CommGroup::kEp), 11);
  EXPECT_EQ(At(stages[1], Pass::kBW, CommGroup::kEp), 0);
}

}  // namespace
}  // namespace loom
