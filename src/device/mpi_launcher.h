#ifndef LOOM_DEVICE_MPI_LAUNCHER_H_
#define LOOM_DEVICE_MPI_LAUNCHER_H_

#include <memory>

#include "core/status.h"
#include "device/launcher.h"

namespace loom {

// True when this process was started by mpirun/mpiexec or srun (Open MPI's, MPICH's or Slurm's
// environment variables say so).
bool StartedByMpiLauncher();

// This process's rank as its MPI launcher set it in the environment, readable before MPI_Init
// (and in a loom built without MPI): OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID,
// the first that holds a whole number >= 0; 0 when none does (no launcher started it).
int LauncherRank();

// The Launcher of an MPI job: MPI_Init on construction (MPI_Init_thread is not needed: one
// thread calls MPI), MPI_COMM_WORLD's rank and size, every rank's host name gathered, MPI_Finalize
// on destruction. Unimplemented when loom was built without MPI (the message says how to build
// it). Every MPI return code is checked, with file:line and MPI_Error_string.
Result<std::unique_ptr<Launcher>> MakeMpiLauncher();

// The launcher of this process: MakeMpiLauncher's when an MPI launcher started it
// (StartedByMpiLauncher), else a SingleProcessLauncher named by this host, which needs no MPI
// runtime: `loom probe` and a one-rank `loom validate` run without mpirun.
Result<std::unique_ptr<Launcher>> MakeProcessLauncher();

}  // namespace loom

#endif  // LOOM_DEVICE_MPI_LAUNCHER_H_
