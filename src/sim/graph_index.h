#ifndef LOOM_SIM_GRAPH_INDEX_H_
#define LOOM_SIM_GRAPH_INDEX_H_

#include <cstdint>
#include <span>
#include <vector>

#include "program/task_graph.h"

// Flat lookup tables over a TaskGraph, shared by the engine and the analyses after it.
// Internal to src/sim/.

namespace loom {

// Rows of ids in one flat array (compressed sparse rows): row r is
// items[offsets[r] .. offsets[r + 1]).
struct FlatRows {
  std::vector<int32_t> offsets;
  std::vector<int32_t> items;

  std::span<const int32_t> Row(int32_t r) const {
    return std::span<const int32_t>(items).subspan(offsets[r], offsets[r + 1] - offsets[r]);
  }
};

// Returns, for each task, the tasks it explicitly depends on, in the order they were added.
FlatRows DependencyPredecessors(const TaskGraph& graph);

// Returns, for each task, the task before it on its stream, or -1 for the first.
std::vector<TaskId> PreviousOnStream(const TaskGraph& graph);

}  // namespace loom

#endif  // LOOM_SIM_GRAPH_INDEX_H_
