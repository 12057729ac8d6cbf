#ifndef LOOM_SIM_TRACE_COLLECTIVES_H_
#define LOOM_SIM_TRACE_COLLECTIVES_H_

#include <array>
#include <cstdint>
#include <vector>

#include "op/op.h"
#include "schedule/schedule.h"
#include "sim/pass_costs.h"

namespace loom {

inline constexpr size_t kCommGroupCount = 5;  // the groups of CommGroup
inline constexpr size_t kPassCount = 4;       // the passes of Pass

// What the tensor-, context- and expert-parallel collectives inside one virtual stage's passes
// move, which the step graph folds into one tp task per pass: bytes[pass][group], indexed by Pass
// and CommGroup, each collective counted as nccl-tests counts its size (CollectiveShape::bytes).
struct PassCollectiveBytes {
  std::array<std::array<int64_t, kCommGroupCount>, kPassCount> bytes{};
};

// Per virtual stage of |blocks|, in model order: F sums the forward ops of every block run of the
// stage; B the recompute replay and the input gradients; W the weight gradients; BW both B and W
// (the passes a schedule may run, as pass_costs.h costs them).
std::vector<PassCollectiveBytes> PassCollectiveBytesOf(const ChunkBlocks& blocks);

}  // namespace loom

#endif  // LOOM_SIM_TRACE_COLLECTIVES_H_
