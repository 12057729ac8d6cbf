#include "device/cuda/cuda_check.h"

#include <string>
#include <utility>

namespace loom::cuda {
namespace {

// "<call> failed at <file>:<line>: <name>: <description>".
std::string Describe(const char* call, const char* file, int line, const char* name,
                     const char* description) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + name +
         ": " + description;
}

// NCCL has ncclGetErrorString but no function for the enumerator's name.
const char* NcclResultName(ncclResult_t code) {
  switch (code) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    case ncclNumResults:
      break;
  }
  return "ncclResult_t(unknown)";
}

// Every failed CUDA call also leaves its code as the runtime's last error, which the next
// cudaGetLastError() would report for an innocent kernel launch of a later point; a failure that
// is not sticky is therefore cleared here, once it has been turned into a Status. A sticky one
// (cudaErrorIllegalAddress) stays: every later call fails with it.
void ClearLastError() { cudaGetLastError(); }

// What to do when cuDNN cannot load a library: loom's GPU machines have cuDNN, cuBLAS and NVRTC
// only as Python wheels (site-packages/nvidia/{cudnn,cu13}/lib), which the dynamic loader finds
// only when they are on its path; the bundle's launcher script puts them there.
constexpr char kCudnnLibraryPathFix[] =
    "run loom through the bundle's launcher, or add site-packages/nvidia/cudnn/lib and "
    "site-packages/nvidia/cu13/lib to LD_LIBRARY_PATH";

// Why cuDNN failed, when |code| says it could not load (or mixed up) a shared library it opens at
// run time rather than at link time; null for every other code.
const char* CudnnLibraryProblem(cudnnStatus_t code) {
  switch (code) {
    case CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING:
      return "cuDNN could not load NVRTC (libnvrtc.so), which its runtime-compiled engines need";
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED:
    case CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE:
      return "cuDNN could not load one of its sub-libraries "
             "(libcudnn_engines_runtime_compiled.so.9, "
             "libcudnn_engines_precompiled.so.9, libcudnn_heuristic.so.9, ...)";
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH:
      return "cuDNN loaded sub-libraries of two different cuDNN versions (two installs on the "
             "library path)";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART:
      return "cuDNN found a CUDA runtime (libcudart) other than the one it was built for";
    default:
      return nullptr;
  }
}

}  // namespace

Status CheckCuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return Status::Ok();
  ClearLastError();
  std::string message =
      Describe(call, file, line, cudaGetErrorName(code), cudaGetErrorString(code));
  switch (code) {
    case cudaErrorMemoryAllocation:
      return Status::ResourceExhausted(std::move(message));
    case cudaErrorNotSupported:
    case cudaErrorNoKernelImageForDevice:  // loom's kernels were not built for this GPU's
                                           // architecture
      return Status::Unimplemented(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return Status::Unavailable(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

Status CheckCublas(cublasStatus_t code, const char* call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  ClearLastError();  // of the CUDA call inside cuBLASLt that failed, if any
  std::string message =
      Describe(call, file, line, cublasLtGetStatusName(code), cublasLtGetStatusString(code));
  switch (code) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return Status::ResourceExhausted(std::move(message));
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:  // the operation needs a newer GPU
      return Status::Unimplemented(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}

Status CheckCudnn(cudnnStatus_t code, const char* call, const char* file, int line) {
  if (code == CUDNN_STATUS_SUCCESS) return Status::Ok();
  ClearLastError();
  // cudnnGetErrorString gives the code's name; the last error string of this thread says why.
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string description = "cudnnStatus_t " + std::to_string(static_cast<int>(code));
  if (detail[0] != '\0') description += "; " + std::string(detail);
  return CudnnStatusToStatus(
      code, Describe(call, file, line, cudnnGetErrorString(code), description.c_str()));
}

Status CudnnStatusToStatus(cudnnStatus_t code, std::string message) {
  if (code == CUDNN_STATUS_SUCCESS) return Status::Ok();
  if (const char* why = CudnnLibraryProblem(code); why != nullptr) {
    return Status::Unavailable(std::move(message) + "; " + why + ": " + kCudnnLibraryPathFix);
  }
  if (code == CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER) {
    return Status::Unavailable(
        std::move(message) +
        "; this cuDNN needs a newer NVIDIA driver than the machine "
        "has: update the driver, or use a cuDNN built for the CUDA version nvidia-smi shows");
  }
  // cuDNN 9 codes are a category (thousands) plus a specific error; every NOT_SUPPORTED_* code,
  // such as CUDNN_STATUS_NOT_SUPPORTED_SHAPE, is in the category of CUDNN_STATUS_NOT_SUPPORTED.
  // CUDNN_STATUS_ALLOC_FAILED is deprecated in cuDNN 9 for the two *_ALLOCATION_FAILED codes.
  if (code == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      code == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return Status::ResourceExhausted(std::move(message));
  }
  if (CUDNN_STATUS_CATEGORY(code) == CUDNN_STATUS_NOT_SUPPORTED)
    return Status::Unimplemented(std::move(message));
  return Status::Internal(std::move(message));
}

// ncclInProgress is no failure: a call on a non-blocking communicator returns it while the work
// goes on, and the caller polls ncclCommGetAsyncError. NCCL does not tell out-of-memory apart (it
// is one of the causes of ncclSystemError and ncclUnhandledCudaError), so every failure is
// Internal.
Status CheckNccl(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess || code == ncclInProgress) return Status::Ok();
  return Status::Internal(
      Describe(call, file, line, NcclResultName(code), ncclGetErrorString(code)));
}

}  // namespace loom::cuda
