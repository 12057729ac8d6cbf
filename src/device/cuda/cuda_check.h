#ifndef LOOM_DEVICE_CUDA_CUDA_CHECK_H_
#define LOOM_DEVICE_CUDA_CUDA_CHECK_H_

#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "core/status.h"

namespace loom::cuda {

// Every CUDA, cuBLASLt, cuDNN and NCCL return code goes through one of these: OK, or a Status that
// names the call, file:line and the library's own error string. Out-of-memory codes become
// ResourceExhausted and not-supported codes Unimplemented, so the probe records them as the
// point's failure and goes on; a GPU, driver or run-time library that is not there is
// Unavailable (CudnnStatusToStatus says which cuDNN codes); the rest are Internal.
Status CheckCuda(cudaError_t code, const char* call, const char* file, int line);
Status CheckCublas(cublasStatus_t code, const char* call, const char* file, int line);
Status CheckCudnn(cudnnStatus_t code, const char* call, const char* file, int line);
Status CheckNccl(ncclResult_t code, const char* call, const char* file, int line);

// The Status of cuDNN's |code|, |message| (what failed and cuDNN's words) kept as it is:
//   - Unavailable, with a hint that names the library path, when cuDNN could not load a library it
//     needs: CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING (NVRTC, for its
//     runtime-compiled engines), CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED and
//     _NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE (a libcudnn_*.so.9 sub-library),
//     CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (sub-libraries of two cuDNN installs); and, with a
//     driver hint, _NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER and _CUDART.
//   - ResourceExhausted for the two *_ALLOCATION_FAILED codes.
//   - Unimplemented for the rest of the CUDNN_STATUS_NOT_SUPPORTED category (a shape, layout or
//     data type cuDNN has no engine for).
//   - Internal otherwise; OK for CUDNN_STATUS_SUCCESS.
// CheckCudnn builds |message| and calls this; it touches no GPU, so it is tested on a CPU.
Status CudnnStatusToStatus(cudnnStatus_t code, std::string message);

}  // namespace loom::cuda

// Evaluates |call|; returns its Status from the enclosing function when it failed.
#define LOOM_CUDA(call) \
  LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCuda((call), #call, __FILE__, __LINE__))
#define LOOM_CUBLAS(call) \
  LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCublas((call), #call, __FILE__, __LINE__))
#define LOOM_CUDNN(call) \
  LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCudnn((call), #call, __FILE__, __LINE__))
#define LOOM_NCCL(call) \
  LOOM_RETURN_IF_ERROR(::loom::cuda::CheckNccl((call), #call, __FILE__, __LINE__))

#endif  // LOOM_DEVICE_CUDA_CUDA_CHECK_H_
