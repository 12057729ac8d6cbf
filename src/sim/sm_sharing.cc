#include "sim/sm_sharing.h"

#include <algorithm>
#include <cmath>

namespace loom {
namespace {

// end_ of a task that is not running: never equal to an event time, which is >= 0.
constexpr SimTime kNotYielding = SimTime::FromNanos(-1);

}  // namespace

SmSharing::SmSharing(const TaskGraph& graph) : graph_(graph) {
  const size_t tasks = static_cast<size_t>(graph.num_tasks());
  remaining_ns_.assign(tasks, 0);
  since_.assign(tasks, SimTime::Zero());
  rate_.assign(tasks, 0);
  end_.assign(tasks, kNotYielding);
  const size_t ranks = static_cast<size_t>(graph.num_ranks());
  held_.assign(ranks, 0);
  hbm_held_.assign(ranks, 0);
  holders_.assign(ranks, 0);
  // Reserve each rank's list for all its yielding streams, so that the event loop allocates
  // nothing: a stream runs one task at a time.
  std::vector<int32_t> streams(ranks, 0);
  std::vector<uint8_t> yielding_stream(static_cast<size_t>(graph.num_streams()), 0);
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    if (graph.sm_use(t).yields) yielding_stream[graph.task(t).stream] = 1;
  }
  for (StreamId s = 0; s < graph.num_streams(); ++s) {
    if (yielding_stream[s]) ++streams[graph.stream_rank(s)];
  }
  running_.resize(ranks);
  for (size_t r = 0; r < ranks; ++r) running_[r].reserve(streams[r]);
  rank_touched_.assign(ranks, 0);
  touched_ranks_.reserve(ranks);
  lost_ns_.assign(ranks, 0);
}

void SmSharing::Hold(TaskId id) {
  const int32_t rank = graph_.rank_of(id);
  held_[rank] += graph_.sm_use(id).holds;
  hbm_held_[rank] += graph_.sm_use(id).hbm;
  ++holders_[rank];
  Touch(rank);
}

void SmSharing::Release(TaskId id) {
  const int32_t rank = graph_.rank_of(id);
  // Back to exactly zero when the last holder ends, so that sums of floats leave no residue.
  const bool last = --holders_[rank] == 0;
  held_[rank] = last ? 0.0 : held_[rank] - graph_.sm_use(id).holds;
  hbm_held_[rank] = last ? 0.0 : hbm_held_[rank] - graph_.sm_use(id).hbm;
  Touch(rank);
}

void SmSharing::Begin(TaskId id, SimTime now, SimTime work) {
  remaining_ns_[id] = static_cast<double>(work.nanos());
  since_[id] = now;
  rate_[id] = 0;  // no rate yet: the next Reshare() always schedules the task's end
  const int32_t rank = graph_.rank_of(id);
  running_[rank].push_back(id);
  Touch(rank);
}

void SmSharing::Finish(TaskId id) {
  const int32_t rank = graph_.rank_of(id);
  lost_ns_[rank] += static_cast<double>((end_[id] - since_[id]).nanos()) * (1 - rate_[id]);
  end_[id] = kNotYielding;
  std::vector<TaskId>& on = running_[rank];
  *std::find(on.begin(), on.end(), id) = on.back();
  on.pop_back();
}

void SmSharing::Touch(int32_t rank) {
  if (!rank_touched_[rank]) {
    rank_touched_[rank] = 1;
    touched_ranks_.push_back(rank);
  }
}

double SmSharing::Rate(int32_t rank, float memory) const {
  const double compute = std::max(kMinRate, 1.0 - held_[rank]);
  const double bandwidth = std::max(kMinRate, 1.0 - hbm_held_[rank]);
  // Exactly the compute rate where the bandwidth left is no scarcer than the SMs.
  if (memory <= 0 || bandwidth >= compute) return compute;
  return 1.0 / ((1.0 - memory) / compute + memory / bandwidth);
}

bool SmSharing::Update(TaskId id, SimTime now, double rate) {
  if (rate == rate_[id]) return false;
  const int32_t rank = graph_.rank_of(id);
  // Work done at the old rate since it began; a task just begun has done none. The clamp absorbs
  // the rounding of an end time.
  if (rate_[id] > 0) {
    const double elapsed = static_cast<double>((now - since_[id]).nanos());
    remaining_ns_[id] = std::max(remaining_ns_[id] - elapsed * rate_[id], 0.0);
    lost_ns_[rank] += elapsed * (1 - rate_[id]);
  }
  since_[id] = now;
  rate_[id] = rate;
  // Rounded to the nearest nanosecond; the same double arithmetic on every run.
  const SimTime end = now + SimTime::FromNanos(std::llround(remaining_ns_[id] / rate));
  if (end == end_[id]) return false;
  end_[id] = end;
  return true;
}

std::vector<SimTime> SmSharing::TakeLostTime() const {
  std::vector<SimTime> lost;
  lost.reserve(lost_ns_.size());
  for (double ns : lost_ns_) lost.push_back(SimTime::FromNanos(std::llround(ns)));
  return lost;
}

}  // namespace loom
