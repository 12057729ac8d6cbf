#ifndef LOOM_PROGRAM_MEMORY_BASELINE_H_
#define LOOM_PROGRAM_MEMORY_BASELINE_H_

#include <cstdint>

#include "program/task_graph.h"

namespace loom {

// Memory that is live for the whole step on one rank (weights, gradients, optimizer states),
// counted in |pool| from time zero.
struct MemoryBaseline {
  int32_t rank;
  PoolId pool;
  int64_t bytes;
};

}  // namespace loom

#endif  // LOOM_PROGRAM_MEMORY_BASELINE_H_
