#include "exec/timed_backend.h"

#include <algorithm>

namespace loom {
namespace {

// The longest nap between polls: short next to the milliseconds a pass takes, long enough that
// ranks sharing a core leave it to each other.
constexpr double kMaxNapS = 100e-6;

}  // namespace

TimedBackend::TimedBackend(const TaskGraph& graph, MessageTransport& transport, Clock& clock,
                           double speedup)
    : graph_(graph), transport_(transport), clock_(clock), speedup_(speedup) {
  StartEpoch(clock_.NowSeconds());
}

void TimedBackend::StartEpoch(double epoch_s) {
  epoch_s_ = epoch_s;
  timers_.clear();
}

SimTime TimedBackend::Now() {
  return SimTime::FromSeconds((clock_.NowSeconds() - epoch_s_) * speedup_);
}

Status TimedBackend::Start(TaskId task) {
  timers_.push_back({task, Now() + graph_.task(task).duration});
  return Status::Ok();
}

Status TimedBackend::StartCollective(TaskId task, GroupId group, int32_t communicator) {
  return transport_.PostCollective(task, group, communicator);
}

Status TimedBackend::Notify(TaskId task, int32_t to) { return transport_.Send(task, to); }

SimTime TimedBackend::CollectiveDuration(TaskId task) const {
  SimTime longest;
  for (TaskId member : graph_.group_members(graph_.group_of(task)))
    longest = Max(longest, graph_.task(member).duration);
  return longest;
}

Status TimedBackend::Poll(std::vector<TaskEnd>* ended, std::vector<TaskId>* notified) {
  collectives_done_.clear();
  LOOM_RETURN_IF_ERROR(transport_.Poll(&collectives_done_, notified));
  // A collective has met; as in the simulator, it now takes its longest member's time.
  for (TaskId t : collectives_done_) timers_.push_back({t, Now() + CollectiveDuration(t)});
  const SimTime now = Now();
  auto due = std::stable_partition(timers_.begin(), timers_.end(),
                                   [&](const Timer& t) { return t.end > now; });
  for (auto it = due; it != timers_.end(); ++it) ended->push_back({it->task, it->end});
  timers_.erase(due, timers_.end());
  if (ended->empty() && notified->empty()) Nap();
  return Status::Ok();
}

void TimedBackend::Nap() {
  double nap_s = kMaxNapS;
  const SimTime now = Now();
  for (const Timer& t : timers_) nap_s = std::min(nap_s, (t.end - now).ToSeconds() / speedup_);
  if (nap_s > 0) clock_.SleepSeconds(nap_s);
}

}  // namespace loom
