#include "sim/trace_collectives.h"

#include <variant>

namespace loom {
namespace {

using GroupBytes = std::array<int64_t, kCommGroupCount>;

// Adds |count| times the collectives of |ops| to |sum|.
void AddCollectives(const std::vector<Op>& ops, int64_t count, GroupBytes& sum) {
  for (const Op& op : ops) {
    if (const auto* c = std::get_if<CollectiveShape>(&op.shape))
      sum[static_cast<size_t>(c->group)] += count * c->bytes;
  }
}

}  // namespace

std::vector<PassCollectiveBytes> PassCollectiveBytesOf(const ChunkBlocks& blocks) {
  std::vector<PassCollectiveBytes> stages(blocks.chunks.size());
  for (size_t v = 0; v < blocks.chunks.size(); ++v) {
    auto& bytes = stages[v].bytes;
    for (const BlockRun& run : blocks.chunks[v]) {
      if (run.block < 0 || static_cast<size_t>(run.block) >= blocks.blocks.size()) continue;
      const LayerOps& ops = blocks.blocks[static_cast<size_t>(run.block)];
      AddCollectives(ops.forward, run.count, bytes[static_cast<size_t>(Pass::kF)]);
      AddCollectives(ops.recompute, run.count, bytes[static_cast<size_t>(Pass::kB)]);
      AddCollectives(ops.backward_input, run.count, bytes[static_cast<size_t>(Pass::kB)]);
      AddCollectives(ops.backward_weight, run.count, bytes[static_cast<size_t>(Pass::kW)]);
    }
    for (size_t g = 0; g < kCommGroupCount; ++g) {
      bytes[static_cast<size_t>(Pass::kBW)][g] =
          bytes[static_cast<size_t>(Pass::kB)][g] + bytes[static_cast<size_t>(Pass::kW)][g];
    }
  }
  return stages;
}

}  // namespace loom
