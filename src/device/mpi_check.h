#ifndef LOOM_DEVICE_MPI_CHECK_H_
#define LOOM_DEVICE_MPI_CHECK_H_

#include "core/status.h"

namespace loom {

// OK for MPI_SUCCESS; otherwise Internal("<call> failed at <file>:<line>: <MPI_Error_string>").
// Defined only in builds with MPI (mpi_launcher.cc); include it only from files that call MPI.
Status MpiStatus(int code, const char* call, const char* file, int line);

}  // namespace loom

// Returns from the enclosing function with the error of an MPI call that failed.
#define LOOM_MPI(call) LOOM_RETURN_IF_ERROR(::loom::MpiStatus((call), #call, __FILE__, __LINE__))

#endif  // LOOM_DEVICE_MPI_CHECK_H_
