#ifndef LOOM_PLAN_FIT_SUGGESTIONS_H_
#define LOOM_PLAN_FIT_SUGGESTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// A strategy near one that does not fit, which does.
struct FitSuggestion {
  Strategy strategy;
  // The settings it changes, as --fix / --explain text in ConstraintText's key order:
  // "recompute=full", "tp=16,dp=64" (one lever can move two keys: dp keeps the GPU count).
  std::string changes;
  int32_t levers = 0;  // how many memory levers it moves (1, or 2 when no single one fits)
  double step_time_s = 0;
  int64_t peak_memory_bytes = 0;
  int64_t memory_limit_bytes = 0;
};

struct FitOptions {
  SimulationOptions simulation;  // as the strategy itself was simulated
  // Applied to each candidate after its levers moved (Explain: DeepSpeed's gradient accumulation
  // follows the ZeRO stage). Empty: none.
  std::function<void(Strategy&)> complete;
  int32_t max_simulations =
      32;  // candidates simulated at most, beyond those the memory bound rejects
  int32_t max_suggestions = 5;
};

// The nearest strategies to |strategy| that fit in memory, best first. Each moves one memory lever
// one step: recompute (none -> selective -> full, or a partial full recompute to every layer), the
// micro-batch halved, ZeRO one stage up, sequence parallelism on, tp, pp or cp doubled with dp
// halved so that the GPU count holds, optimizer (or with ZeRO-3 parameter) offload, and an
// interleaved schedule's chunks halved or doubled; an explicit pipeline layout pins pp and vpp.
// Only when no single lever fits, pairs of levers. Every candidate passes ValidateStrategy, is
// rejected without simulation when StepBounds' memory bound already exceeds the usable memory,
// and is simulated otherwise (at most |options.max_simulations|, the lowest bounds first). Ordered
// by levers moved, then step time. Empty when |strategy| fits. Errors: ValidateStrategy's for
// |strategy| itself, and simulation errors.
Result<std::vector<FitSuggestion>> SuggestFits(const ModelSpec& model, const ClusterSpec& cluster,
                                               const Strategy& strategy,
                                               const FitOptions& options = {});

}  // namespace loom

#endif  // LOOM_PLAN_FIT_SUGGESTIONS_H_
