#ifndef LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_
#define LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_

#include <memory>

#include "core/status.h"
#include "probe/bench.h"

namespace loom::cuda {

// The KernelBench of CUDA device |device|: cuBLASLt GEMMs, cuDNN attention (SdpaBench), loom's
// memory-bound kernels, an empty kernel and pinned copies, each timed with CUDA events on one
// stream of the device.
Result<std::unique_ptr<KernelBench>> MakeCudaKernelBench(int device);

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_CUDA_KERNEL_BENCH_H_
