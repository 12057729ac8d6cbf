#ifndef LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_
#define LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "probe/bench.h"

namespace loom::cuda {

// Unavailable, saying so plainly, when no CUDA GPU is visible ("no CUDA GPU is visible
// (cudaGetDeviceCount: <CUDA's message>); loom probe measures GPUs and must run on a machine with
// an NVIDIA GPU and its driver"), else OK with the number of devices in |count|.
Status CountDevices(int* count);

// The KernelBench of CUDA device |device|: cuBLASLt GEMMs, cuDNN attention (SdpaBench), loom's
// memory-bound kernels, an empty kernel and pinned copies, each timed with CUDA events on one
// stream of the device.
Result<std::unique_ptr<KernelBench>> MakeCudaKernelBench(int device);

// The kernel module's version in the text of /proc/driver/nvidia/version: the first token of its
// "NVRM version:" line that is numbers joined by dots ("580.159.04", "580.142"), for the
// proprietary and the open kernel modules alike; "" when there is none.
std::string DriverVersionFromProc(const std::string& text);

// A CUDA version number as cudaRuntimeGetVersion and cudaDriverGetVersion give it, 1000 * major +
// 10 * minor, as "13.0".
std::string CudaVersionString(int version);

// cublasLtGetVersion's number, 10000 * major + 100 * minor + patch (CUBLAS_VERSION in
// cublas_api.h), as "13.1.0".
std::string CublasLtVersionString(size_t version);

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_
