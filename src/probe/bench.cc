#include "probe/bench.h"

#include <algorithm>

namespace loom {

int64_t RotationCount(int64_t bytes_per_copy, int64_t l2_bytes, bool rotate) {
  constexpr int64_t kMaxCopies = 64;
  if (!rotate || bytes_per_copy <= 0) return 1;
  // The smallest count whose copies together exceed kColdL2Multiple * L2: by the time a copy is
  // used again, the runs in between have streamed that much through the L2.
  const int64_t copies = kColdL2Multiple * std::max<int64_t>(l2_bytes, 0) / bytes_per_copy + 1;
  return std::clamp<int64_t>(copies, 1, kMaxCopies);
}

int64_t OperationsPerBatch(int64_t size_bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (size_bytes <= kMiB) return 20;
  if (size_bytes <= 256 * kMiB) return 5;
  return 1;
}

MemoryShape MemoryKernelTraffic(MemoryKernel kernel, int64_t bytes) {
  switch (kernel) {
    case MemoryKernel::kCopy:
      return {bytes, bytes};
    case MemoryKernel::kRmsNorm:
      return {bytes, bytes, MemoryAccess::kRowReduction};
    case MemoryKernel::kSwiGlu:
      return {2 * bytes, bytes};  // gate and up in, one product out
  }
  return {bytes, bytes};
}

}  // namespace loom
