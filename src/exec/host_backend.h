#ifndef LOOM_EXEC_HOST_BACKEND_H_
#define LOOM_EXEC_HOST_BACKEND_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "device/launcher.h"
#include "exec/exec_plan.h"
#include "exec/executor.h"
#include "program/step_timeline.h"

namespace loom {

struct HostRunOptions {
  int32_t warmup_steps = 1;  // run first, not measured
  int32_t steps = 3;         // measured
  // Plan time runs this many times faster than real time (TimedBackend): a 2 s step at 100
  // takes 20 ms.
  double speedup = 1;
  // A step still running after this much plan time is abandoned on every rank.
  SimTime timeout = SimTime::FromSeconds(600);
};

// The host backend over MPI: every process of the job (|launcher|, from MakeMpiLauncher) runs its
// rank's program of |plan| with TimedBackend, each dependency between ranks is an MPI message
// from the rank that ends the task to the rank that waits for it, and each collective an
// MPI_Iallreduce on a communicator of its members that also checks that all of them are in the
// same collective. Every step starts after a barrier, at one instant on every rank (rank 0's clock,
// with each rank's offset from it measured once by round trips).
//
// Returns, on rank 0, the measured timeline of each measured step (other ranks: empty). If a rank
// fails (its transport, or a step past |options.timeout|), every rank returns an error, the
// failing one with its reason. A world of one rank (a SingleProcessLauncher) runs without MPI, in
// any build; larger worlds are Unimplemented when loom was built without MPI.
Result<std::vector<StepTimeline>> RunOnHost(const ExecPlan& plan, Launcher& launcher,
                                            const HostRunOptions& options);

// Gathers every rank's times on rank 0 over MPI (every rank calls it): on rank 0 the times of each
// rank, in rank order; on the others an empty vector. A world of one rank gets its own times
// without calling MPI; without MPI larger worlds are Unimplemented.
Result<std::vector<RankTimes>> GatherRankTimes(const RankTimes& mine, int rank, int world);

}  // namespace loom

#endif  // LOOM_EXEC_HOST_BACKEND_H_
