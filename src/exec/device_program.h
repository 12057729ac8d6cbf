#ifndef LOOM_EXEC_DEVICE_PROGRAM_H_
#define LOOM_EXEC_DEVICE_PROGRAM_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "exec/exec_plan.h"
#include "op/op.h"
#include "program/plan_file.h"
#include "program/plan_workload.h"

namespace loom {

// One rank's step as a GPU runs it (`loom validate --backend cuda`): what each task enqueues, on
// which stream, after which events, in an order the host can enqueue the whole step ahead of the
// GPU. It needs no GPU to build, so that tests check it on a CPU.
//
// Streams are the plan's streams of the rank, plus one receive stream per rank that sends to this
// one. Dependencies between streams of the rank are CUDA events: a task's end event is recorded
// after it, and a task that waits for it waits on that event. A dependency on another rank's task
// is always on one of its sends (anything else is refused): the sender runs ncclSend on its
// stream, this rank a matching ncclRecv on the receive stream of that sender, where the receives
// from one sender are issued in the order it sends; the waiting task waits for the receive's event.
// Every sender-receiver pair in one direction has a communicator of its own, so that each
// communicator is used from one stream on each rank, as NCCL requires.

// What one task enqueues.
enum class DeviceWork : uint8_t {
  kNothing,     // zero-length markers and collectives of a group of one GPU (dp = 1)
  kOps,         // the ops of a pass part (OpsOfPass), less its collectives (their own tasks run
                // them)
  kSend,        // ncclSend of |bytes| to |peer|: a pipeline transfer or a ring-attention K/V block
  kCollective,  // |collectives|, in order, on communicator |communicator|
  kOptimizer,   // |traffic|: HBM reads and writes of the optimizer step over the model states
  kStandIn,     // a wait of |stand_in| on the GPU, for communication a lone GPU cannot run
};

struct DeviceTask {
  TaskId task = -1;
  int32_t stream = 0;  // index into DeviceProgram::streams
  DeviceWork work = DeviceWork::kNothing;
  PassOps ops;        // kOps
  int32_t peer = -1;  // kSend: the receiving rank
  int32_t edge = -1;  // kSend: index into DeviceProgram::edges
  // kCollective, each of nccl-tests' size: a gradient bucket's reduction or a weight all-gather
  // (group dp: on the dense or the expert data-parallel GPUs, as the communicator says), or the
  // collectives of one pass part on one tp, cp, ep or etp group (all-to-alls of expert dispatch
  // and combine among them).
  std::vector<CollectiveShape> collectives;
  int32_t communicator = -1;  // kCollective: ExecPlan's communicator
  int64_t bytes = 0;          // kSend
  MemoryShape traffic;        // kOptimizer
  SimTime stand_in;           // kStandIn: the task's predicted time
  // Tasks of this rank on other streams whose end events it waits for (their DeviceTask index).
  std::vector<int32_t> waits;
  // Receives (index into DeviceProgram::receives) it waits for.
  std::vector<int32_t> receives;
  // Bytes of each pool allocated when it starts and freed when it ends (stream-ordered, on its
  // stream), from its Task fields and memory events; index: the plan's PoolId.
  std::vector<std::pair<PoolId, int64_t>> alloc_at_start, free_at_end;
};

// One ncclRecv: |bytes| from |from_rank|'s send task |send_task|, on receive stream |stream|.
struct DeviceReceive {
  int32_t from_rank = -1;
  TaskId send_task = -1;
  int32_t stream = 0;
  int32_t edge = -1;  // index into DeviceProgram::edges
  int64_t bytes = 0;
};

// A direction of point-to-point traffic: |from| sends to |to|. Every rank of the step lists every
// edge of the step in one order (BuildDeviceProgram gives all ranks the same list), so that the
// communicators can be split in that order on every rank.
struct P2pEdge {
  int32_t from = -1;
  int32_t to = -1;
  friend bool operator==(const P2pEdge&, const P2pEdge&) = default;
};

struct DeviceProgram {
  int32_t rank = 0;
  std::vector<StreamId> streams;        // the plan's streams of the rank; -1 for a receive stream
  std::vector<DeviceTask> tasks;        // in enqueue order: each after every task it waits for,
                                        // each stream's tasks in the plan's stream order
  std::vector<DeviceReceive> receives;  // each receive stream's in the order its sender sends
  std::vector<P2pEdge> edges;           // every edge of the step, the same on every rank
  std::vector<int32_t> send_edges;      // the edges this rank sends on (index into |edges|)
  std::vector<int32_t> receive_edges;   // the edges this rank receives on
  // The memory that lives for the whole step on this rank (model states), and the largest
  // buffer a send, a receive or a collective reads or writes: carved out of it, since that is
  // where the activations, gradients and weights they move live.
  int64_t baseline_bytes = 0;
  int64_t largest_transfer_bytes = 0;
  // Every distinct op the rank's passes run, for OpRunner::Create.
  std::vector<Op> ops;
};

// The classes a cuda run reports its time in, beside the step's task categories: each op kind of
// the passes, the sends (between stages and around the context-parallel ring), each kind of
// data-parallel collective, the optimizer, the collectives of the passes on their tensor-,
// context- and expert-parallel groups (etp with tp); and the stand-ins of a lone GPU's
// communication (validate --one-gpu), which take their predicted time by construction.
inline constexpr std::array<std::string_view, 12> kDeviceClasses = {
    "gemm",           "attention",      "memory",         "send",
    "all_reduce",     "reduce_scatter", "all_gather",     "optimizer",
    "tp_collectives", "cp_collectives", "ep_collectives", "stand_in"};
// The index in kDeviceClasses of |op| (a GEMM, attention or memory-bound op), or -1.
int32_t OpClass(const Op& op);
// The index in kDeviceClasses of a task that is not kOps, or -1 (kNothing, kOps).
int32_t TaskClass(const DeviceTask& task);

// Builds GPU |rank|'s program of |plan|, a plan unfolded to its GPUs (UnfoldPlan). Unimplemented,
// naming the task and what is missing, for what the cuda backend does not run: a pass's
// collectives still folded (a plan that was not unfolded), offload copies, a dependency between
// ranks that does not leave a send, an allocation off its rank's compute stream (but for a ZeRO-3
// gather's buffer), a free when a task starts or an allocation when it ends.
// With |stand_ins| (the program of a lone GPU, OneGpuPlan), every communication task - sends,
// collectives, ZeRO-3 gathers, offload copies - is a kStandIn of its predicted time instead.
// REQUIRES: |exec| was planned from |plan.step.graph|.
Result<DeviceProgram> BuildDeviceProgram(const PlanFile& plan, const ExecPlan& exec, int32_t rank,
                                         bool stand_ins = false);

}  // namespace loom

#endif  // LOOM_EXEC_DEVICE_PROGRAM_H_
