#ifndef LOOM_EXEC_OP_OPERANDS_H_
#define LOOM_EXEC_OP_OPERANDS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "op/op.h"

namespace loom {

// The device buffers one op's kernels read and write when the CUDA executor runs it alone, laid
// out one after another in one operand arena: the arithmetic of exec/cuda/op_runner.h, without
// CUDA, so that it is tested on a CPU. Offsets are from where the op's operands start in the arena
// for that run (OperandRing::Place, exec/operand_ring.h); every operand starts on a 256-byte
// boundary.

// cudaMalloc's alignment, and the alignment cuBLASLt's heuristic assumes of every matrix.
inline constexpr int64_t kOperandAlignmentBytes = 256;

// |bytes| rounded up to a multiple of kOperandAlignmentBytes.
int64_t RoundUpToOperandAlignment(int64_t bytes);

// Bytes per element of a GEMM's inputs A and B, and of its output C: the types of
// device/cuda/gemm_plan.h's GemmTypesOf (fp8 is e4m3 inputs with a bf16 output; tf32 is fp32
// storage) and GemmOutputBytes under Fp32Accumulation::kHonour (a shape with accumulate_fp32
// reads and writes an fp32 C, Megatron-LM's main_grad); keep the two consistent.
int64_t GemmInputBytesPerElement(Dtype dtype);
int64_t GemmOutputBytesPerElement(const GemmShape& shape);

// A GEMM's A[batch, m, k], B[batch, k, n] (stored [batch, n, k] for fp8: the same bytes) and
// C[batch, m, n], in that order.
struct GemmOperands {
  int64_t a_offset = 0;
  int64_t b_offset = 0;
  int64_t c_offset = 0;
  int64_t bytes = 0;  // the end of C, rounded up
};
GemmOperands GemmOperandsOf(const GemmShape& shape);

// The device tensors of cuDNN's SDPA graphs, in the order of device/cuda/sdpa_graph.h's SdpaUid:
// the tensor of uid u is AttentionTensor(u - 1). The forward uses the first five; the backward
// all eleven (the softmax sum and dQ accumulator are its fp32 scratch).
enum class AttentionTensor { kQ, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kSoftmaxSum, kDQAccum };
inline constexpr size_t kAttentionTensorCount = 11;
inline constexpr size_t kForwardAttentionTensorCount = 5;

// Where the tensors of one attention pass lie. |tensor_bytes| is what device/cuda/sdpa_graph.cc's
// SdpaTensorBytesOf gives each tensor (Q, K, V, O and their gradients in the shape's dtype, BSHD;
// the statistics, softmax sum and dQ accumulator in fp32), 0 for the tensors the pass does not
// use; the op runner checks that the two agree.
struct AttentionOperands {
  std::array<int64_t, kAttentionTensorCount> tensor_bytes{};
  std::array<int64_t, kAttentionTensorCount> offsets{};  // 0 for the tensors the pass does not use
  int64_t bytes = 0;
};
AttentionOperands AttentionOperandsOf(const AttentionShape& shape);

// A memory-bound op's source (bytes_read) and destination (bytes_written), in place: both start
// at offset 0 of its max(bytes_read, bytes_written) bytes.
struct MemoryOperands {
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
  int64_t bytes = 0;
};
MemoryOperands MemoryOperandsOf(const MemoryShape& shape);

// The device bytes |op|'s kernels read and write when it runs alone: the |bytes| of its operands
// above; 0 for a collective, whose buffers belong to the executor's communicators.
int64_t OperandBytes(const Op& op);

// The largest OperandBytes of |ops|: an arena that serves every op of |ops| when all of them
// start at its offset 0 (ops run one at a time on the compute stream, so their operands can share
// the same memory). OperandRing adds a ring to it, so that consecutive ops read different bytes.
int64_t ArenaBytes(std::span<const Op> ops);

// The type the arena's random fill (FillRandom: uniform in [-1, 1]) is written in, chosen so that
// every op reads finite values: fp8 (e4m3) when an fp8 GEMM is among |ops|, else bf16. The bytes
// of such a value of either type are finite when read as bf16, fp16 or fp32 (the exponent field
// that lands in the high byte is too small for inf or NaN), and fp8's are finite e4m3 (at most
// 0x38, 1.0); but a bf16 value's low byte is e4m3's NaN (0x7F, 0xFF) about one time in 256.
Dtype ArenaFillDtype(std::span<const Op> ops);

}  // namespace loom

#endif  // LOOM_EXEC_OP_OPERANDS_H_
