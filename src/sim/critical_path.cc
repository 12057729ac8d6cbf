#include "sim/critical_path.h"

#include <algorithm>
#include <span>
#include <utility>

#include "sim/graph_index.h"

namespace loom {
namespace {

// Returns, for each task on a link, the task that held the link just before it (or -1), in the
// order the engine handed the link out.
std::vector<TaskId> PreviousOnLink(const TaskGraph& graph, const StepTimeline& timeline) {
  const int32_t n = graph.num_tasks();
  std::vector<TaskId> by_sequence(n);
  for (TaskId t = 0; t < n; ++t) by_sequence[timeline.start_sequence[t]] = t;
  std::vector<TaskId> previous(n, -1);
  std::vector<TaskId> last(graph.num_links(), -1);
  for (TaskId t : by_sequence) {
    const LinkId link = graph.task(t).link;
    if (link == kNoLink) continue;
    previous[t] = last[link];
    last[link] = t;
  }
  return previous;
}

// The predecessor that held |current| back, chosen as CriticalPath() documents.
class BindingSearch {
 public:
  BindingSearch(const StepTimeline& timeline, SimTime start, int32_t first_sequence)
      : timeline_(timeline), start_(start), first_sequence_(first_sequence) {}

  // Offers |candidate| (or -1) as what held the task back for reason |kind|. Only a task that
  // started before the current one (or its collective) and ended exactly at its start counts;
  // the first condition also keeps zero-length tasks from leading the walk in circles.
  void Offer(TaskId candidate, Binding kind) {
    if (candidate < 0 || timeline_.end[candidate] != start_ ||
        timeline_.start_sequence[candidate] >= first_sequence_) {
      return;
    }
    if (best_ < 0 || kind < kind_ || (kind == kind_ && candidate < best_)) {
      best_ = candidate;
      kind_ = kind;
    }
  }

  TaskId best() const { return best_; }
  Binding kind() const { return best_ < 0 ? Binding::kStepStart : kind_; }

 private:
  const StepTimeline& timeline_;
  const SimTime start_;
  const int32_t first_sequence_;
  TaskId best_ = -1;
  Binding kind_ = Binding::kStepStart;
};

}  // namespace

std::vector<CriticalStep> CriticalPath(const TaskGraph& graph, const StepTimeline& timeline) {
  const int32_t n = graph.num_tasks();
  if (n == 0) return {};
  const FlatRows predecessors = DependencyPredecessors(graph);
  const std::vector<TaskId> previous_on_stream = PreviousOnStream(graph);
  const std::vector<TaskId> previous_on_link = PreviousOnLink(graph, timeline);

  TaskId current = 0;
  for (TaskId t = 1; t < n; ++t) {
    if (std::pair(timeline.end[t], timeline.start_sequence[t]) >
        std::pair(timeline.end[current], timeline.start_sequence[current])) {
      current = t;
    }
  }
  std::vector<CriticalStep> path;
  while (true) {
    const GroupId group = graph.group_of(current);
    const std::span<const TaskId> members =
        group == kNoGroup ? std::span<const TaskId>(&current, 1) : graph.group_members(group);
    int32_t first_sequence = timeline.start_sequence[current];
    for (TaskId m : members) first_sequence = std::min(first_sequence, timeline.start_sequence[m]);

    BindingSearch search(timeline, timeline.start[current], first_sequence);
    for (TaskId m : members) {
      const bool self = m == current;
      for (TaskId p : predecessors.Row(m)) {
        search.Offer(p, self ? Binding::kDependency : Binding::kRendezvous);
      }
      search.Offer(previous_on_stream[m], self ? Binding::kStreamOrder : Binding::kRendezvous);
      search.Offer(previous_on_link[m], self ? Binding::kLink : Binding::kRendezvous);
    }
    path.push_back({current, search.kind()});
    if (search.best() < 0) break;
    current = search.best();
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace loom
