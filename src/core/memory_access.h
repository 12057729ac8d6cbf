#ifndef LOOM_CORE_MEMORY_ACCESS_H_
#define LOOM_CORE_MEMORY_ACCESS_H_

#include <cstdint>

#include "core/enum_names.h"

namespace loom {

// How a memory-bound kernel walks its bytes, which bounds the share of the HBM bandwidth it
// reaches (calibration: memory_bandwidth_fraction and memory_bandwidth_fraction_row_reduction).
enum class MemoryAccess : uint8_t {
  // Every element on its own, in wide coalesced loads: copies, activations, dropout, residual and
  // bias adds, casts, optimizer steps.
  kStreaming,
  // A reduction along each row before the row is written (a block or warp per row, its partial
  // sums exchanged through shared memory or shuffles): LayerNorm, RMSNorm, softmax, cross
  // entropy, and their gradients. On the committed H100 run (hardware/validation/2026-11-27/
  // profile.json) an RMSNorm over rows of 8,192 reached 2,220 GB/s where a copy of the same bytes
  // reached 3,020.
  kRowReduction,
};
inline constexpr EnumNames<MemoryAccess, 2> kMemoryAccessNames({{
    {MemoryAccess::kStreaming, "streaming"},
    {MemoryAccess::kRowReduction, "row_reduction"},
}});

}  // namespace loom

#endif  // LOOM_CORE_MEMORY_ACCESS_H_
