#ifndef LOOM_SIM_TRACE_MERGE_H_
#define LOOM_SIM_TRACE_MERGE_H_

#include <span>
#include <string>

#include "core/status.h"

namespace loom {

// One Chrome trace file to merge (trace.h writes them; any Trace Event Format file works).
struct TraceToMerge {
  std::string path;   // named by errors and recorded in otherData
  std::string text;   // the file's JSON: {"traceEvents":[...], ...} or a bare array of events
  std::string label;  // put before its process names: "predicted" -> "predicted rank 0 (...)"
};

// Returns one Chrome trace holding the events of every input, so that two runs (a prediction and
// a measurement, two strategies) open side by side in Perfetto:
//  - input i's process ids move past those of the inputs before it (pid + the largest pid so far
//    + 1; the first input keeps its own), and so do its process sort indices, so every process
//    stays distinct and the inputs stay in order;
//  - its integer event ids (flows, async events) move the same way past the ids before it, so a
//    flow arrow pairs only within its input; a string id gets the prefix "<i>:";
//  - its process names (and, for a process the input never named, a new name "pid N") start with
//    |label| and a space;
//  - every other key of every event is kept as the input wrote it (numbers as JSON reads them).
// One event per line, in input order; "displayTimeUnit":"ms"; otherData {"merged":[{"file",
// "label","otherData"}...]} keeps each input's own otherData. The same inputs give the same bytes.
// Errors name the input file: not JSON, no traceEvents array, an event that is not an object, or
// a pid or integer id outside [0, 2^48].
Result<std::string> MergeChromeTraces(std::span<const TraceToMerge> inputs);

}  // namespace loom

#endif  // LOOM_SIM_TRACE_MERGE_H_
