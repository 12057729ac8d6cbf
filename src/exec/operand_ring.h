#ifndef LOOM_EXEC_OPERAND_RING_H_
#define LOOM_EXEC_OPERAND_RING_H_

#include <cstdint>
#include <span>

#include "op/op.h"

namespace loom {

// Where in the operand arena the CUDA executor's op runner (exec/cuda/op_runner.h) puts each run
// of an op's operands, so that an op does not find them in the GPU's L2 cache. `loom probe` times
// every kernel cold: it rotates a kernel's inputs over copies that together exceed twice the L2
// (probe/bench.h, RotationCount), because in training each weight and activation is
// read about once per micro-batch. Were every op to read the same arena bytes, a model whose ops
// fit in the L2 would run warm in `loom validate` and measure faster than its profile predicts.
//
// The placements are a ring: each op that is small (operands under flush_bytes(), kColdL2Multiple
// = 2 times the L2, probe/bench.h) goes where the previous small op ended, or back to the start of
// the ring when it does not fit before the end. Ops at least that large already stream more than
// twice the L2 through it themselves, as the probe's large shapes do with a single copy
// (RotationCount 1); they all share one region after the ring, so that a few of them (the output
// head over a large vocabulary) do not multiply the arena.
//
// The guarantee: between any two placements that share a byte, the placements after the first,
// up to and including the second, add up to at least flush_bytes() (an op's bytes are the
// OperandBytes of exec/op_operands.h). The ring holds flush_bytes() + 2 * s bytes, s the largest
// small op. Two small placements share a byte only if the ring wrapped between them; the
// placements after the earlier one up to the wrap cover the ring from the earlier one's end to
// within s of the ring's end (the op that wrapped did not fit), and those from the wrap on cover
// it from its start to the later one's end. The earlier one starts before the later one ends and
// is at most s long, so together they exceed the ring less 2 * s. Large placements all share
// their region, and the later of two is at least flush_bytes() alone.
//
// Every placement starts on a kOperandAlignmentBytes boundary and lies inside arena_bytes().
class OperandRing {
 public:
  // A ring for the ops of |ops| (the distinct ops a runner will be asked to run) on a GPU whose
  // L2 cache holds |l2_bytes|. With |l2_bytes| <= 0 there is no rotation: every op's operands
  // start at offset 0 of an arena of ArenaBytes(ops), as the runner placed them before.
  OperandRing(std::span<const Op> ops, int64_t l2_bytes);

  // The bytes the arena must have: the ring, then the region of the large ops.
  int64_t arena_bytes() const { return ring_bytes_ + large_bytes_; }
  // Twice the L2 cache: what the placements between two runs over the same bytes add up to at
  // least, and the operand bytes from which an op is large.
  int64_t flush_bytes() const { return flush_bytes_; }
  // The bytes of the ring, at the arena's start: flush_bytes() plus twice the largest small op,
  // or 0 when no op is small.
  int64_t ring_bytes() const { return ring_bytes_; }

  // The offset at which the operands of |op|'s next run start (the offsets of GemmOperandsOf,
  // AttentionOperandsOf and MemoryOperandsOf are from there), and moves the ring past them.
  // 0 for an op without operands (a collective).
  // REQUIRES: an op of |op|'s shape was given to the constructor.
  int64_t Place(const Op& op);

 private:
  int64_t flush_bytes_ = 0;
  int64_t ring_bytes_ = 0;
  int64_t large_bytes_ = 0;
  int64_t cursor_ =
      0;  // where the next small op goes, unless it does not fit before the ring's end
};

}  // namespace loom

#endif  // LOOM_EXEC_OPERAND_RING_H_
