#ifndef LOOM_PROGRAM_STEP_GRAPH_H_
#define LOOM_PROGRAM_STEP_GRAPH_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "program/task_graph.h"
#include "schedule/schedule.h"

namespace loom {

// A network a transfer crosses. Every rank has a port on each: inside the node its NVLink (or
// PCIe) port, across nodes its NIC - one per GPU on rail-optimised clusters, or the GPU's share of
// its node's NICs, which the communication model already times it at. kNone: the transfer shares
// no bandwidth and takes its time whatever else runs.
enum class Fabric : uint8_t { kNone, kIntraNode, kInterNode };

// What a task runs, for an executor of real kernels (src/exec): BuildStepGraph (sim/step_builder.h)
// records one per task in StepGraph::work. The times of the graph are predictions; this says what
// they predict.
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
  // Only in a step unfolded to its GPUs (program/unfold.h), never in a plan file: the group whose
  // collectives a collectives task runs (an UnfoldedGroup: for a pass's tp collectives task, the
  // share of them on one group; for a gradient bucket or a weight all-gather, its dense or its
  // experts' share). -1: not a collective of an unfolded step.
  int32_t group = -1;

  friend bool operator==(const TaskWork&, const TaskWork&) = default;
};

// The send and receive channels of one rank's port on one fabric.
struct Port {
  ChannelId tx = kNoChannel;
  ChannelId rx = kNoChannel;
};

// The pools of a step, by name: BuildStepGraph makes them, NameStepParts finds them again in a
// graph read from a file.
inline constexpr std::string_view kWeightsPool = "weights";
inline constexpr std::string_view kGradientsPool = "gradients";
inline constexpr std::string_view kOptimizerStatesPool = "optimizer states";
inline constexpr std::string_view kActivationsPool = "activations";
inline constexpr std::string_view kLogitsPool = "logits";
inline constexpr std::string_view kRecomputePool = "recompute";
inline constexpr std::string_view kGatheredWeightsPool = "gathered weights";

// The task graph of one step and how to read it.
struct StepGraph {
  TaskGraph graph;
  int32_t stages = 0;
  int32_t replicas = 0;
  // Rank r is stage r % stages of replica r / stages. Streams of rank r: compute, tp, pp, dp.
  std::vector<StreamId> compute_stream;  // indexed by rank
  std::vector<StreamId> host_stream;  // indexed by rank; empty when the step models no host thread
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

}  // namespace loom

#endif  // LOOM_PROGRAM_STEP_GRAPH_H_
