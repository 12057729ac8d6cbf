#include "probe/bench.h"

namespace loom {

MemoryShape MemoryKernelTraffic(MemoryKernel kernel, int64_t bytes) {
  switch (kernel) {
    case MemoryKernel::kCopy:
    case MemoryKernel::kRmsNorm:
      return {bytes, bytes};
    case MemoryKernel::kSwiGlu:
      return {2 * bytes, bytes};  // gate and up in, one product out
  }
  return {bytes, bytes};
}

}  // namespace loom
