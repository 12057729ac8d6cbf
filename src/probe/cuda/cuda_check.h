#ifndef LOOM_PROBE_CUDA_CUDA_CHECK_H_
#define LOOM_PROBE_CUDA_CUDA_CHECK_H_

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
// point's failure and goes on; the rest are Internal.
Status CheckCuda(cudaError_t code, const char* call, const char* file, int line);
Status CheckCublas(cublasStatus_t code, const char* call, const char* file, int line);
Status CheckCudnn(cudnnStatus_t code, const char* call, const char* file, int line);
Status CheckNccl(ncclResult_t code, const char* call, const char* file, int line);

}  // namespace loom::cuda

// Evaluates |call|; returns its Status from the enclosing function when it failed.
#define LOOM_CUDA(call) LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCuda((call), #call, __FILE__, __LINE__))
#define LOOM_CUBLAS(call) LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCublas((call), #call, __FILE__, __LINE__))
#define LOOM_CUDNN(call) LOOM_RETURN_IF_ERROR(::loom::cuda::CheckCudnn((call), #call, __FILE__, __LINE__))
#define LOOM_NCCL(call) LOOM_RETURN_IF_ERROR(::loom::cuda::CheckNccl((call), #call, __FILE__, __LINE__))

#endif  // LOOM_PROBE_CUDA_CUDA_CHECK_H_
