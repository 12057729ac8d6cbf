#include "probe/collective_timing.h"

#include <functional>
#include <thread>

namespace loom {

namespace {

// What a step returns once the watchdog has aborted the queue: RunOrAbort reports the deadline
// instead.
Status Stopped() {
  return Status::DeadlineExceeded("stopped: the watchdog aborted the communicator");
}

// Queues |count| operations, none once the watchdog has fired (the communicator is gone).
Status EnqueueOperations(CollectiveQueue& queue, Watchdog& watchdog, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (watchdog.Fired()) return Stopped();
    LOOM_RETURN_IF_ERROR(queue.Enqueue());
  }
  return Status::Ok();
}

// Spins until marker |k| is reached, as nccl-tests' testStreamSynchronize waits for a stream
// (NVIDIA/nccl-tests a0b82b2260cf5152b9f8c061bbf7eaf0ba096432, src/common.cu): cudaStreamQuery
// and ncclCommGetAsyncError in a loop that yields the CPU to other threads (NCCL's proxy among
// them) but never sleeps. Each query runs under the watchdog's lock, so none runs once it fired.
Status WaitFor(CollectiveQueue& queue, Watchdog& watchdog, int64_t k) {
  while (true) {
    Result<bool> reached = false;
    if (!watchdog.RunUnlessFired([&] { reached = queue.Reached(k); })) return Stopped();
    if (!reached.ok()) return reached.status();
    if (*reached) return Status::Ok();
    std::this_thread::yield();
  }
}

// Waits for the last batch, then reads every batch's time.
Status Collect(CollectiveQueue& queue, Watchdog& watchdog, const TimingPlan& timing,
               std::vector<double>& times_us) {
  LOOM_RETURN_IF_ERROR(WaitFor(queue, watchdog, timing.repeats));
  for (int64_t k = 0; k < timing.repeats; ++k) {
    LOOM_ASSIGN_OR_RETURN(double batch_us, queue.MicrosecondsBetween(k, k + 1));
    times_us.push_back(batch_us / static_cast<double>(timing.operations_per_batch));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> TimeCollective(CollectiveQueue& queue, Watchdog& watchdog,
                                           const TimingPlan& timing) {
  auto guarded = [&](const std::function<Status()>& step) {
    return RunOrAbort(watchdog, timing.timeout_s, timing.what, step, [&] { return queue.Abort(); });
  };
  if (timing.warmup > 0) {
    LOOM_RETURN_IF_ERROR(guarded([&] {
      LOOM_RETURN_IF_ERROR(EnqueueOperations(queue, watchdog, 1));
      LOOM_RETURN_IF_ERROR(queue.Mark(0));
      return WaitFor(queue, watchdog, 0);
    }));
  }
  for (int64_t k = 0; k < timing.repeats; ++k) {
    LOOM_RETURN_IF_ERROR(guarded([&] {
      if (k == 0) {
        LOOM_RETURN_IF_ERROR(EnqueueOperations(queue, watchdog, timing.warmup - 1));
        LOOM_RETURN_IF_ERROR(queue.Mark(0));
      }
      LOOM_RETURN_IF_ERROR(EnqueueOperations(queue, watchdog, timing.operations_per_batch));
      LOOM_RETURN_IF_ERROR(queue.Mark(k + 1));
      // Batch k is queued behind batch k-1: waiting for k-1 leaves the GPU busy with k meanwhile.
      return k >= 1 ? WaitFor(queue, watchdog, k) : Status::Ok();
    }));
  }
  std::vector<double> times_us;
  LOOM_RETURN_IF_ERROR(guarded([&] { return Collect(queue, watchdog, timing, times_us); }));
  return times_us;
}

}  // namespace loom
