#ifndef LOOM_PROBE_CUDA_NCCL_QUEUE_H_
#define LOOM_PROBE_CUDA_NCCL_QUEUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "core/status.h"
#include "cost/profile.h"
#include "device/cuda/cuda_check.h"
#include "probe/collective_timing.h"

namespace loom::cuda {

// One NCCL operation of the probe's collective bench as NCCL and CUDA run it: the operation's
// enqueue as nccl-tests issues it, the CUDA events that mark its batches, and the CollectiveQueue
// (probe/collective_timing.h) that TimeCollective drives over a blocking communicator.

// NCCL's return code of one call and the call's text and line, for messages.
struct NcclCall {
  ncclResult_t code = ncclSuccess;
  const char* text = "";
  int line = 0;
};
#define LOOM_NCCL_CALL(call) \
  NcclCall { (call), #call, __LINE__ }

// A non-blocking communicator returns ncclInProgress from calls whose work goes on in the
// background.
inline bool Failed(const NcclCall& call) {
  return call.code != ncclSuccess && call.code != ncclInProgress;
}

// "NCCL reported an asynchronous error: <error>: <ncclGetLastError>" of |comm|.
Status AsyncError(ncclComm_t comm, ncclResult_t code);

// One NCCL operation of a point: its buffers as this rank passes them.
struct Operation {
  ProfiledCollective collective = ProfiledCollective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  int64_t count = 0;  // CollectiveBuffers::count
  int key = 0;        // this rank in its group
  int ranks = 1;
};

// Enqueues |op| on |stream| as nccl-tests' test of its collective does.
NcclCall EnqueueOperation(const Operation& op, ncclComm_t comm, cudaStream_t stream);

// The CUDA events that mark the timed batches of one point (CollectiveQueue's markers).
class EventChain {
 public:
  EventChain() = default;
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  ~EventChain() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
  }

  Status Create(int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      cudaEvent_t event = nullptr;
      LOOM_CUDA(cudaEventCreate(&event));
      events_.push_back(event);
    }
    return Status::Ok();
  }
  cudaEvent_t operator[](int64_t i) const { return events_[static_cast<size_t>(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// What cudaEventQuery or cudaStreamQuery answered: done, not yet, or an error of the work queued.
Result<bool> Finished(cudaError_t query);

// One operation of a blocking communicator on the bench's stream, as TimeCollective drives it;
// marker k is CUDA event k of |events|. Reached is cudaEventQuery, then ncclCommGetAsyncError while
// the event is pending, as nccl-tests' testStreamSynchronize queries a stream (NVIDIA/nccl-tests
// a0b82b2260cf5152b9f8c061bbf7eaf0ba096432, src/common.cu).
class NcclQueue : public CollectiveQueue {
 public:
  // |events| must outlive the queue.
  NcclQueue(ncclComm_t comm, cudaStream_t stream, const Operation& op, const EventChain& events)
      : comm_(comm), stream_(stream), op_(op), events_(events) {}

  // Internal when NCCL answers ncclInProgress: NCCL_COMM_BLOCKING=0 made the communicator
  // non-blocking, and the message says to unset it.
  Status Enqueue() override;
  Status Mark(int64_t k) override;
  Result<bool> Reached(int64_t k) override;
  Result<double> MicrosecondsBetween(int64_t from, int64_t to) override;
  Status Abort() override;

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  Operation op_;
  const EventChain& events_;
};

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_NCCL_QUEUE_H_
