#ifndef LOOM_WORKLOAD_CHUNK_BLOCKS_H_
#define LOOM_WORKLOAD_CHUNK_BLOCKS_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// The ops every virtual stage runs per micro-batch, as blocks: each distinct block once (a dense or
// MoE layer, fully recomputed or not, the embedding, the output head), and per virtual stage the
// blocks it runs in forward order, each with its count. CostChunks (sim/pass_costs.h) costs these
// blocks; an executor of real kernels runs them (src/exec), so both work from one description of a
// pass.
struct BlockRun {
  int32_t block = 0;  // index into ChunkBlocks::blocks
  int64_t count = 0;  // consecutive repetitions
};
struct ChunkBlocks {
  std::vector<LayerOps> blocks;
  std::vector<std::vector<BlockRun>> chunks;  // per virtual stage, in model order
  std::vector<int64_t> layers;                // per virtual stage: its transformer layers
};

// The blocks of every virtual stage of |strategy|: the layers LayersPerVirtualStage gives it; the
// first stage adds the embedding before them, the last the output head and loss after them. With
// recompute_layers N, the first N layers of each chunk are fully recomputed and the rest keep their
// activations (Megatron-LM's block method). Layers of equal kind share one block. |kernels|
// chooses the attention kernel and dropout of every layer (its |layer| is ignored). Errors: those
// of the workload builders.
Result<ChunkBlocks> BuildChunkBlocks(const ModelSpec& model, const Strategy& strategy,
                                     const LayerOpsOptions& kernels = {});

}  // namespace loom

#endif  // LOOM_WORKLOAD_CHUNK_BLOCKS_H_
