#include "device/cuda/device_buffer.h"

#include "device/cuda/cuda_check.h"

namespace loom::cuda {

Result<DeviceBuffer> AllocateDevice(int64_t bytes) {
  if (bytes <= 0) return DeviceBuffer();
  void* pointer = nullptr;
  LOOM_CUDA(cudaMalloc(&pointer, static_cast<size_t>(bytes)));
  return DeviceBuffer(pointer);
}

Result<std::vector<DeviceBuffer>> AllocateCopies(int64_t bytes_per_copy, int64_t copies) {
  std::vector<DeviceBuffer> buffers;
  for (int64_t i = 0; i < copies; ++i) {
    void* pointer = nullptr;
    const cudaError_t code = cudaMalloc(&pointer, static_cast<size_t>(bytes_per_copy));
    if (code == cudaErrorMemoryAllocation && !buffers.empty()) {
      cudaGetLastError();  // out of memory is not sticky: clear it and measure with what fits
      break;
    }
    LOOM_RETURN_IF_ERROR(
        CheckCuda(code, "cudaMalloc(&pointer, bytes_per_copy)", __FILE__, __LINE__));
    buffers.emplace_back(pointer);
  }
  return buffers;
}

}  // namespace loom::cuda
