#include "workload/chunk_blocks.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace loom {

Result<ChunkBlocks> BuildChunkBlocks(const ModelSpec& model, const Strategy& strategy,
                                     const LayerOpsOptions& kernels) {
  ChunkBlocks out;
  out.layers = LayersPerVirtualStage(strategy, model.num_layers);
  Strategy full = strategy;
  full.recompute = Recompute::kFull;
  Strategy kept = strategy;
  if (strategy.recompute_layers > 0) kept.recompute = Recompute::kNone;
  LOOM_ASSIGN_OR_RETURN(LayerOps embedding, BuildEmbeddingOps(model, strategy, kernels));
  out.blocks.push_back(std::move(embedding));
  out.chunks.resize(out.layers.size());
  out.chunks.front().push_back({0, 1});
  // Layers differ only by dense/MoE, by sliding window and by recompute setting: one block of each
  // kind.
  std::map<std::tuple<bool, bool, bool>, int32_t> layer_blocks;
  int64_t layer = 0;  // model index of the chunk's first layer
  for (size_t v = 0; v < out.layers.size(); ++v) {
    std::vector<BlockRun>& runs = out.chunks[v];
    // Layers [0, full_layers) of each chunk are fully recomputed; the rest follow |kept|.
    const int64_t full_layers =
        strategy.recompute_layers > 0 ? std::min(strategy.recompute_layers, out.layers[v]) : 0;
    for (int64_t i = 0; i < out.layers[v]; ++i, ++layer) {
      const bool moe = model.moe && layer >= model.moe->first_dense_layers;
      const bool recomputed = i < full_layers;
      const bool windowed = model.WindowedAt(layer, strategy.seq_len);
      auto [it, added] = layer_blocks.try_emplace({moe, windowed, recomputed},
                                                  static_cast<int32_t>(out.blocks.size()));
      if (added) {
        LayerOpsOptions options = kernels;
        options.layer = layer;
        LOOM_ASSIGN_OR_RETURN(LayerOps ops,
                              BuildTransformerLayerOps(model, recomputed ? full : kept, options));
        out.blocks.push_back(std::move(ops));
      }
      if (!runs.empty() && runs.back().block == it->second) {
        ++runs.back().count;
      } else {
        runs.push_back({it->second, 1});
      }
    }
  }
  LOOM_ASSIGN_OR_RETURN(LayerOps head, BuildOutputOps(model, strategy, kernels));
  out.chunks.back().push_back({static_cast<int32_t>(out.blocks.size()), 1});
  out.blocks.push_back(std::move(head));
  return out;
}

}  // namespace loom
