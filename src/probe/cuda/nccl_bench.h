#ifndef LOOM_PROBE_CUDA_NCCL_BENCH_H_
#define LOOM_PROBE_CUDA_NCCL_BENCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "device/cuda/nccl_buffers.h"
#include "device/launcher.h"
#include "probe/bench.h"

namespace loom::cuda {

// The CollectiveBench of this rank on CUDA device |device|: a world communicator bootstrapped by
// broadcasting ncclGetUniqueId from rank 0 over |launcher| (as nccl-tests does), and one
// communicator per group of |groups| split from it (ncclCommSplit with the colors of
// MembershipOf). The world communicator is non-blocking, so that its init and the splits are
// waited for with a deadline and aborted, and is closed once the splits are made; the group
// communicators, the world's too when it is among |groups|, are blocking, as nccl-tests' are, so
// that operations are queued back to back with no polling between them. Every rank calls this
// collectively. |launcher| must outlive the bench.
// Time runs out of place, then in place, as TimeCollective (probe/collective_timing.h) says:
// settings.warmup untimed operations, then settings.repeats batches of OperationsPerBatch
// back-to-back operations, the host spinning on CUDA events; |timeout_s| applies to each batch
// (and to the first warm-up operation alone) and is kept by a watchdog thread that calls
// ncclCommAbort. A point that fails on some ranks before they queue anything (out of memory on one
// GPU only) leaves the others waiting until they miss the deadline and abort the group. When the
// kernels of an aborted communicator do not leave the GPU, the GPU is wedged and every later
// point, of any group, is Unavailable.
Result<std::unique_ptr<CollectiveBench>> MakeNcclCollectiveBench(
    Launcher& launcher, int device, const std::vector<ProbeGroup>& groups);

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_NCCL_BENCH_H_
