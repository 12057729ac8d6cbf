#include "exec/operand_ring.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "exec/op_operands.h"
#include "op/op.h"
#include "single_gpu_plan.h"

// The rotation of the CUDA executor's operands through its arena. Sizes are the OperandBytes of
// exec/op_operands.h, all multiples of 256.

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kH100L2Bytes = 50 * kMiB;  // cudaDevAttrL2CacheSize of an H100 SXM
constexpr int64_t kH200L2Bytes = 60 * kMiB;  // what this workplace's notes give the H200

// A bf16 GEMM of m x n x k: A m*k*2, B k*n*2, C m*n*2 bytes, each a multiple of 256 here.
Op Gemm(int64_t m, int64_t n, int64_t k) {
  return MakeGemm(OpName::kQkvProj, {.m = m, .n = n, .k = k, .batch = 1, .dtype = Dtype::kBf16});
}
Op Memory(int64_t bytes) {
  return MakeMemory(OpName::kInputNorm, {.bytes_read = bytes, .bytes_written = bytes});
}

struct Placement {
  int64_t offset = 0;
  int64_t bytes = 0;
};

std::vector<Placement> PlaceAll(OperandRing& ring, const std::vector<Op>& sequence) {
  std::vector<Placement> placements;
  for (const Op& op : sequence) placements.push_back({ring.Place(op), OperandBytes(op)});
  return placements;
}

// The guarantee of operand_ring.h, checked by brute force: every placement is aligned and inside
// the arena, and between two placements that share a byte, the placements after the first up to
// and including the second add up to at least flush_bytes(). Returns the number of violations,
// naming the first.
int64_t Violations(const std::vector<Placement>& placements, int64_t arena_bytes,
                   int64_t flush_bytes) {
  int64_t violations = 0;
  for (size_t j = 0; j < placements.size(); ++j) {
    const Placement& later = placements[j];
    EXPECT_EQ(later.offset % kOperandAlignmentBytes, 0) << "placement " << j;
    EXPECT_GE(later.offset, 0) << "placement " << j;
    EXPECT_LE(later.offset + later.bytes, arena_bytes) << "placement " << j;
    int64_t between = later.bytes;  // the placements (i, j]
    for (size_t i = j; i-- > 0;) {
      const Placement& earlier = placements[i];
      if (earlier.offset < later.offset + later.bytes &&
          later.offset < earlier.offset + earlier.bytes) {
        if (between < flush_bytes && violations++ == 0) {
          ADD_FAILURE() << "placement " << j << " at " << later.offset << " (" << later.bytes
                        << " B) overlaps placement " << i << " at " << earlier.offset << " ("
                        << earlier.bytes << " B) with only " << between << " B placed between them";
        }
        break;  // only the most recent overlapping placement matters; earlier ones are further away
      }
      between += earlier.bytes;
    }
  }
  return violations;
}

TEST(OperandRing, ConsecutiveRunsOfOneOpDoNotShareBytesWithinTwiceTheL2) {
  // 2048 x 2048 x 2048 bf16: three 8 MiB matrices, 24 MiB a run. Twice the H100's L2 is 100 MiB:
  // runs 0..4 (120 MiB) must lie on different bytes.
  const std::vector<Op> ops = {Gemm(2048, 2048, 2048)};
  OperandRing ring(ops, kH100L2Bytes);
  EXPECT_EQ(ring.flush_bytes(), 100 * kMiB);
  EXPECT_EQ(ring.ring_bytes(), 100 * kMiB + 2 * 24 * kMiB);
  EXPECT_EQ(ring.arena_bytes(), ring.ring_bytes());
  const std::vector<Placement> runs = PlaceAll(ring, std::vector<Op>(40, ops[0]));
  for (size_t r = 0; r < 6; ++r)
    EXPECT_EQ(runs[r].offset, static_cast<int64_t>(r) * 24 * kMiB) << "run " << r;
  // Run 6 would end at 168 MiB, past the ring's 148: it goes back to the start.
  EXPECT_EQ(runs[6].offset, 0);
  EXPECT_EQ(Violations(runs, ring.arena_bytes(), ring.flush_bytes()), 0);
}

