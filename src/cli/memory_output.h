#ifndef LOOM_CLI_MEMORY_OUTPUT_H_
#define LOOM_CLI_MEMORY_OUTPUT_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/fit_suggestions.h"
#include "sim/memory_breakdown.h"
#include "sim/memory_reserve.h"

namespace loom {

// What holds the memory of each stage at its peak, for `simulate` and `plan --explain`.
struct MemoryView {
  const std::vector<MemoryBreakdown>& stages;
  int32_t peak_stage = 0;
  int64_t limit_bytes = 0;       // the GPU's memory less |reserve|: what a peak is held to
  const MemoryReserve& reserve;  // outside every peak: its parts and the headroom
  const std::vector<FitSuggestion>& fits;  // when the peak does not fit: what would
  double step_time_s = 0;                  // of the strategy, to compare the suggestions with
};

// One stage's breakdown: {"stage", "rank", "peak_bytes", "peak_time_s", "items": {item name:
// bytes, ...} (kMemoryItemNames, the items the step holds), "stashed_micro_batches",
// "peak_task": null or {"task", "name", "stream", "kind", "pass", "virtual_stage", "chunk",
// "micro_batch", "start_s", "end_s", "description"}} (pass, virtual_stage, chunk and
// micro_batch null where the task has none).
nlohmann::ordered_json MemoryBreakdownJson(const MemoryBreakdown& breakdown);

// {"limit_bytes", "reserved_bytes", "reserve": {"parts": [{"name", "bytes", "basis"}...],
// "headroom", "headroom_bytes", "headroom_basis"}, "peak_stage", "stages":
// [MemoryBreakdownJson...], "fit_suggestions": [{"changes", "levers", "fix", "step_time_s",
// "peak_memory_bytes", "memory_limit_bytes"}...]}.
nlohmann::ordered_json MemoryJson(const MemoryView& view);

// A table of every stage's items at its peak, the peak's instant and task, the reserve, and when
// it does not fit the suggestions.
void PrintMemory(const MemoryView& view, std::ostream& out);

}  // namespace loom

#endif  // LOOM_CLI_MEMORY_OUTPUT_H_
