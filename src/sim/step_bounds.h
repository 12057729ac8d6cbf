#ifndef LOOM_SIM_STEP_BOUNDS_H_
#define LOOM_SIM_STEP_BOUNDS_H_

#include <cstdint>

#include "core/sim_time.h"
#include "sim/simulator.h"

namespace loom {

// Lower bounds on what SimulatePreparedStep finds, computed from the prepared step without running
// the engine: the planner rejects or skips a strategy on them, so they must never exceed the
// simulated values (tests/sim/step_bounds_test.cc checks that over a space of strategies).
struct StepBounds {
  // No step runs faster: on some stage, the passes before its first one (the first micro-batch's
  // forward through the virtual stages before it, with the transfers between them), then its own
  // passes back to back, then either its optimizer chain or the backward of the last micro-batch
  // through the virtual stages before it. Contention, waits and ring transfers only add to it.
  SimTime step_time;
  // No stage peaks lower: its model states, plus the activations its schedule order holds at once
  // (every F allocates them at its start, its W or BW frees them at its end, and a compute stream
  // runs its order one pass after another), plus a backward's recompute buffer. Only ZeRO-3's
  // gathered layer weights are left out.
  int64_t peak_memory_bytes = 0;
};

StepBounds BoundStep(const PreparedStep& step);

}  // namespace loom

#endif  // LOOM_SIM_STEP_BOUNDS_H_
