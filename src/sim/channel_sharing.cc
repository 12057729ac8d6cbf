#include "sim/channel_sharing.h"

#include <algorithm>
#include <cmath>

namespace loom {
namespace {

// end_ of a flow that is not running: never equal to an event time, which is >= 0.
constexpr SimTime kNotRunning = SimTime::FromNanos(-1);

}  // namespace

ChannelSharing::ChannelSharing(const TaskGraph& graph, const FlatRows& collective_channels)
    : graph_(graph), collective_channels_(collective_channels), num_tasks_(graph.num_tasks()) {
  const size_t flows = static_cast<size_t>(num_tasks_) + graph.num_groups();
  remaining_ns_.assign(flows, 0);
  since_.assign(flows, SimTime::Zero());
  sharers_.assign(flows, 0);
  end_.assign(flows, kNotRunning);

  // Reserve every channel's list for all the flows that could ever be on it, so that the event
  // loop allocates nothing.
  const int32_t channels = graph.num_channels();
  std::vector<int32_t> uses(channels, 0);
  for (TaskId t = 0; t < num_tasks_; ++t) {
    const RouteId route = graph.task(t).route;
    if (route == kNoRoute || graph.group_of(t) != kNoGroup) continue;
    for (ChannelId c : graph.route_channels(route)) ++uses[c];
  }
  for (ChannelId c : collective_channels.items) ++uses[c];
  on_channel_.resize(channels);
  for (ChannelId c = 0; c < channels; ++c) on_channel_[c].reserve(uses[c]);
  channel_touched_.assign(channels, 0);
  touched_channels_.reserve(channels);
  changed_at_.assign(channels, SimTime::Zero());
  uses_since_.assign(channels, 0);
  busy_.assign(channels, SimTime::Zero());
  shared_.assign(channels, SimTime::Zero());
}

std::span<const ChannelId> ChannelSharing::Channels(int32_t flow) const {
  if (IsCollective(flow)) return collective_channels_.Row(GroupOf(flow));
  return graph_.route_channels(graph_.task(flow).route);
}

void ChannelSharing::Begin(int32_t flow, SimTime now, SimTime work) {
  remaining_ns_[flow] = static_cast<double>(work.nanos());
  since_[flow] = now;
  sharers_[flow] = 0;  // no share yet: the next Reshare() always schedules the flow's end
  for (ChannelId c : Channels(flow)) {
    on_channel_[c].push_back(flow);
    Touch(c);
  }
}

void ChannelSharing::Finish(int32_t flow) {
  end_[flow] = kNotRunning;
  for (ChannelId c : Channels(flow)) {
    std::vector<int32_t>& on = on_channel_[c];
    // Order within the list does not matter: every flow on it gets the same share.
    *std::find(on.begin(), on.end(), flow) = on.back();
    on.pop_back();
    Touch(c);
  }
}

void ChannelSharing::Touch(ChannelId channel) {
  if (!channel_touched_[channel]) {
    channel_touched_[channel] = 1;
    touched_channels_.push_back(channel);
  }
}

void ChannelSharing::Account(ChannelId channel, SimTime now) {
  const SimTime elapsed = now - changed_at_[channel];
  if (uses_since_[channel] >= 1) busy_[channel] += elapsed;
  if (uses_since_[channel] >= 2) shared_[channel] += elapsed;
  changed_at_[channel] = now;
  uses_since_[channel] = static_cast<int32_t>(on_channel_[channel].size());
}

bool ChannelSharing::Update(int32_t flow, SimTime now) {
  int32_t sharers = 0;
  for (ChannelId c : Channels(flow)) {
    sharers = std::max(sharers, static_cast<int32_t>(on_channel_[c].size()));
  }
  if (sharers == sharers_[flow]) return false;
  // Work done at the old share since it began; a flow just begun has done none. The clamp
  // absorbs the rounding of an end time that this flow's channel partners ended at.
  if (sharers_[flow] > 0) {
    remaining_ns_[flow] -= static_cast<double>((now - since_[flow]).nanos()) / sharers_[flow];
    remaining_ns_[flow] = std::max(remaining_ns_[flow], 0.0);
  }
  since_[flow] = now;
  sharers_[flow] = sharers;
  // Rounded to the nearest nanosecond; the same double arithmetic on every run.
  const SimTime end = now + SimTime::FromNanos(std::llround(remaining_ns_[flow] * sharers));
  if (end == end_[flow]) return false;
  end_[flow] = end;
  return true;
}

}  // namespace loom
