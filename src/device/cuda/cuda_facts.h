#ifndef LOOM_DEVICE_CUDA_CUDA_FACTS_H_
#define LOOM_DEVICE_CUDA_CUDA_FACTS_H_

#include <cstddef>
#include <string>

#include "core/status.h"

namespace loom::cuda {

// What GPUs this machine has and which versions of the driver and libraries loom runs on, for
// `loom probe`'s device facts and `loom validate`'s device line. The parsing and formatting need
// no GPU: tested on a CPU.

// Unavailable, saying so plainly, when no CUDA GPU is visible ("no CUDA GPU is visible
// (cudaGetDeviceCount: <CUDA's message>); loom probe measures GPUs and must run on a machine with
// an NVIDIA GPU and its driver"), else OK with the number of devices in |count|.
Status CountDevices(int* count);

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

// nccl.h's NCCL_VERSION code as "major.minor.patch": 22809 -> "2.28.9", 2708 -> "2.7.8" (before
// 2.9 the code had one digit less for the minor version).
std::string DecodeNcclVersion(int version_code);

// ncclGetVersion as "2.28.9"; "unknown (...)" with NCCL's error when it fails.
std::string NcclVersionString();

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_CUDA_FACTS_H_
