#include "spec/state_bytes.h"

namespace loom {

namespace {

bool FullPrecision(Dtype dtype) { return dtype == Dtype::kFp32 || dtype == Dtype::kTf32; }

// Bytes of one gradient in the buffer that backward accumulates into and the data-parallel
// reduction sends: fp32 for bf16 and fp8 unless |grad_reduce_in_bf16|, 2 bytes for fp16.
int64_t GradientBytes(Dtype dtype, bool grad_reduce_in_bf16) {
  if (FullPrecision(dtype)) return 4;
  if (dtype == Dtype::kFp16) return 2;
  return grad_reduce_in_bf16 ? 2 : 4;
}

}  // namespace

StateBytesPerParam BytesPerParameter(Dtype dtype, Optimizer optimizer, bool grad_reduce_in_bf16) {
  const bool full_precision = FullPrecision(dtype);
  StateBytesPerParam bytes;
  bytes.weight = full_precision ? 4 : 2;
  bytes.gradient = GradientBytes(dtype, grad_reduce_in_bf16);
  // fp32 training updates the weights in place; mixed precision keeps a 4-byte master copy.
  const int64_t master = full_precision ? 0 : 4;
  switch (optimizer) {
    case Optimizer::kAdam:
      bytes.optimizer = master + 4 + 4;
      break;
    case Optimizer::kAdafactor:
      bytes.optimizer = master;
      break;
    case Optimizer::kSgd:
      bytes.optimizer = master + 4;
      break;
  }
  return bytes;
}

StateBytesPerParam BytesPerParameter(const Strategy& strategy) {
  return BytesPerParameter(strategy.dtype, strategy.optimizer, strategy.grad_reduce_in_bf16);
}

}  // namespace loom
