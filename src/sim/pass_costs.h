#ifndef LOOM_SIM_PASS_COSTS_H_
#define LOOM_SIM_PASS_COSTS_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "op/op.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/chunk_blocks.h"
#include "workload/layer_ops.h"

namespace loom {

// One pass (F, B or W) of one model chunk for one micro-batch on one rank: the sum of its ops.
struct PassCost {
  SimTime time;     // every op in order, tensor-parallel collectives included (they block the
                    // next op in Megatron-LM, so they are on the critical path of the pass)
  SimTime tp_comm;  // the part of |time| spent in tp/cp/ep collectives
  // The part of |tp_comm| hidden under the pass's GEMMs, by --tp-comm-overlap or by the
  // framework's asynchronous backward collectives (LayerOpsOptions::tp_backward_overlap): it runs
  // beside the kernels, not after them.
  SimTime tp_hidden;
  // Ring attention (--cp-comm p2p with cp > 1): the pass's attention kernels (part of |time|)
  // run in ring_steps + 1 equal blocks, and between blocks i and i + 1 each rank passes the K/V
  // blocks of every layer of the pass to its ring neighbour (and in backward their gradients
  // too), |ring_step| per step, overlapped with block i. The K/V collectives of the all-gather
  // variant are then not in |time|.
  SimTime attention;
  // The part of |time| in memory-bound kernels (OpKind::kMemoryBound: norms, element-wise,
  // softmax, dropout, gradient accumulation), which slow with the HBM bandwidth a transfer beside
  // them takes (SmUse::memory).
  SimTime memory;
  SimTime ring_step;
  int32_t ring_steps = 0;
  double flops = 0;  // model FLOPs of its GEMMs and attention (OpFlops), recompute included
  // The host thread that issues the pass's ops (spec/framework.h; zero without a framework):
  // |host| is the time it spends issuing them all, |host_lead| how long after it starts the pass
  // may start on the GPU so that it ends when the issue allows. A GPU that is free from the start
  // ends the pass at host start + host_lead + time: for op i of host cost h_i and GPU time g_i,
  // max over i of (h_1 + ... + h_i + g_i + ... + g_n). Many short ops give host_lead + time =
  // the host's time plus the last op's, a few long ones a lead of the first op's host cost.
  SimTime host;
  SimTime host_lead;
};

// The host's cost per op of loom's workload, from a framework profile (its scale applied), for
// CostChunks: forward and recompute ops at |forward_op|, backward ops at |backward_op|; with
// |graph_layers| every transformer layer's pass is one CUDA graph launch of |graph_launch|.
struct HostCosts {
  SimTime forward_op = SimTime();
  SimTime backward_op = SimTime();
  bool graph_layers = false;
  SimTime graph_launch = SimTime();
};
HostCosts HostCostsOf(const FrameworkProfile& framework);

// |us| microseconds of |framework|'s host time, its scale applied.
SimTime ScaledHostTime(const FrameworkProfile& framework, double us);

// Part |index| of |parts| equal slices of |pass| (the first slice takes the nanoseconds a
// division leaves over); a ring pass keeps its ring in every slice, each with 1/parts of it. A
// slice's host time is its share of |host|; its lead keeps the whole pass's start-up (the lead
// beyond what the host falls behind the GPU), exact when the pass repeats one layer.
// REQUIRES: parts >= 1, 0 <= index < parts.
PassCost SlicePass(const PassCost& pass, int32_t parts, int32_t index);

// |first| then |second| as one pass.
PassCost CombinePasses(const PassCost& first, const PassCost& second);

// What one virtual stage (model chunk) costs per micro-batch.
struct ChunkCost {
  PassCost forward;
  PassCost backward_input;            // B, recompute replay included
  PassCost backward_weight;           // W
  // Of B's tp collectives, the part hidden beside W's GEMMs when B and W run as one pass (BW):
  // a column-parallel linear's input-gradient reduction beside its weight-gradient GEMM.
  SimTime joint_tp_hidden;
  int64_t kept_activation_bytes = 0;  // from F until its W (or BW) ends
  // Of |kept_activation_bytes|, what the loss keeps (the last virtual stage's only): the fp32
  // softmax of the logits, the target mask and the targets (LogitsBytes).
  int64_t logits_bytes = 0;
  int64_t recompute_activation_bytes = 0;  // largest transient buffer of one layer's replay
  int64_t layers = 0;
};

// The bytes the loss ops of |ops| keep for their backward: Megatron-core's vocab-parallel cross
// entropy saves the fp32 softmax of the logits, the target mask and the masked targets
// (workload/vocab_ops.cc). Zero for a block without a loss.
int64_t LogitsBytes(const LayerOps& ops);

// B and W of |cost| as one pass (BW): CombinePasses of the two, hiding |joint_tp_hidden| too.
PassCost BackwardPass(const ChunkCost& cost);

// How long |pass| keeps an otherwise idle rank busy, as the engine runs it (sim/engine.h): its
// kernels, slowed to 1 - |hidden_sm_share| of their rate while its hidden tp collectives run beside
// them and hold that share of the SMs, then its exposed collectives; time - tp_hidden x (1 -
// share). REQUIRES: the kernels outlast the hidden part at that rate (as tp_hidden <= the GEMMs'
// time makes them at any share up to 1/2).
SimTime PassSpan(const PassCost& pass, double hidden_sm_share);

// Group placements of a strategy's communicators on a cluster (Megatron-LM rank order: tp
// fastest, then cp, dp, pp; for the expert layers etp fastest, then ep, then expert dp).
struct Placements {
  GroupPlacement tp, cp, ep, dp;
  GroupPlacement etp;        // expert tensor parallel: the ranks that split each routed expert
  GroupPlacement expert_dp;  // the ranks holding the same experts, which reduce their gradients
  bool pp_across_nodes =
      false;  // whether neighbouring pipeline stages sit on different NVLink domains
};

Placements PlaceStrategy(const Strategy& strategy, const ClusterSpec& cluster);

// Time of one op under |compute| and |comm|.
SimTime OpTime(const Op& op, const ComputeModel& compute, const CommModel& comm,
               const Placements& placements);

// Costs of every virtual stage (pp * vpp of them, in model order) of |strategy|: the sums of the
// blocks of BuildChunkBlocks, each distinct block costed once; with |host|, each pass's host time
// and lead too. Errors: those of BuildChunkBlocks.
Result<std::vector<ChunkCost>> CostChunks(const ModelSpec& model, const Strategy& strategy,
                                          const ComputeModel& compute, const CommModel& comm,
                                          const Placements& placements,
                                          const LayerOpsOptions& kernels = {},
                                          const HostCosts* host = nullptr);

// What one block of ops (a layer, the embedding or the head, built with |kernels|) costs per
// micro-batch without a host thread: its forward, and its backward with B and W as one pass.
struct BlockPasses {
  PassCost forward;
  PassCost backward;
};
BlockPasses CostBlockPasses(const LayerOps& ops, const Strategy& strategy,
                            const ComputeModel& compute, const CommModel& comm,
                            const Placements& placements, const LayerOpsOptions& kernels = {});

// What each block of |blocks| (the embedding, each kind of layer, the output head; built with
// |kernels|) costs per micro-batch under |compute| and |comm|: its forward and backward passes
// as one (CostBlockPasses, CombinePasses), without a host thread.
std::vector<PassCost> CostBlocks(const ChunkBlocks& blocks, const Strategy& strategy,
                                 const ComputeModel& compute, const CommModel& comm,
                                 const Placements& placements, const LayerOpsOptions& kernels = {});

}  // namespace loom

#endif  // LOOM_SIM_PASS_COSTS_H_
