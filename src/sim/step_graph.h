#ifndef LOOM_SIM_STEP_GRAPH_H_
#define LOOM_SIM_STEP_GRAPH_H_

#include <cstdint>
#include <vector>

#include "core/enum_names.h"
#include "core/sim_time.h"
#include "program/task_graph.h"
#include "schedule/schedule.h"
#include "sim/pass_costs.h"

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
  // Whether the buckets are reduced as the backward produces them (Megatron-LM's
  // --overlap-grad-reduce) or, off, all after the stage's last backward pass (its
  // finalize_model_grads).
  bool overlap_grad_reduce = true;
  // Whether every micro-batch's backward reduces its buckets (ZeRO-2 and -3 keep only their
  // shard of the gradients, so they reduce-scatter after each micro-batch), not only the chunk's
  // last one.
  bool reduce_every_micro_batch = false;
  // Per stage: the optimizer step after every gradient of the stage is reduced, then (ZeRO >= 1)
  // the all-gather of the updated weights.
  std::vector<SimTime> optimizer_time;
  std::vector<SimTime> param_gather_time;
  // --overlap-param-gather: the all-gather of each chunk's weights runs at the start of the
  // step, one per gradient bucket, and the chunk's first forward runs as that many segments, each
  // waiting for its bucket (in a run of steps: under the forward of the next step), instead of
  // after the optimizer.
  bool overlap_param_gather = false;
  // ZeRO-3: each forward and each backward pass runs as |layer_gathers| equal layer segments, and
  // each segment waits for the all-gather of its layer's weights (|layer_gather_time|, on a
  // gather stream, |layer_gather_bytes| held from its start to the end of the segment). A gather
  // starts once the segment two before it has freed its weights: one layer prefetched ahead
  // (Rajbhandari et al. 2020, Section 5.3; PyTorch FSDP's backward prefetch). The buckets are
  // then the layers: set buckets to layer_gathers. 0: no per-layer gathers.
  int32_t layer_gathers = 0;
  SimTime layer_gather_time;
  int64_t layer_gather_bytes = 0;
  // ZeRO-Offload (Ren et al. 2021): per stage, the copy of the gradient shard to the host over
  // PCIe (one slice after each bucket's reduction), the optimizer step on the CPU after the last
  // one, and the copy of the updated weights back, before their all-gather. Empty: no offload.
  std::vector<SimTime> grad_to_host, cpu_step, params_to_gpu;
  // Parameter offload (ZeRO-Infinity): each layer's weight shard comes from the host over PCIe
  // before its gather. Zero: the weights stay on the GPU.
  SimTime layer_fetch_time;
  // The fabric of each kind of transfer: sends between neighbouring stages, data-parallel
  // collectives (gradient buckets, weight all-gathers), and the tensor-parallel task of each pass
  // (its tp, cp and ep collectives). Transfers on one port share its bandwidth (engine.h). A
  // port has a send (tx) and a receive (rx) channel, each direction of a full-duplex link: a
  // send uses the sender's tx and the receiver's rx, a collective both channels of its rank.
  Fabric pp_fabric = Fabric::kNone;
  Fabric dp_fabric = Fabric::kNone;
  Fabric tp_fabric = Fabric::kNone;
  // Ring attention: whether passes may carry ring transfers (PassCost::ring_steps), which run on
  // a cp stream per rank over |cp_fabric|.
  bool cp_ring = false;
  Fabric cp_fabric = Fabric::kNone;
  // The host thread of each rank (spec/framework.h). Off: the GPU is always fed. On: a "host"
  // stream per rank issues every pass in the rank's order, first its lead (PassCost::host_lead),
  // which the pass's GPU work waits for, then the rest of its host time; so the host runs ahead of
  // the GPU as far as it can, and a pass of short ops waits for the host.
  bool host = false;
  // Where the host waits for the GPU: after every pipeline send and receive (the sender's next
  // pass and the receiver's pass are issued only once the transfer has ended; Megatron-LM's
  // torch.cuda.synchronize() after batch_isend_irecv, megatron/core/pipeline_parallel/
  // p2p_communication.py), and before each stage's optimizer step, once every gradient is reduced
  // (the gradient norm's and found-inf's .item()).
  bool host_sync_after_p2p = false;
  bool host_sync_before_optimizer = false;
  // Per stage: the optimizer step's host time before its kernels may start (the lead), when host.
  std::vector<SimTime> optimizer_host_lead;
};

// What a task runs, for an executor of real kernels (src/exec): BuildStepGraph records one per
// task in StepGraph::work. The times of the graph are predictions; this says what they predict.
enum class WorkKind : uint8_t {
  kNone,        // nothing of its own: the zero-length marker that starts a pass with hidden tp
  kPass,        // the kernels of part |part| of |parts| of |pass| of virtual stage |index|
  kTpComm,      // that pass's tensor-, context- and expert-parallel collectives (exposed or hidden)
  kRingSend,    // a ring-attention K/V block sent to the next cp rank during pass |index|'s |pass|
  kTransfer,    // virtual stage |index|'s activations (|pass| F) or input gradients (B, BW) to the
                // neighbouring stage
  kGradReduce,  // bucket |part| of |parts| of virtual stage |index|'s gradients
  kParamGather,  // the all-gather of stage |index|'s updated weights (part |part| of |parts| when
                 // it runs bucket by bucket at the start of the step)
  kLayerGather,  // ZeRO-3's all-gather of one layer's weights
  kOptimizer,    // stage |index|'s optimizer step on the GPU
  kOffload,      // copies over PCIe and the CPU optimizer step of ZeRO-Offload
  kHost,         // the host thread issuing pass |index|'s |pass| (or stage |index|'s optimizer):
                 // no GPU work; a plan with host tasks is the framework's, not an executor's
};

