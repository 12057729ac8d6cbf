#include "sim/pass_costs.h"

#include <algorithm>
#include <cmath>

#include "workload/activation_memory.h"
#include "workload/layer_ops.h"

namespace loom {
namespace {

// What costing a pass needs beyond the ops.
struct CostContext {
  const ComputeModel& compute;
  const CommModel& comm;
  const Placements& placements;
  const Strategy& strategy;
  const HostCosts* host = nullptr;
  // The framework overlaps column-parallel linears' backward collectives with their GEMMs
  // (LayerOpsOptions::tp_backward_overlap), and no --tp-comm-overlap replaces that.
  bool tp_backward_overlap = false;
};

CostContext MakeContext(const ComputeModel& compute, const CommModel& comm,
                        const Placements& placements, const Strategy& strategy,
                        const LayerOpsOptions& kernels, const HostCosts* host) {
  return {compute,    comm,
          placements, strategy,
          host,       kernels.tp_backward_overlap && strategy.tp > 1 && !strategy.tp_comm_overlap};
}

// The host side of ops issued one after another: |issued| the host's time so far, |end| when the
// last op ends on a GPU that was free from the start, both from the host's start.
struct HostClock {
  SimTime issued;
  SimTime end;
  void Issue(SimTime host, SimTime gpu) {
    issued += host;
    end = Max(end, issued) + gpu;
  }
};

// |into| followed by |more| (max-plus: |more|'s ops issue after |into|'s, so they end no earlier
// than their lead after |into|'s host time).
void AppendHost(PassCost& into, const PassCost& more) {
  const SimTime lead = Max(into.host_lead, into.host - into.time + more.host_lead);
  into.host += more.host;
  into.host_lead = Max(SimTime(), lead);
}

bool IsRingExchange(const CollectiveShape& c, const CostContext& ctx) {
  return c.group == CommGroup::kCp && ctx.strategy.cp > 1 && ctx.strategy.cp_comm == CpComm::kP2p;
}

// The sequence-parallel all-gathers and reduce-scatters that Transformer Engine's userbuffers
// overlap with the GEMM beside them (Megatron-LM --tp-comm-overlap).
bool IsOverlappableTp(const CollectiveShape& c) {
  return c.group == CommGroup::kTp &&
         (c.kind == CollectiveKind::kAllGather || c.kind == CollectiveKind::kReduceScatter);
}

// |host_per_op|: each op's host cost. |graph|: the ops are part of a captured CUDA graph, which
// costs the host nothing per op; |launch|: this list starts the graph, whose launch it pays.
// |times|, if given, gets each op's time (zero for a ring step, which is not in the pass's time).
PassCost CostOps(const std::vector<Op>& ops, const CostContext& ctx,
                 SimTime host_per_op = SimTime(), bool graph = false, bool launch = false,
                 std::vector<SimTime>* times = nullptr) {
  PassCost cost;
  SimTime gemm, overlappable;
  HostClock clock;
  if (graph && launch && !ops.empty()) clock.Issue(ctx.host->graph_launch, SimTime());
  if (times != nullptr) times->assign(ops.size(), SimTime());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    cost.flops += static_cast<double>(OpFlops(op));
    if (op.kind == OpKind::kCollective &&
        IsRingExchange(std::get<CollectiveShape>(op.shape), ctx)) {
      // A ring step moves one rank's block of the gathered K/V (or of their gradients) to the
      // next rank of the cp group: 1/cp of the collective's bytes, point to point.
      const int64_t block = std::get<CollectiveShape>(op.shape).bytes / ctx.strategy.cp;
      cost.ring_step += ctx.comm.PointToPoint(block, ctx.placements.cp.Nodes() > 1);
      cost.ring_steps = static_cast<int32_t>(ctx.strategy.cp - 1);
      continue;
    }
    const SimTime t = OpTime(op, ctx.compute, ctx.comm, ctx.placements);
    if (times != nullptr) (*times)[i] = t;
    cost.time += t;
    clock.Issue(graph ? SimTime() : host_per_op, t);
    if (op.kind == OpKind::kCollective) {
      cost.tp_comm += t;
      if (IsOverlappableTp(std::get<CollectiveShape>(op.shape))) overlappable += t;
    }
    if (op.kind == OpKind::kGemm) gemm += t;
    if (op.kind == OpKind::kAttention) cost.attention += t;
    if (op.kind == OpKind::kMemoryBound) cost.memory += t;
  }
  if (ctx.strategy.tp_comm_overlap && ctx.strategy.tp > 1) {
    // The collective is cut into tp chunks pipelined with the GEMM's tp chunks; the first chunk's
    // transfer has nothing to hide under, and no more than the GEMMs' time can hide (Wang et al.
    // 2023, "Overlap Communication with Dependent Computation via Decomposition", Section 3).
    const int64_t pipelined = overlappable.nanos() - overlappable.nanos() / ctx.strategy.tp;
    cost.tp_hidden = SimTime::FromNanos(std::min(pipelined, gemm.nanos()));
  }
  if (cost.ring_steps == 0) cost.attention = SimTime();
  cost.host = clock.issued;
  cost.host_lead = Max(SimTime(), clock.end - cost.time);
  return cost;
}

void Add(PassCost& into, const PassCost& more) {
  AppendHost(into, more);
  into.time += more.time;
  into.tp_comm += more.tp_comm;
  into.tp_hidden += more.tp_hidden;
  into.attention += more.attention;
  into.memory += more.memory;
  into.ring_step += more.ring_step;
  into.ring_steps = std::max(into.ring_steps, more.ring_steps);
  into.flops += more.flops;
}

// The per-micro-batch cost of one block of ops (a layer, the embedding or the head).
struct BlockCost {
  PassCost forward, backward_input, backward_weight;
  SimTime joint_tp_hidden;  // ChunkCost::joint_tp_hidden
  ActivationBytes activations;
  int64_t logits = 0;  // of activations.kept
};

// Each backward collective of |ops| that runs beside a GEMM of its linear (TpBackwardPartners)
// hides as much of its time as that GEMM takes: into B's tp_hidden when the GEMM is B's (the
// input gradient beside the re-gather), into |joint_tp_hidden| when it is W's (the weight
// gradient beside the input gradient's reduction), hidden only where B and W run as one pass.
// |b_times| and |w_times|: the times of B's and W's ops (CostOps).
void AddTpBackwardOverlap(const LayerOps& ops, const std::vector<SimTime>& b_times,
                          const std::vector<SimTime>& w_times, BlockCost& cost) {
  const auto find = [](const std::vector<Op>& list, OpName name) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i].name == name) return static_cast<int64_t>(i);
    }
    return int64_t{-1};
  };
  for (size_t c = 0; c < ops.backward_input.size(); ++c) {
    if (ops.backward_input[c].kind != OpKind::kCollective) continue;
    for (const OpName partner : TpBackwardPartners(ops.backward_input[c].name)) {
      if (const int64_t b = find(ops.backward_input, partner); b >= 0) {
        cost.backward_input.tp_hidden += Min(b_times[c], b_times[b]);
        break;
      }
      if (const int64_t w = find(ops.backward_weight, partner); w >= 0) {
        cost.joint_tp_hidden += Min(b_times[c], w_times[w]);
        break;
      }
    }
  }
}