TEST(OperandRing, MixedOpsOfAStepKeepTheGuarantee) {
  // Small GEMMs, attentions and memory ops of many sizes, and two ops larger than twice the L2
  // (an output head's GEMM and the cross entropy over its logits), in a random order.
  const AttentionShape attention = {.batch = 2,
                                    .heads = 16,
                                    .kv_heads = 4,
                                    .seq_q = 2048,
                                    .seq_kv = 2048,
                                    .head_dim_qk = 128,
                                    .head_dim_v = 128};
  AttentionShape attention_grad = attention;
  attention_grad.backward = true;
  const std::vector<Op> ops = {
      Gemm(4096, 2048, 2048),
      Gemm(4096, 8192, 2048),
      Gemm(256, 256, 256),
      Gemm(1024, 3072, 1024),
      MakeAttention(OpName::kFlashAttention, attention),
      MakeAttention(OpName::kFlashAttentionGrad, attention_grad),
      Memory(4096),
      Memory(3 * kMiB),
      Memory(33 * kMiB),
      Memory(97 * kMiB),
      Gemm(8192, 32768, 2048),  // C alone is 512 MiB
      Memory(1024 * kMiB),
  };
  for (int64_t l2 : {kH100L2Bytes, kH200L2Bytes, 4 * kMiB}) {
    OperandRing ring(ops, l2);
    std::mt19937 engine(17);
    std::vector<Op> sequence;
    for (int i = 0; i < 3000; ++i) sequence.push_back(ops[engine() % ops.size()]);
    EXPECT_EQ(Violations(PlaceAll(ring, sequence), ring.arena_bytes(), ring.flush_bytes()), 0)
        << "L2 " << l2;
  }
}

TEST(OperandRing, LargeOpsShareOneRegionAfterTheRing) {
  // 97 MiB and 1 GiB read in place are both over twice a 40 MiB L2 (80 MiB); 3 MiB is small.
  const std::vector<Op> ops = {Memory(3 * kMiB), Memory(97 * kMiB), Memory(1024 * kMiB)};
  OperandRing ring(ops, 40 * kMiB);
  EXPECT_EQ(ring.ring_bytes(), 80 * kMiB + 2 * 3 * kMiB);
  EXPECT_EQ(ring.arena_bytes(), 86 * kMiB + 1024 * kMiB);
  EXPECT_EQ(ring.Place(ops[0]), 0);
  EXPECT_EQ(ring.Place(ops[1]), 86 * kMiB);
  EXPECT_EQ(ring.Place(ops[2]), 86 * kMiB);
  // The large ops did not move the ring.
  EXPECT_EQ(ring.Place(ops[0]), 3 * kMiB);
}

TEST(OperandRing, WithoutAnL2SizeEveryOpStartsAtTheArenaStart) {
  const std::vector<Op> ops = {Gemm(2048, 2048, 2048), Memory(3 * kMiB)};
  OperandRing ring(ops, 0);
  EXPECT_EQ(ring.arena_bytes(), ArenaBytes(ops));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ring.Place(ops[0]), 0);
    EXPECT_EQ(ring.Place(ops[1]), 0);
  }
}

TEST(OperandRing, ACollectiveHasNoOperands) {
  const std::vector<Op> ops = {Memory(3 * kMiB)};
  OperandRing ring(ops, kH100L2Bytes);
  EXPECT_EQ(ring.Place(MakeCollective(OpName::kAttentionOutputReduce, {.bytes = 1 << 30})), 0);
  EXPECT_EQ(ring.Place(ops[0]), 0);
  EXPECT_EQ(ring.Place(ops[0]), 3 * kMiB);
}

// The GPU validation's single-GPU plans (as in device_program_test.cc): the arena with its ring
// still fits on an H100 beside the plan's memory, for the L2 of an H100 and the larger one of an
// H200. The ring adds at most three times the flush bytes to the largest op's operands.
TEST(OperandRing, SingleGpuPlansFitOnAnH100WithTheRing) {
  for (const char* model : {"models/gpt3-125m.json", "models/llama3.2-1b.json"}) {
    SingleGpuPlan single;
    ASSERT_NO_FATAL_FAILURE(MakeSingleGpuPlan(model, &single));
    const std::vector<Op>& ops = single.program.ops;
    for (int64_t l2 : {kH100L2Bytes, kH200L2Bytes}) {
      const OperandRing ring(ops, l2);
      EXPECT_GT(ring.ring_bytes(), 0) << model;
      EXPECT_LE(ring.arena_bytes(), ArenaBytes(ops) + 3 * ring.flush_bytes()) << model;
      EXPECT_LT(single.plan.prediction.peak_memory_bytes + ring.arena_bytes(),
                single.in.cluster.gpu.memory_bytes)
          << model;
    }
  }
}

}  // namespace
}  // namespace loom
