#include "sim/graph_index.h"

namespace loom {

FlatRows DependencyPredecessors(const TaskGraph& graph) {
  const int32_t n = graph.num_tasks();
  FlatRows rows;
  rows.offsets.assign(n + 1, 0);
  for (const Dependency& d : graph.dependencies()) ++rows.offsets[d.after + 1];
  for (int32_t t = 0; t < n; ++t) rows.offsets[t + 1] += rows.offsets[t];
  rows.items.resize(rows.offsets[n]);
  std::vector<int32_t> cursor(rows.offsets.begin(), rows.offsets.end() - 1);
  for (const Dependency& d : graph.dependencies()) rows.items[cursor[d.after]++] = d.before;
  return rows;
}

std::vector<TaskId> PreviousOnStream(const TaskGraph& graph) {
  std::vector<TaskId> previous(graph.num_tasks());
  std::vector<TaskId> last(graph.num_streams(), -1);
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    TaskId& last_on_stream = last[graph.task(t).stream];
    previous[t] = last_on_stream;
    last_on_stream = t;
  }
  return previous;
}

}  // namespace loom
