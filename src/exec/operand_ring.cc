#include "exec/operand_ring.h"

#include <algorithm>

#include "device/cold_l2.h"
#include "exec/op_operands.h"

namespace loom {

OperandRing::OperandRing(std::span<const Op> ops, int64_t l2_bytes) {
  if (l2_bytes <= 0) {
    large_bytes_ = ArenaBytes(ops);
    return;
  }
  // The margin of the probe's RotationCount: its copies together exceed twice the L2.
  flush_bytes_ = RoundUpToOperandAlignment(kColdL2Multiple * l2_bytes);
  int64_t largest_small = 0;
  for (const Op& op : ops) {
    const int64_t bytes = OperandBytes(op);
    if (bytes >= flush_bytes_) {
      large_bytes_ = std::max(large_bytes_, bytes);
    } else {
      largest_small = std::max(largest_small, bytes);
    }
  }
  if (largest_small > 0) ring_bytes_ = flush_bytes_ + 2 * largest_small;
}

int64_t OperandRing::Place(const Op& op) {
  const int64_t bytes = OperandBytes(op);
  if (bytes <= 0) return 0;
  if (flush_bytes_ == 0 || bytes >= flush_bytes_) return ring_bytes_;  // the large ops' region
  if (cursor_ + bytes > ring_bytes_) cursor_ = 0;
  const int64_t offset = cursor_;
  cursor_ += bytes;
  return offset;
}

}  // namespace loom