// |layer|: a transformer layer, which a framework may run as CUDA graphs.
BlockCost CostBlock(const LayerOps& ops, const CostContext& ctx, bool layer) {
  BlockCost cost;
  const SimTime forward = ctx.host ? ctx.host->forward_op : SimTime();
  const SimTime backward = ctx.host ? ctx.host->backward_op : SimTime();
  const bool graph = ctx.host && ctx.host->graph_layers && layer;
  cost.forward = CostOps(ops.forward, ctx, forward, graph, true);
  // A captured backward is one graph with its recompute and its weight gradients: the first
  // non-empty list of the three launches it.
  std::vector<SimTime> b_times, w_times;
  const bool overlap = ctx.tp_backward_overlap;
  cost.backward_input = CostOps(ops.recompute, ctx, forward, graph, true);
  Add(cost.backward_input, CostOps(ops.backward_input, ctx, backward, graph, ops.recompute.empty(),
                                   overlap ? &b_times : nullptr));
  cost.backward_weight =
      CostOps(ops.backward_weight, ctx, backward, graph,
              ops.recompute.empty() && ops.backward_input.empty(), overlap ? &w_times : nullptr);
  if (overlap) AddTpBackwardOverlap(ops, b_times, w_times, cost);
  cost.activations = SumActivationBytes(ops);
  cost.logits = LogitsBytes(ops);
  return cost;
}

