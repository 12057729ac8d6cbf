#include "sim/memory_tracker.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace loom {
namespace {

// When, within one instant, a change applies (see TrackMemory() in the header).
enum class Moment : uint8_t { kEndOfEarlierTask, kStart, kEndOfZeroLengthTask };

struct MemoryChange {
  int32_t rank;
  SimTime time;
  Moment moment;
  int32_t start_sequence;
  int32_t index;  // position among the changes, for a total order
  TaskId task;
  PoolId pool;
  int64_t delta_bytes;

  friend bool operator<(const MemoryChange& a, const MemoryChange& b) {
    return std::tie(a.rank, a.time, a.moment, a.start_sequence, a.index) <
           std::tie(b.rank, b.time, b.moment, b.start_sequence, b.index);
  }
};

std::vector<MemoryChange> CollectChanges(const TaskGraph& graph, const StepTimeline& timeline) {
  std::vector<MemoryChange> changes;
  auto add = [&](TaskId t, MemoryPhase phase, PoolId pool, int64_t delta) {
    if (delta == 0) return;
    MemoryChange c{graph.rank_of(t),
                   timeline.start[t],
                   Moment::kStart,
                   timeline.start_sequence[t],
                   static_cast<int32_t>(changes.size()),
                   t,
                   pool,
                   delta};
    if (phase == MemoryPhase::kAtEnd) {
      c.time = timeline.end[t];
      c.moment =
          c.time == timeline.start[t] ? Moment::kEndOfZeroLengthTask : Moment::kEndOfEarlierTask;
    }
    changes.push_back(c);
  };
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const Task& task = graph.task(t);
    add(t, MemoryPhase::kAtStart, task.pool, task.alloc_at_start_bytes);
    add(t, MemoryPhase::kAtEnd, task.pool, -task.free_at_end_bytes);
  }
  for (const MemoryEvent& e : graph.memory_events()) add(e.task, e.phase, e.pool, e.delta_bytes);
  std::sort(changes.begin(), changes.end());
  return changes;
}

Status CheckBaselines(const TaskGraph& graph, std::span<const MemoryBaseline> baselines) {
  for (const MemoryBaseline& b : baselines) {
    if (b.rank < 0 || b.rank >= graph.num_ranks() || b.pool < 0 || b.pool >= graph.num_pools() ||
        b.bytes < 0) {
      return Status::InvalidArgument("memory baseline of " + std::to_string(b.bytes) +
                                     " bytes on rank " + std::to_string(b.rank) + ", pool " +
                                     std::to_string(b.pool) +
                                     ": unknown rank or pool, or negative size (the graph has " +
                                     std::to_string(graph.num_ranks()) + " ranks and " +
                                     std::to_string(graph.num_pools()) + " pools)");
    }
  }
  return Status::Ok();
}

Status NegativePoolError(const TaskGraph& graph, const MemoryChange& c, int64_t pool_bytes) {
  return Status::InvalidArgument(
      "memory: pool '" + std::string(graph.Name(graph.pool_name(c.pool))) + "' on rank " +
      std::to_string(c.rank) + " would hold " + std::to_string(pool_bytes) + " bytes at " +
      FormatMicros(c.time) + " us, after " + graph.DescribeTask(c.task) + " frees " +
      std::to_string(-c.delta_bytes) +
      " bytes; every free needs an earlier allocation (or a baseline) in the same pool and rank");
}

}  // namespace

Result<MemoryReport> TrackMemory(const TaskGraph& graph, const StepTimeline& timeline,
                                 std::span<const MemoryBaseline> baselines) {
  LOOM_RETURN_IF_ERROR(CheckBaselines(graph, baselines));
  const int32_t pools = graph.num_pools();
  // live[rank * pools + pool]: bytes in use now.
  std::vector<int64_t> live(static_cast<size_t>(graph.num_ranks()) * pools, 0);
  std::vector<int32_t> buffers(live.size(), 0);  // live allocations, counted as |live|
  MemoryReport report;
  report.ranks.resize(graph.num_ranks());
  for (const MemoryBaseline& b : baselines) {
    live[b.rank * pools + b.pool] += b.bytes;
    report.ranks[b.rank].end_bytes += b.bytes;
  }
  for (int32_t r = 0; r < graph.num_ranks(); ++r) {
    RankMemory& rank = report.ranks[r];
    rank.peak_bytes = rank.end_bytes;
    rank.peak_bytes_by_pool.assign(live.begin() + r * pools, live.begin() + (r + 1) * pools);
    rank.peak_buffers_by_pool.assign(pools, 0);
    rank.timeline.push_back({SimTime::Zero(), rank.end_bytes});
  }

  const std::vector<MemoryChange> changes = CollectChanges(graph, timeline);
  for (size_t i = 0; i < changes.size(); ++i) {
    const MemoryChange& c = changes[i];
    RankMemory& rank = report.ranks[c.rank];
    int64_t& pool_bytes = live[c.rank * pools + c.pool];
    pool_bytes += c.delta_bytes;
    if (pool_bytes < 0) return NegativePoolError(graph, c, pool_bytes);
    buffers[c.rank * pools + c.pool] += c.delta_bytes > 0 ? 1 : -1;
    rank.end_bytes += c.delta_bytes;
    if (rank.end_bytes > rank.peak_bytes) {
      rank.peak_bytes = rank.end_bytes;
      rank.peak_time = c.time;
      rank.peak_task = c.task;
      std::copy_n(live.begin() + c.rank * pools, pools, rank.peak_bytes_by_pool.begin());
      std::copy_n(buffers.begin() + c.rank * pools, pools, rank.peak_buffers_by_pool.begin());
    }
    const bool last_at_this_time =
        i + 1 == changes.size() || changes[i + 1].rank != c.rank || changes[i + 1].time != c.time;
    if (!last_at_this_time || rank.end_bytes == rank.timeline.back().bytes) continue;
    if (rank.timeline.back().time == c.time) {
      rank.timeline.back().bytes = rank.end_bytes;
    } else {
      rank.timeline.push_back({c.time, rank.end_bytes});
    }
  }
  return report;
}

}  // namespace loom
