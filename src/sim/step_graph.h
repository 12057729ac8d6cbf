#ifndef LOOM_SIM_STEP_GRAPH_H_
#define LOOM_SIM_STEP_GRAPH_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "schedule/schedule.h"
#include "sim/pass_costs.h"
#include "sim/task_graph.h"

namespace loom {

// A network a transfer crosses. Every rank has a port on each: inside the node its NVLink (or
// PCIe) port, across nodes its NIC - one per GPU on rail-optimised clusters, or the GPU's share of
// its node's NICs, which the communication model already times it at. kNone: the transfer shares
// no bandwidth and takes its time whatever else runs.
enum class Fabric : uint8_t { kNone, kIntraNode, kInterNode };

// What the step graph needs beyond the schedule and the per-chunk pass costs.
struct StepGraphConfig {
  // Data-parallel replicas simulated, each a full pipeline. 1 is the symmetric default: one
  // replica, its gradient collectives timed for the whole group. More simulate every replica, with
  // the collectives as rendezvous among them; both give the same step on symmetric inputs.
  int32_t replicas = 1;
  // One activation (forward) or gradient (backward) transfer between neighbouring stages.
  SimTime p2p_time;
  // Whether the sender's next pass waits for its send to finish. Megatron-LM's pipeline schedules
  // wait on their send and receive requests before the next forward or backward (megatron/core/
  // pipeline_parallel/p2p_communication.py, _communicate: req.wait() unless the interleaved
  // schedule overlaps p2p, --overlap-p2p-communication, off by default), so a send costs its
  // sender compute time, not only its receiver.
  bool blocking_sends = true;
  // Gradient reduction per virtual stage (indexed like the chunk costs): the chunk's gradients go
  // in |buckets| equal buckets, each reduced in |bucket_time| on the data-parallel stream as soon
  // as the last backward of the chunk has produced it (Megatron-LM's overlapped, bucketed
  // gradient reduction). Empty: no gradient reduction.
  std::vector<int32_t> buckets;
  std::vector<SimTime> bucket_time;
  // Per stage: the optimizer step after every gradient of the stage is reduced, then (ZeRO >= 1)
  // the all-gather of the updated weights.
  std::vector<SimTime> optimizer_time;
  std::vector<SimTime> param_gather_time;
  // The fabric of each kind of transfer: sends between neighbouring stages, data-parallel
  // collectives (gradient buckets, weight all-gathers), and the tensor-parallel task of each pass
  // (its tp, cp and ep collectives). Transfers on one port share its bandwidth (engine.h). A
  // port has a send (tx) and a receive (rx) channel, each direction of a full-duplex link: a
  // send uses the sender's tx and the receiver's rx, a collective both channels of its rank.
  Fabric pp_fabric = Fabric::kNone;
  Fabric dp_fabric = Fabric::kNone;
  Fabric tp_fabric = Fabric::kNone;
};

// The send and receive channels of one rank's port on one fabric.
struct Port {
  ChannelId tx = kNoChannel;
  ChannelId rx = kNoChannel;
};

// The task graph of one step and how to read it.
struct StepGraph {
  TaskGraph graph;
  int32_t stages = 0;
  int32_t replicas = 0;
  // Rank r is stage r % stages of replica r / stages. Streams of rank r: compute, tp, pp, dp.
  std::vector<StreamId> compute_stream;  // indexed by rank
  // Indexed by rank; empty when no transfer crosses the fabric.
  std::vector<Port> intra_node_port, inter_node_port;
  PoolId model_states = kDefaultPool;  // weights, gradients, optimizer states (a baseline)
  PoolId activations = kDefaultPool;
  PoolId recompute = kDefaultPool;
  // Task categories: kernels of a pass, its tensor-parallel collectives, pipeline transfers,
  // data-parallel collectives, the optimizer step.
  NameId compute_category = kEmptyName, tp_category = kEmptyName, pp_category = kEmptyName,
         dp_category = kEmptyName, optimizer_category = kEmptyName;
};

// Builds the step: every stage runs |schedule|'s order on its compute stream, each pass's
// tensor-parallel collectives after its kernels on the tp stream, with the true dependencies of
// schedule.h; a transfer between stages is a task on the sender's pp stream (one transfer at a
// time per sender); transfers, data-parallel collectives and tp tasks share the ports of their
// config fabric; activations are allocated when F starts and freed when the micro-batch's W (or
// BW) ends; a recompute buffer lives for each B. The last backward of each chunk is cut into its
// gradient buckets, so that the reduction of a bucket overlaps the rest of the backward.
// REQUIRES: chunk_costs.size() == schedule.VirtualStages(); config vectors sized as documented.
StepGraph BuildStepGraph(const PipelineSchedule& schedule, const std::vector<ChunkCost>& chunk_costs,
                         const StepGraphConfig& config);

}  // namespace loom

#endif  // LOOM_SIM_STEP_GRAPH_H_
