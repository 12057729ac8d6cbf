#ifndef LOOM_DEVICE_COLD_L2_H_
#define LOOM_DEVICE_COLD_L2_H_

#include <cstdint>

namespace loom {

// Kernel inputs count as cold (read from HBM, as training reads each weight and activation about
// once per micro-batch) once this many L2 capacities of other data have gone through the cache
// since they were last read: the probe's input rotation (RotationCount, probe/bench.h) and the CUDA
// executor's operand ring (exec/operand_ring.h) both keep to it, so that both time the same thing.
inline constexpr int64_t kColdL2Multiple = 2;

}  // namespace loom

#endif  // LOOM_DEVICE_COLD_L2_H_
