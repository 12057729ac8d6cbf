#include "exec/op_operands.h"

#include <vector>

#include <gtest/gtest.h>

#include "op/op.h"

// The operand arena of the CUDA executor's op runner. Every expected byte count is worked out by
// hand in the comments: the sizes of the tensors, each rounded up to 256 bytes, added.

namespace loom {
namespace {

size_t Index(AttentionTensor tensor) { return static_cast<size_t>(tensor); }

// m=1000 n=3000 k=500 bf16: A 1,000,000 B -> 1,000,192; B 3,000,000 -> 3,000,064; C 6,000,000 ->
// 6,000,128.
constexpr GemmShape kBf16Gemm = {.m = 1000, .n = 3000, .k = 500, .batch = 1, .dtype = Dtype::kBf16};
constexpr int64_t kBf16GemmBytes = 1'000'192 + 3'000'064 + 6'000'128;

// b=1 h=6 h_kv=2 (GQA) s_q=99 s_kv=77 d_qk=40 d_v=24 bf16.
constexpr AttentionShape kGqaForward = {.batch = 1,
                                        .heads = 6,
                                        .kv_heads = 2,
                                        .seq_q = 99,
                                        .seq_kv = 77,
                                        .head_dim_qk = 40,
                                        .head_dim_v = 24,
                                        .causal = true,
                                        .backward = false,
                                        .dtype = Dtype::kBf16};

AttentionShape Backward(AttentionShape shape) {
  shape.backward = true;
  return shape;
}

TEST(OperandBytes, RoundsEachBf16GemmMatrixUpTo256Bytes) {
  EXPECT_EQ(OperandBytes(MakeGemm(OpName::kQkvProj, kBf16Gemm)), 10'000'384);
  const GemmOperands operands = GemmOperandsOf(kBf16Gemm);
  EXPECT_EQ(operands.a_offset, 0);
  EXPECT_EQ(operands.b_offset, 1'000'192);
  EXPECT_EQ(operands.c_offset, 4'000'256);
  EXPECT_EQ(operands.bytes, kBf16GemmBytes);
}

TEST(OperandBytes, CountsFp8GemmInputsAsOneByteAndItsOutputAsBf16) {
  // m=16 n=32 k=24 x2: A 2*16*24*1 = 768; B 2*24*32*1 = 1536; C 2*16*32*2 = 2048 (bf16 output).
  const GemmShape fp8 = {.m = 16, .n = 32, .k = 24, .batch = 2, .dtype = Dtype::kFp8};
  EXPECT_EQ(OperandBytes(MakeGemm(OpName::kMlpUp, fp8)), 768 + 1536 + 2048);
  // batch 1: A 384 -> 512; B 768; C 1024.
  const GemmShape single = {.m = 16, .n = 32, .k = 24, .batch = 1, .dtype = Dtype::kFp8};
  const GemmOperands operands = GemmOperandsOf(single);
  EXPECT_EQ(operands.b_offset, 512);
  EXPECT_EQ(operands.c_offset, 512 + 768);
  EXPECT_EQ(operands.bytes, 512 + 768 + 1024);
}

TEST(OperandBytes, HoldsTheFp32AccumulatorOfAWeightGradientGemm) {
  // kBf16Gemm accumulating into main_grad: C is 1000*3000*4 = 12,000,000 bytes (a multiple of 256),
  // A and B as before; the plain GEMM's C is half that.
  GemmShape wgrad = kBf16Gemm;
  wgrad.accumulate_fp32 = true;
  EXPECT_EQ(GemmOutputBytesPerElement(wgrad), 4);
  EXPECT_EQ(GemmOutputBytesPerElement(kBf16Gemm), 2);
  const GemmOperands operands = GemmOperandsOf(wgrad);
  EXPECT_EQ(operands.c_offset, 4'000'256);
  EXPECT_EQ(operands.bytes, 1'000'192 + 3'000'064 + 12'000'000);
}

TEST(OperandBytes, CountsTf32AndFp32GemmsInFourBytes) {
  // 256x256x256: three matrices of 256 KiB.
  const GemmShape tf32 = {.m = 256, .n = 256, .k = 256, .batch = 1, .dtype = Dtype::kTf32};
  EXPECT_EQ(GemmOperandsOf(tf32).bytes, 3 * 262'144);
}

TEST(OperandBytes, SumsTheForwardAttentionTensorsOfGqa) {
  // Q 99*6*40*2 = 47,520 -> 47,616; K 77*2*40*2 = 12,320 -> 12,544; V 77*2*24*2 = 7,392 -> 7,424;
  // O 99*6*24*2 = 28,512 -> 28,672; stats 6*99*4 = 2,376 -> 2,560.
  EXPECT_EQ(OperandBytes(MakeAttention(OpName::kFlashAttention, kGqaForward)), 98'816);
  const AttentionOperands operands = AttentionOperandsOf(kGqaForward);
  EXPECT_EQ(operands.tensor_bytes[Index(AttentionTensor::kK)], 12'320);
  EXPECT_EQ(operands.offsets[Index(AttentionTensor::kK)], 47'616);
  EXPECT_EQ(operands.offsets[Index(AttentionTensor::kStats)], 47'616 + 12'544 + 7'424 + 28'672);
  EXPECT_EQ(operands.tensor_bytes[Index(AttentionTensor::kDO)], 0);
  EXPECT_EQ(operands.tensor_bytes[Index(AttentionTensor::kDQAccum)], 0);
}

TEST(OperandBytes, AddsTheGradientsAndScratchOfTheAttentionBackward) {
  // The forward's 98,816, then dO 28,672, dQ 47,616, dK 12,544, dV 7,424, softmax sum 2,560 and
  // the fp32 dQ accumulator 6*99*40*4 = 95,040 -> 95,232.
  EXPECT_EQ(OperandBytes(MakeAttention(OpName::kFlashAttentionGrad, Backward(kGqaForward))),
            292'864);
  const AttentionOperands operands = AttentionOperandsOf(Backward(kGqaForward));
  EXPECT_EQ(operands.tensor_bytes[Index(AttentionTensor::kDQAccum)], 95'040);
  EXPECT_EQ(operands.offsets[Index(AttentionTensor::kDQAccum)], 292'864 - 95'232);
}

TEST(OperandBytes, SumsALlamaSizedGqaForwardWithoutRounding) {
  // b=1 h=32/8 s=4096 d=128: Q and O 32 MiB each, K and V 8 MiB each, stats 32*4096*4 = 512 KiB.
  const AttentionShape llama = {.batch = 1,
                                .heads = 32,
                                .kv_heads = 8,
                                .seq_q = 4096,
                                .seq_kv = 4096,
                                .head_dim_qk = 128,
                                .head_dim_v = 128};
  EXPECT_EQ(OperandBytes(MakeAttention(OpName::kFlashAttention, llama)), 84'410'368);
}

TEST(OperandBytes, AMemoryOpRunsInPlaceOverTheLargerOfItsReadAndWrite) {
  // 1 MiB read, 1000 bytes written over the same bytes.
  const MemoryShape shape = {.bytes_read = 1 << 20, .bytes_written = 1000};
  EXPECT_EQ(OperandBytes(MakeMemory(OpName::kInputNorm, shape)), 1 << 20);
  EXPECT_EQ(MemoryOperandsOf(shape).src_offset, 0);
  EXPECT_EQ(MemoryOperandsOf(shape).dst_offset, 0);
  // 1000 bytes read, 3000 written: 3000 rounded up to 256.
  EXPECT_EQ(OperandBytes(
                MakeMemory(OpName::kAttentionDropout, {.bytes_read = 1000, .bytes_written = 3000})),
            3072);
}

TEST(OperandBytes, IsZeroForACollective) {
  const CollectiveShape shape = {
      .kind = CollectiveKind::kAllReduce, .group = CommGroup::kTp, .bytes = 1 << 30};
  EXPECT_EQ(OperandBytes(MakeCollective(OpName::kAttentionOutputReduce, shape)), 0);
}

TEST(OperandArena, IsTheLargestOperandBytesOfTheOps) {
  const std::vector<Op> ops = {
      MakeMemory(OpName::kInputNorm, {.bytes_read = 1 << 20, .bytes_written = 1000}),
      MakeAttention(OpName::kFlashAttentionGrad, Backward(kGqaForward)),
      MakeGemm(OpName::kOutProj, kBf16Gemm),
      MakeCollective(OpName::kAttentionOutputReduce, {.bytes = int64_t{1} << 40}),
  };
  EXPECT_EQ(ArenaBytes(ops), kBf16GemmBytes);
  EXPECT_EQ(ArenaBytes(std::span<const Op>(ops).first(2)),
            std::max<int64_t>(1 << 20, AttentionOperandsOf(Backward(kGqaForward)).bytes));
  EXPECT_EQ(ArenaBytes({}), 0);
}

TEST(OperandArena, IsFilledAsFp8OnlyWhenAnFp8GemmReadsIt) {
  std::vector<Op> ops = {MakeGemm(OpName::kQkvProj, kBf16Gemm),
                         MakeAttention(OpName::kFlashAttention, kGqaForward)};
  EXPECT_EQ(ArenaFillDtype(ops), Dtype::kBf16);
  ops.push_back(
      MakeGemm(OpName::kMlpUp, {.m = 16, .n = 16, .k = 16, .batch = 1, .dtype = Dtype::kFp8}));
  EXPECT_EQ(ArenaFillDtype(ops), Dtype::kFp8);
}

}  // namespace
}  // namespace loom
