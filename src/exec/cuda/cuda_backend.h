#ifndef LOOM_EXEC_CUDA_CUDA_BACKEND_H_
#define LOOM_EXEC_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "device/launcher.h"
#include "exec/device_program.h"
#include "exec/exec_plan.h"
#include "program/comparison.h"
#include "program/step_timeline.h"

namespace loom {

struct CudaRunOptions {
  int32_t warmup_steps = 1;  // run first, not measured
  int32_t steps = 3;         // measured
  // A step whose GPU work has not finished this long after the host enqueued it is aborted on
  // every rank (ncclCommAbort), naming the tasks that had not finished.
  SimTime timeout = SimTime::FromSeconds(600);
};

struct CudaRunResult {
  // On rank 0: the measured timeline of each measured step (MeasuredTimeline of every rank's
  // times); other ranks: empty.
  std::vector<StepTimeline> steps;
  // On rank 0: the largest over ranks of the high-water mark of the stream-ordered pool that the
  // tasks' allocations come from, over the measured steps.
  int64_t peak_pool_bytes = 0;
  // On rank 0: each rank's DeviceProgram::baseline_bytes plus its pool's high-water mark.
  std::vector<int64_t> peak_bytes_per_rank;
  // This rank's OpRunner::device_bytes() (operand arena and workspace): reported, not part of the
  // peak, since the plan counts activations through the pool instead.
  int64_t runner_bytes = 0;
  // On rank 0: time by class of kDeviceClasses (GEMM, attention, memory-bound ops, sends, each
  // collective kind, the optimizer) summed over ranks, from one more step that times every op
  // (DeviceStep::Profile); classes with nothing in them are left out.
  std::vector<ClassComparison> work_classes;
  // "NVIDIA H100 80GB HBM3 (cc 9.0), driver 580.95.05, CUDA 13.0, NCCL 2.28.9".
  std::string device;
};

// The cuda backend of `loom validate`: every process of the job (|launcher|, from
// MakeMpiLauncher, one per plan rank) runs |program|, its rank's program from BuildDeviceProgram,
// on its GPU: the GPU of its local index (its position among the ranks of its host).
//
// Each task's work runs as real kernels on one CUDA stream per DeviceProgram stream: the ops of a
// pass through cuda::OpRunner, sends and receives as ncclSend/ncclRecv on the communicator of
// their edge, collectives on one NCCL communicator per plan communicator, the optimizer as HBM
// traffic (StreamBytes); the tasks' memory comes from a stream-ordered pool
// (cudaMallocFromPoolAsync before a task starts, cudaFreeAsync after it ends). The host enqueues a
// whole step at once; a task's start and end are CUDA events, timed from an epoch event that every
// GPU records as it leaves an all-reduce over the world, so that the ranks share one clock within
// microseconds.
//
// Runs |options.warmup_steps| unmeasured steps, then |options.steps| measured ones, each after a
// barrier. Errors: Unavailable when there is no GPU, or fewer than the host's ranks; Internal for
// an inconsistent program or a CUDA or NCCL failure; ResourceExhausted when memory runs out;
// DeadlineExceeded, naming the first tasks not finished, for a step past |options.timeout|. When
// one rank fails, every rank returns an error (the others once their own step ends or times out).
Result<CudaRunResult> RunOnCuda(const ExecPlan& plan, const DeviceProgram& program,
                                Launcher& launcher, const CudaRunOptions& options);

}  // namespace loom

#endif  // LOOM_EXEC_CUDA_CUDA_BACKEND_H_
