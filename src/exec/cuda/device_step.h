#ifndef LOOM_EXEC_CUDA_DEVICE_STEP_H_
#define LOOM_EXEC_CUDA_DEVICE_STEP_H_

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/status.h"
#include "device/cuda/device_buffer.h"
#include "device/cuda/nccl_buffers.h"
#include "device/cuda/nccl_comms.h"
#include "exec/cuda/op_runner.h"
#include "exec/cuda/step_pool.h"
#include "exec/device_program.h"
#include "exec/exec_plan.h"
#include "exec/executor.h"

namespace loom::cuda {

// One rank's step on its GPU (exec/cuda/cuda_backend.h), and everything it needs there: a CUDA
// stream per DeviceProgram stream, a start and an end event per task, an event per receive, the
// pool of the tasks' memory, the state buffer and the op runner.
//
// The state buffer holds the model states (DeviceProgram::baseline_bytes), filled once with random
// bf16 values, and is where the step moves its bytes: sends read its first region, receives write
// its second and collectives run in place in its third (nccl-tests' in-place offsets), each region
// as large as the largest transfer, so that a send never reads what a receive writes. When the
// baseline is smaller than the three regions the buffer is grown to hold them: memory the plan
// does not count, which the reported peak leaves out. The optimizer reads its first half and
// writes its second. One fp32 word after it is the epoch's all-reduce.
class DeviceStep {
 public:
  // |plan| and |program| must outlive the step.
  DeviceStep(const ExecPlan& plan, const DeviceProgram& program)
      : plan_(plan), program_(program), pool_(plan.graph()) {}

  // Checks the program (Internal for indices that break BuildDeviceProgram's contract,
  // Unimplemented for an all-to-all), then makes the streams, events, pool, state buffer and op
  // runner on |device|, the current device, and runs every kernel a step launches outside NCCL
  // once, so that each is loaded before Connect's first NCCL operation (OpRunner::WarmUp says
  // why). Involves no other rank.
  Status SetUp(int device);
  // Runs each communicator's first operations on the compute stream and waits up to |timeout_s|
  // for them: the world's all-reduce, each distinct collective (kind and size) of the plan's
  // communicators in the plan's order, a few bytes on each edge in the edges' order. Every rank
  // does it in that one order, so none waits for a peer that waits for another, and NCCL connects
  // the ranks here: in a step, no NCCL call blocks the host waiting for a peer.
  Status Connect(const NcclComms& comms, double timeout_s);
  // Enqueues one step, waits up to |timeout_s| (from the end of the enqueue) for the GPU to
  // finish it, and returns each task's start and end from the step's epoch: the instant this
  // GPU left a one-element all-reduce over the world, run first on the compute stream, which
  // every other stream waits for. DeadlineExceeded names the first tasks not finished; Internal
  // when the step's allocations and frees do not balance (after it ran) or NCCL reports an error.
  Result<RankTimes> Run(const NcclComms& comms, double timeout_s);

  // Per class of kDeviceClasses, summed over this rank: how many ops or tasks, their predicted
  // and their measured seconds.
  struct ClassTimes {
    std::array<double, kDeviceClasses.size()> count{}, predicted_s{}, measured_s{};
  };
  // Runs one more step, as Run, with an event recorded after every op of every pass, and sums the
  // time of each op (from the event before it) by its class (OpClass), and of each send,
  // collective and optimizer task by its (TaskClass). A step of its own, so that the events
  // between ops do not touch the measured steps.
  Result<ClassTimes> Profile(const NcclComms& comms, double timeout_s);
  StepPool& pool() { return pool_; }
  // OpRunner::device_bytes().
  int64_t runner_bytes() const { return runner_->device_bytes(); }

 private:
  struct StreamDestroyer {
    void operator()(std::remove_pointer_t<cudaStream_t>* stream) const {
      cudaStreamDestroy(stream);
    }
  };
  using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroyer>;
  struct EventDestroyer {
    void operator()(std::remove_pointer_t<cudaEvent_t>* event) const { cudaEventDestroy(event); }
  };
  using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroyer>;
  // One call of a collective task: its kind, nccl-tests' buffers of its size (count 0 when there
  // is nothing to move: a communicator of one rank, or under one fp32 element per rank), and this
  // rank's place in its communicator and the communicator's size.
  struct CollectiveCall {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    CollectiveBuffers buffers;
    int64_t key = 0;
    int32_t ranks = 1;
  };

  Status CheckProgram() const;
  Status CheckTask(size_t index) const;
  // The edge of each send and receive, found by its two ranks: the edges are one per direction,
  // so this needs neither DeviceTask::edge nor DeviceReceive::edge. Internal when one has none.
  Status FindEdges();
  Status MakeStreamsAndEvents();
  // Sizes each collective's buffers, the regions and the state buffer; allocates and fills it.
  Status AllocateState();
  // Runs the op runner's warm-up and the optimizer's StreamBytes on the compute stream, and waits.
  Status WarmUp();
  Status Enqueue(const NcclComms& comms);
  Status EnqueueTask(size_t index, const NcclComms& comms);
  Status EnqueueWork(size_t index, const NcclComms& comms, cudaStream_t stream);
  // Every call of collective task |index|, in order; an all-to-all as grouped sends and receives
  // (NCCL has no all-to-all call; nccl-tests' alltoall_perf does the same).
  Status EnqueueCollective(size_t index, ncclComm_t comm, cudaStream_t stream);
  Status EnqueueCall(const CollectiveCall& call, ncclComm_t comm, cudaStream_t stream);
  Status EnqueueTraffic(const MemoryShape& traffic, cudaStream_t stream);
  Status Wait(const NcclComms& comms, double timeout_s);
  // |deadline| with the first tasks whose end event has not completed.
  Status NotFinished(const Status& deadline) const;
  Result<RankTimes> Times() const;
  cudaStream_t StreamOf(int32_t index) const { return streams_[static_cast<size_t>(index)].get(); }
  char* Region(int64_t index) const {
    return static_cast<char*>(state_.get()) + index * region_bytes_;
  }

  // Destroyed in reverse: events and streams first, then the runner and the state buffer (cudaFree
  // waits for the GPU), the pool last.
  const ExecPlan& plan_;
  const DeviceProgram& program_;
  StepPool pool_;
  DeviceBuffer state_;
  int64_t region_bytes_ = 0;
  int64_t half_bytes_ = 0;
  float* epoch_word_ = nullptr;
  std::unique_ptr<OpRunner> runner_;
  std::vector<std::vector<CollectiveCall>> collectives_;  // by task index
  std::vector<int32_t> task_edges_;          // by task index: a send's index into program.edges
  std::vector<int32_t> receive_edges_;       // by receive index: its index into program.edges
  std::vector<Stream> streams_;
  int32_t compute_ = 0;  // the stream of the plan's "compute" stream; the first if there is none
  Event epoch_;
  std::vector<Event> starts_, ends_, received_;
  // Profile's: an event after each op of each task, and whether the step records them.
  std::vector<std::vector<Event>> op_ends_;
  bool profiling_ = false;
};

}  // namespace loom::cuda

#endif  // LOOM_EXEC_CUDA_DEVICE_STEP_H_
