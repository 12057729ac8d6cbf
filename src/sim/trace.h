#ifndef LOOM_SIM_TRACE_H_
#define LOOM_SIM_TRACE_H_

#include <string>

#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/task_graph.h"

namespace loom {

// Returns the step as Chrome trace JSON (the Trace Event Format; Perfetto and chrome://tracing
// open it): {"traceEvents":[...],"displayTimeUnit":"ns"} with, one event per line,
//  - "ph":"M" metadata naming each rank (pid = rank, "rank <r>") and stream (tid = StreamId,
//    named as in AddStream()), with sort indices that keep ranks and streams in id order;
//  - one "ph":"X" complete event per task, in task id order: name and "cat" from the graph's
//    string table, "ts"/"dur" in microseconds, "args" with the task id (and link name, if any);
//  - if |memory| is not null, one "ph":"C" counter event per sample of each rank's memory
//    timeline, named "memory", with "args":{"bytes":<total>}.
// Times are printed from the integer nanoseconds with exactly three decimals, and keys in a
// fixed order, so the same input always gives the same bytes.
// REQUIRES: |timeline| (and |memory|, if given) came from |graph|.
std::string ChromeTraceJson(const TaskGraph& graph, const StepTimeline& timeline,
                            const MemoryReport* memory = nullptr);

}  // namespace loom

#endif  // LOOM_SIM_TRACE_H_
