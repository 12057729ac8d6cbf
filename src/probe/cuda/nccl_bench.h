#ifndef LOOM_PROBE_CUDA_NCCL_BENCH_H_
#define LOOM_PROBE_CUDA_NCCL_BENCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "probe/bench.h"
#include "probe/cuda/nccl_buffers.h"

namespace loom::cuda {

// The CollectiveBench of this rank on CUDA device |device|: a world communicator bootstrapped by
// broadcasting ncclGetUniqueId from rank 0 over |launcher| (as nccl-tests does), and one
// communicator per group of |groups| split from it (ncclCommSplit with the colors of
// MembershipOf). Communicators are non-blocking (ncclConfig_t::blocking = 0) so that a hung
// operation can be waited on with a deadline and aborted. Every rank calls this collectively.
// |launcher| must outlive the bench.
// Time runs out of place, then in place: settings.warmup untimed operations, then settings.repeats
// batches of OperationsPerBatch back-to-back operations; |timeout_s| applies to each batch (and to
// the first warm-up operation alone). A point that fails on some ranks before they queue anything
// (out of memory on one GPU only) leaves the others waiting until they miss the deadline and abort
// the group. When the kernels of an aborted communicator do not leave the GPU, the GPU is wedged
// and every later point, of any group, is Unavailable.
Result<std::unique_ptr<CollectiveBench>> MakeNcclCollectiveBench(Launcher& launcher, int device,
                                                                 const std::vector<ProbeGroup>& groups);

// ncclGetVersion as "2.28.9"; "unknown (...)" with NCCL's error when it fails.
std::string NcclVersionString();

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_NCCL_BENCH_H_
