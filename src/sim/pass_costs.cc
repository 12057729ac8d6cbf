#include "sim/pass_costs.h"

#include <algorithm>
#include <map>
#include <utility>

#include "workload/activation_memory.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

bool IsTpComm(const Op& op) { return op.kind == OpKind::kCollective; }

PassCost CostOps(const std::vector<Op>& ops, const ComputeModel& compute, const CommModel& comm,
                 const Placements& placements) {
  PassCost cost;
  for (const Op& op : ops) {
    SimTime t = OpTime(op, compute, comm, placements);
    cost.time += t;
    if (IsTpComm(op)) cost.tp_comm += t;
    cost.flops += static_cast<double>(OpFlops(op));
  }
  return cost;
}

void Add(PassCost& into, const PassCost& more) {
  into.time += more.time;
  into.tp_comm += more.tp_comm;
  into.flops += more.flops;
}

// The per-micro-batch cost of one block of ops (a layer, the embedding or the head).
struct BlockCost {
  PassCost forward, backward_input, backward_weight;
  ActivationBytes activations;
};

BlockCost CostBlock(const LayerOps& ops, const ComputeModel& compute, const CommModel& comm,
                    const Placements& placements) {
  BlockCost cost;
  cost.forward = CostOps(ops.forward, compute, comm, placements);
  cost.backward_input = CostOps(ops.recompute, compute, comm, placements);
  Add(cost.backward_input, CostOps(ops.backward_input, compute, comm, placements));
  cost.backward_weight = CostOps(ops.backward_weight, compute, comm, placements);
  cost.activations = SumActivationBytes(ops);
  return cost;
}

void AddBlock(ChunkCost& chunk, const BlockCost& block) {
  Add(chunk.forward, block.forward);
  Add(chunk.backward_input, block.backward_input);
  Add(chunk.backward_weight, block.backward_weight);
  chunk.kept_activation_bytes += block.activations.kept;
  chunk.recompute_activation_bytes = std::max(chunk.recompute_activation_bytes, block.activations.recompute);
}

}  // namespace

Placements PlaceStrategy(const Strategy& s, const ClusterSpec& cluster) {
  const int64_t g = cluster.gpus_per_node;
  Placements p;
  p.tp = PlaceGroup(s.tp, 1, g);
  p.cp = PlaceGroup(s.cp, s.tp, g);
  // Expert-parallel ranks are carved from the data- and context-parallel ranks next to each other.
  p.ep = PlaceGroup(s.ep, s.tp, g);
  // Megatron-LM reduces gradients over the data- and context-parallel ranks together.
  p.dp = PlaceGroup(s.dp * s.cp, s.tp, g);
  p.pp_across_nodes = s.tp * s.cp * s.dp >= g;
  return p;
}

SimTime OpTime(const Op& op, const ComputeModel& compute, const CommModel& comm, const Placements& placements) {
  switch (op.kind) {
    case OpKind::kGemm:
      return compute.Gemm(std::get<GemmShape>(op.shape));
    case OpKind::kAttention:
      return compute.Attention(std::get<AttentionShape>(op.shape));
    case OpKind::kMemoryBound:
      return compute.MemoryBound(std::get<MemoryShape>(op.shape));
    case OpKind::kCollective: {
      const CollectiveShape& c = std::get<CollectiveShape>(op.shape);
      const GroupPlacement* group = &placements.tp;
      if (c.group == CommGroup::kCp) group = &placements.cp;
      if (c.group == CommGroup::kEp) group = &placements.ep;
      if (c.group == CommGroup::kDp) group = &placements.dp;
      return comm.Collective(c.kind, c.bytes, *group);
    }
  }
  return SimTime();
}

Result<std::vector<ChunkCost>> CostChunks(const ModelSpec& model, const Strategy& strategy,
                                          const ComputeModel& compute, const CommModel& comm,
                                          const Placements& placements, const LayerOpsOptions& kernels) {
  const std::vector<int64_t> layers = LayersPerVirtualStage(strategy, model.num_layers);
  Strategy full = strategy;
  full.recompute = Recompute::kFull;
  Strategy kept = strategy;
  if (strategy.recompute_layers > 0) kept.recompute = Recompute::kNone;
  // Layers differ only by dense/MoE and by recompute setting: cost each kind once.
  std::map<std::pair<bool, bool>, BlockCost> layer_costs;
  std::vector<ChunkCost> costs(layers.size());
  int64_t layer = 0;  // model index of the chunk's first layer
  for (size_t v = 0; v < layers.size(); ++v) {
    ChunkCost& chunk = costs[v];
    chunk.layers = layers[v];
    // Layers [0, full_layers) of each chunk are fully recomputed; the rest follow |kept|.
    const int64_t full_layers = strategy.recompute_layers > 0 ? std::min(strategy.recompute_layers, layers[v]) : 0;
    for (int64_t i = 0; i < layers[v]; ++i, ++layer) {
      const bool moe = model.moe && layer >= model.moe->first_dense_layers;
      const bool recomputed = i < full_layers;
      auto key = std::make_pair(moe, recomputed);
      auto it = layer_costs.find(key);
      if (it == layer_costs.end()) {
        LayerOpsOptions options = kernels;
        options.layer = layer;
        Result<LayerOps> ops = BuildTransformerLayerOps(model, recomputed ? full : kept, options);
        if (!ops.ok()) return ops.status();
        it = layer_costs.emplace(key, CostBlock(*ops, compute, comm, placements)).first;
      }
      AddBlock(chunk, it->second);
    }
  }
  Result<LayerOps> embedding = BuildEmbeddingOps(model, strategy, kernels);
  if (!embedding.ok()) return embedding.status();
  AddBlock(costs.front(), CostBlock(*embedding, compute, comm, placements));
  Result<LayerOps> head = BuildOutputOps(model, strategy, kernels);
  if (!head.ok()) return head.status();
  AddBlock(costs.back(), CostBlock(*head, compute, comm, placements));
  return costs;
}

}  // namespace loom
