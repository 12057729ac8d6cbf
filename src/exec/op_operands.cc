#include "exec/op_operands.h"

#include <algorithm>
#include <variant>

namespace loom {
namespace {

constexpr size_t Index(AttentionTensor tensor) { return static_cast<size_t>(tensor); }

// Lays out |sizes| (unrounded bytes, in order) one after another on 256-byte boundaries; returns
// the rounded end and writes each start to |offsets|.
template <size_t N>
int64_t Pack(const std::array<int64_t, N>& sizes, std::array<int64_t, N>* offsets) {
  int64_t end = 0;
  for (size_t i = 0; i < N; ++i) {
    (*offsets)[i] = end;
    end += RoundUpToOperandAlignment(sizes[i]);
  }
  return end;
}

}  // namespace

int64_t RoundUpToOperandAlignment(int64_t bytes) {
  return (bytes + kOperandAlignmentBytes - 1) / kOperandAlignmentBytes * kOperandAlignmentBytes;
}

int64_t GemmInputBytesPerElement(Dtype dtype) { return BytesPerElement(dtype); }

int64_t GemmOutputBytesPerElement(const GemmShape& shape) {
  // A weight-gradient GEMM accumulating into main_grad reads and writes fp32 (kAccumulatorBytes is
  // both ways); fp8 GEMMs write bf16, as Transformer Engine's fp8 GEMMs do; the other types write
  // their own.
  if (shape.accumulate_fp32) return 4;
  return shape.dtype == Dtype::kFp8 ? BytesPerElement(Dtype::kBf16) : BytesPerElement(shape.dtype);
}

GemmOperands GemmOperandsOf(const GemmShape& s) {
  const int64_t in = GemmInputBytesPerElement(s.dtype);
  const std::array<int64_t, 3> sizes = {s.batch * s.m * s.k * in, s.batch * s.k * s.n * in,
                                        s.batch * s.m * s.n * GemmOutputBytesPerElement(s)};
  std::array<int64_t, 3> offsets{};
  GemmOperands operands;
  operands.bytes = Pack(sizes, &offsets);
  operands.a_offset = offsets[0];
  operands.b_offset = offsets[1];
  operands.c_offset = offsets[2];
  return operands;
}

AttentionOperands AttentionOperandsOf(const AttentionShape& s) {
  // SdpaTensorBytesOf's formulas (device/cuda/sdpa_graph.cc), tensor for tensor.
  const int64_t io = BytesPerElement(s.dtype), fp32 = 4;
  const int64_t q = s.batch * s.seq_q * s.heads * s.head_dim_qk * io;
  const int64_t k = s.batch * s.seq_kv * s.kv_heads * s.head_dim_qk * io;
  const int64_t v = s.batch * s.seq_kv * s.kv_heads * s.head_dim_v * io;
  const int64_t o = s.batch * s.seq_q * s.heads * s.head_dim_v * io;
  const int64_t rows = s.batch * s.heads * s.seq_q * fp32;
  AttentionOperands operands;
  std::array<int64_t, kAttentionTensorCount>& bytes = operands.tensor_bytes;
  bytes[Index(AttentionTensor::kQ)] = q;
  bytes[Index(AttentionTensor::kK)] = k;
  bytes[Index(AttentionTensor::kV)] = v;
  bytes[Index(AttentionTensor::kO)] = o;
  bytes[Index(AttentionTensor::kStats)] = rows;
  if (s.backward) {
    bytes[Index(AttentionTensor::kDO)] = o;
    bytes[Index(AttentionTensor::kDQ)] = q;
    bytes[Index(AttentionTensor::kDK)] = k;
    bytes[Index(AttentionTensor::kDV)] = v;
    bytes[Index(AttentionTensor::kSoftmaxSum)] = rows;
    bytes[Index(AttentionTensor::kDQAccum)] = s.batch * s.heads * s.seq_q * s.head_dim_qk * fp32;
  }
  operands.bytes = Pack(bytes, &operands.offsets);
  // The forward's unused tensors take no space; give them offset 0 rather than the end.
  for (size_t i = s.backward ? kAttentionTensorCount : kForwardAttentionTensorCount;
       i < kAttentionTensorCount; ++i) {
    operands.offsets[i] = 0;
  }
  return operands;
}

// In place: the op reads its source and writes its destination over the same bytes, as norms,
// residual adds, dropout and the cross-entropy passes over the logits mostly do in Megatron-LM.
// The HBM traffic is the same, and the largest of these ops (over fp32 logits) needs half the
// arena it would with a separate destination.
MemoryOperands MemoryOperandsOf(const MemoryShape& s) {
  MemoryOperands operands;
  operands.bytes = RoundUpToOperandAlignment(std::max(s.bytes_read, s.bytes_written));
  return operands;
}

int64_t OperandBytes(const Op& op) {
  if (const auto* gemm = std::get_if<GemmShape>(&op.shape)) return GemmOperandsOf(*gemm).bytes;
  if (const auto* attention = std::get_if<AttentionShape>(&op.shape))
    return AttentionOperandsOf(*attention).bytes;
  if (const auto* memory = std::get_if<MemoryShape>(&op.shape))
    return MemoryOperandsOf(*memory).bytes;
  return 0;
}

int64_t ArenaBytes(std::span<const Op> ops) {
  int64_t bytes = 0;
  for (const Op& op : ops) bytes = std::max(bytes, OperandBytes(op));
  return bytes;
}

Dtype ArenaFillDtype(std::span<const Op> ops) {
  for (const Op& op : ops) {
    const auto* gemm = std::get_if<GemmShape>(&op.shape);
    if (gemm != nullptr && gemm->dtype == Dtype::kFp8) return Dtype::kFp8;
  }
  return Dtype::kBf16;
}

}  // namespace loom
