#ifndef LOOM_DEVICE_CUDA_DEVICE_BUFFER_H_
#define LOOM_DEVICE_CUDA_DEVICE_BUFFER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime.h>

#include "core/status.h"

namespace loom::cuda {

// Device memory of the current device, given back by cudaFree when it goes out of scope (the
// code cudaFree returns is not checked there: a destructor cannot return it). release() forgets
// the memory without freeing it, for buffers a hung kernel may still use: cudaFree would wait
// for it.
struct CudaFreeDeleter {
  void operator()(void* pointer) const { cudaFree(pointer); }
};
using DeviceBuffer = std::unique_ptr<void, CudaFreeDeleter>;

// |bytes| of device memory (at least 256-byte aligned, as cudaMalloc's are), none when |bytes| is
// 0 or less; ResourceExhausted when they do not fit (CheckCuda clears CUDA's last error, so the
// next launch does not report it as its own).
Result<DeviceBuffer> AllocateDevice(int64_t bytes);

// |copies| buffers of |bytes_per_copy| each, to rotate inputs over (RotationCount), or as many as
// fit when the device memory runs out after the first: a point is measured with fewer copies
// rather than not at all. ResourceExhausted when not even one fits.
Result<std::vector<DeviceBuffer>> AllocateCopies(int64_t bytes_per_copy, int64_t copies);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_DEVICE_BUFFER_H_