inline constexpr EnumNames<WorkKind, 11> kWorkKindNames({{
    {WorkKind::kNone, "none"},
    {WorkKind::kPass, "pass"},
    {WorkKind::kTpComm, "tp_comm"},
    {WorkKind::kRingSend, "ring_send"},
    {WorkKind::kTransfer, "transfer"},
    {WorkKind::kGradReduce, "grad_reduce"},
    {WorkKind::kParamGather, "param_gather"},
    {WorkKind::kLayerGather, "layer_gather"},
    {WorkKind::kOptimizer, "optimizer"},
    {WorkKind::kOffload, "offload"},
    {WorkKind::kHost, "host"},
}});

struct TaskWork {
  WorkKind kind = WorkKind::kNone;
  Pass pass = Pass::kF;
  int32_t index = -1;  // the virtual stage, or for kOptimizer and kParamGather the stage
  int32_t part = 0;
  int32_t parts = 1;

  friend bool operator==(const TaskWork&, const TaskWork&) = default;
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
  std::vector<StreamId> host_stream;     // indexed by rank; empty without StepGraphConfig::host
  // Indexed by rank; empty when no transfer crosses the fabric.
  std::vector<Port> intra_node_port, inter_node_port;
  // The memory pools (kDefaultPool: the step has no such pool). Weights, gradients and optimizer
  // states are baselines (MemoryBaseline), live all step; |model_states| holds all three in plan
  // files written before they were split (BuildStepGraph no longer makes it).
  PoolId weights = kDefaultPool;
  PoolId gradients = kDefaultPool;
  PoolId optimizer_states = kDefaultPool;
  PoolId model_states = kDefaultPool;
  PoolId activations = kDefaultPool;  // kept from each forward until its backward
  PoolId logits = kDefaultPool;       // the loss's kept logits (ChunkCost::logits_bytes)
  PoolId recompute = kDefaultPool;
  PoolId gathered_weights = kDefaultPool;  // ZeRO-3's per-layer gathered weights
  // Task categories: kernels of a pass, its tensor-parallel collectives, pipeline transfers,
  // data-parallel collectives, the optimizer step.
  NameId compute_category = kEmptyName, tp_category = kEmptyName, pp_category = kEmptyName,
         dp_category = kEmptyName, optimizer_category = kEmptyName, cp_category = kEmptyName,
         offload_category = kEmptyName, host_category = kEmptyName;
  // The share of a pass's tp collectives that --tp-comm-overlap runs beside its kernels: not time
  // the compute stream spends, nor communication it waits for.
  NameId tp_hidden_category = kEmptyName;
  // Every ring transfer and the attention block it runs beside: the time the transfer ends after
  // the block is ring communication the compute stream waits for.
  struct RingTransfer {
    TaskId transfer;
    TaskId beside;
  };
  std::vector<RingTransfer> ring_transfers;
  // Indexed by task id: what each task runs.
  std::vector<TaskWork> work;
  // Indexed by task id: the micro-batch of the pass a task belongs to (its kernels, collectives,
  // ring sends, host issue and ZeRO-3 gathers) or whose output it sends; -1 for the rest (gradient
  // reduction, optimizer, weight all-gathers). Empty for a graph read from a plan file.
  std::vector<int32_t> micro_batch;
};

// Sets the pool ids of |step| (weights ... gathered_weights; model_states in older files) to its
// graph's pools of the names BuildStepGraph gives them, and its category ids to the names
// BuildStepGraph uses (interning them): for a step whose graph was read back from a file.
void NameStepParts(StepGraph& step);

// Builds the step: every stage runs |schedule|'s order on its compute stream, each pass's
// tensor-parallel collectives after its kernels on the tp stream, with the true dependencies of
// schedule.h; a transfer between stages is a task on the sender's pp stream (one transfer at a
// time per sender); transfers, data-parallel collectives and tp tasks share the ports of their
// config fabric; activations (the logits of the last virtual stage in their own pool) are
// allocated when F starts and freed when the micro-batch's W (or BW) ends; a recompute buffer
// lives for each B. The pools of weights, gradients and optimizer states are made empty: the
// caller gives them their baselines (ModelStateBaselines, simulator.h). The last backward of each
// chunk is cut into its gradient buckets, so that the reduction of a bucket overlaps the rest of
// the backward. REQUIRES: chunk_costs.size() == schedule.VirtualStages(); config vectors sized as
// documented.
StepGraph BuildStepGraph(const PipelineSchedule& schedule,
                         const std::vector<ChunkCost>& chunk_costs, const StepGraphConfig& config);

}  // namespace loom

#endif  // LOOM_SIM_STEP_GRAPH_H_
