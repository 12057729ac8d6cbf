#include "program/step_timeline.h"

#include <algorithm>
#include <numeric>

namespace loom {

std::vector<int32_t> StartSequence(const std::vector<SimTime>& start) {
  std::vector<TaskId> order(start.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](TaskId a, TaskId b) { return start[a] < start[b]; });
  std::vector<int32_t> sequence(start.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) sequence[order[i]] = static_cast<int32_t>(i);
  return sequence;
}

}  // namespace loom