// B then W as one pass (BW), hiding what B's collectives hide beside W's GEMMs too.
PassCost JoinBackward(const PassCost& b, const PassCost& w, SimTime joint_tp_hidden) {
  PassCost both = b;
  Add(both, w);
  both.tp_hidden += joint_tp_hidden;
  return both;
}

void AddBlock(ChunkCost& chunk, const BlockCost& block) {
  Add(chunk.forward, block.forward);
  Add(chunk.backward_input, block.backward_input);
  Add(chunk.backward_weight, block.backward_weight);
  chunk.joint_tp_hidden += block.joint_tp_hidden;
  chunk.kept_activation_bytes += block.activations.kept;
  chunk.logits_bytes += block.logits;
  chunk.recompute_activation_bytes =
      std::max(chunk.recompute_activation_bytes, block.activations.recompute);
}

}  // namespace

int64_t LogitsBytes(const LayerOps& ops) {
  int64_t bytes = 0;
  for (const Op& op : ops.forward) {
    const bool loss = op.name == OpName::kCrossEntropyMax || op.name == OpName::kCrossEntropyExp ||
                      op.name == OpName::kCrossEntropyLoss;
    if (loss) bytes += op.saved_bytes;
  }
  return bytes;
}

PassCost CombinePasses(const PassCost& first, const PassCost& second) {
  PassCost both = first;
  Add(both, second);
  return both;
}

PassCost BackwardPass(const ChunkCost& cost) {
  return JoinBackward(cost.backward_input, cost.backward_weight, cost.joint_tp_hidden);
}

SimTime PassSpan(const PassCost& pass, double hidden_sm_share) {
  const SimTime serial = pass.time - pass.tp_hidden;
  if (hidden_sm_share == 0 || pass.tp_hidden == SimTime()) return serial;
  const double slowed = static_cast<double>(pass.tp_hidden.nanos()) * hidden_sm_share;
  return serial + SimTime::FromNanos(std::llround(slowed));
}

SimTime ScaledHostTime(const FrameworkProfile& framework, double us) {
  return SimTime::FromNanos(static_cast<int64_t>(std::llround(us * framework.scale * 1e3)));
}

HostCosts HostCostsOf(const FrameworkProfile& f) {
  return {ScaledHostTime(f, f.forward_us_per_op), ScaledHostTime(f, f.backward_us_per_op),
          f.cuda_graph_layers, ScaledHostTime(f, f.graph_launch_us)};
}

PassCost SlicePass(const PassCost& pass, int32_t parts, int32_t index) {
  const auto slice = [&](SimTime t) {
    return SimTime::FromNanos(t.nanos() / parts + (index == 0 ? t.nanos() % parts : 0));
  };
  PassCost part = pass;
  part.tp_comm = slice(pass.tp_comm);
  part.tp_hidden = slice(pass.tp_hidden);
  part.attention = slice(pass.attention);
  part.memory = slice(pass.memory);
  part.ring_step = slice(pass.ring_step);
  part.time = part.tp_comm + slice(pass.time - pass.tp_comm);
  part.flops = pass.flops / parts;
  const SimTime behind =
      std::max(SimTime(), pass.host - pass.time);  // how far the host falls behind
  part.host = slice(pass.host);
  part.host_lead =
      std::min(part.host, std::max(SimTime(), part.host - part.time) + (pass.host_lead - behind));
  return part;
}

