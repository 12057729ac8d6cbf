#ifndef LOOM_PROBE_COLLECTIVE_TIMING_H_
#define LOOM_PROBE_COLLECTIVE_TIMING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/watchdog.h"

namespace loom {

// How the NCCL bench times one collective, apart from NCCL and CUDA, so that the loop (its order
// of operations, markers and waits, and what happens on a hang) is tested on a CPU.

// One operation of one communicator, queued on its stream: the NCCL bench implements it with a
// blocking communicator and CUDA events; tests implement it with fakes.
class CollectiveQueue {
 public:
  virtual ~CollectiveQueue() = default;

  // Queues one more operation. Returns once it is queued, not done; may block meanwhile (NCCL
  // connects to a peer on a communicator's first operation with it).
  virtual Status Enqueue() = 0;
  // Places marker |k| after everything queued so far; placing it again moves it.
  virtual Status Mark(int64_t k) = 0;
  // Whether everything before marker |k| has finished. An error when that work failed or the
  // communicator reports an asynchronous error (a peer is gone). Never blocks.
  virtual Result<bool> Reached(int64_t k) = 0;
  // The time between markers |from| and |to|, in microseconds. REQUIRES: both reached.
  virtual Result<double> MicrosecondsBetween(int64_t from, int64_t to) = 0;
  // Aborts the communicator: its queued operations end, and it is gone. Runs on the watchdog's
  // thread when a deadline passes, never while Reached runs; nothing is called after it.
  virtual Status Abort() = 0;
};

// What TimeCollective runs.
struct TimingPlan {
  int64_t warmup = 0;                // untimed operations first
  int64_t repeats = 1;               // timed batches, one time each
  int64_t operations_per_batch = 1;  // back-to-back operations in one batch
  double timeout_s = 0;              // for each batch, and for the first warm-up operation alone
  std::string what;  // "all_reduce of 1024 B over group world (8 ranks)", for messages
};

// Times |queue|'s operation as nccl-tests does (src/common.cu, BenchTime): |timing|.warmup untimed
// operations, then |timing|.repeats batches of operations_per_batch back-to-back operations, batch
// k between markers k and k+1. Returns one time per batch: the batch's time divided by its
// operations, in microseconds.
//
// The first warm-up operation runs alone and is waited for (it sets up connections, which can take
// seconds); the other warm-up operations run straight before the first batch, so that every rank
// enters it together, out of a collective. Operations are queued with no pause; the host spins on
// Reached (no sleep, which would leave the GPU idle behind a short batch) and keeps at most two
// batches queued, so that the GPU never waits for the host and a hung batch is seen in time.
//
// Each step (the first warm-up operation; queuing batch k and waiting for batch k-1; waiting for
// the last batch) runs under |watchdog| with |timing|.timeout_s. On any error |queue| has been
// aborted exactly once: by the watchdog on a missed deadline (DeadlineMissed naming
// |timing|.what), else after the failed call (its error with |timing|.what in front).
// REQUIRES: repeats >= 1, warmup >= 0, operations_per_batch >= 1; |watchdog| is not armed.
Result<std::vector<double>> TimeCollective(CollectiveQueue& queue, Watchdog& watchdog,
                                           const TimingPlan& timing);

}  // namespace loom

#endif  // LOOM_PROBE_COLLECTIVE_TIMING_H_