Placements PlaceStrategy(const Strategy& s, const ClusterSpec& cluster) {
  // Groups are placed on NVLink domains, not hosts: on GB200 NVL72 a tp group over two trays of 4
  // still talks over NVLink.
  const int64_t g = cluster.NvlinkDomainGpus();
  Placements p;
  p.tp = PlaceGroup(s.tp, 1, g);
  p.cp = PlaceGroup(s.cp, s.tp, g);
  // Megatron-core's expert grid over the same tp * cp * dp ranks of a stage (parallel_state.py,
  // the expert RankGenerator): etp fastest, then ep, then expert data parallel.
  p.etp = PlaceGroup(s.ExpertTp(), 1, g);
  p.ep = PlaceGroup(s.ep, s.ExpertTp(), g);
  p.expert_dp = PlaceGroup(s.ExpertDp(), s.ep * s.ExpertTp(), g);
  // Megatron-LM reduces gradients over the data- and context-parallel ranks together.
  p.dp = PlaceGroup(s.dp * s.cp, s.tp, g);
  p.pp_across_nodes = s.tp * s.cp * s.dp >= g;
  return p;
}

SimTime OpTime(const Op& op, const ComputeModel& compute, const CommModel& comm,
               const Placements& placements) {
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
      if (c.group == CommGroup::kEtp) group = &placements.etp;
      return comm.Collective(c.kind, c.bytes, *group);
    }
  }
  return SimTime();
}

BlockPasses CostBlockPasses(const LayerOps& ops, const Strategy& strategy,
                            const ComputeModel& compute, const CommModel& comm,
                            const Placements& placements, const LayerOpsOptions& kernels) {
  const CostContext ctx = MakeContext(compute, comm, placements, strategy, kernels, nullptr);
  const BlockCost block = CostBlock(ops, ctx, false);
  return {block.forward,
          JoinBackward(block.backward_input, block.backward_weight, block.joint_tp_hidden)};
}

std::vector<PassCost> CostBlocks(const ChunkBlocks& blocks, const Strategy& strategy,
                                 const ComputeModel& compute, const CommModel& comm,
                                 const Placements& placements, const LayerOpsOptions& kernels) {
  std::vector<PassCost> costs;
  for (const LayerOps& ops : blocks.blocks) {
    const BlockPasses block = CostBlockPasses(ops, strategy, compute, comm, placements, kernels);
    costs.push_back(CombinePasses(block.forward, block.backward));
  }
  return costs;
}

Result<std::vector<ChunkCost>> CostChunks(const ModelSpec& model, const Strategy& strategy,
                                          const ComputeModel& compute, const CommModel& comm,
                                          const Placements& placements,
                                          const LayerOpsOptions& kernels, const HostCosts* host) {
  LOOM_ASSIGN_OR_RETURN(ChunkBlocks blocks, BuildChunkBlocks(model, strategy, kernels));
  const CostContext ctx = MakeContext(compute, comm, placements, strategy, kernels, host);
  std::vector<BlockCost> block_costs;
  // Block 0 is the embedding and the last the output head (BuildChunkBlocks); the rest are layers.
  for (size_t i = 0; i < blocks.blocks.size(); ++i) {
    block_costs.push_back(CostBlock(blocks.blocks[i], ctx, i > 0 && i + 1 < blocks.blocks.size()));
  }
  std::vector<ChunkCost> costs(blocks.chunks.size());
  for (size_t v = 0; v < costs.size(); ++v) {
    costs[v].layers = blocks.layers[v];
    for (const BlockRun& run : blocks.chunks[v]) {
      for (int64_t i = 0; i < run.count; ++i) AddBlock(costs[v], block_costs[run.block]);
    }
  }
  return costs;
}

}  // namespace loom
