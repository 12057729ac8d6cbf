#include "probe/statistics.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace loom {
namespace {

// The |q| quantile of sorted |v| by linear interpolation between the closest ranks.
double Quantile(const std::vector<double>& v, double q) {
  const double position = q * static_cast<double>(v.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, v.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return v[below] + (v[above] - v[below]) * fraction;
}

}  // namespace

Result<TimeSummary> Summarize(std::vector<double> times_us) {
  if (times_us.empty())
    return Status::InvalidArgument("no timed repeats to summarise; repeats must be >= 1");
  for (double t : times_us) {
    if (!std::isfinite(t) || t <= 0) {
      return Status::InvalidArgument("a timed repeat read " + std::to_string(t) +
                                     " us; a time must be finite and > 0 (the timer is broken)");
    }
  }
  std::sort(times_us.begin(), times_us.end());
  TimeSummary s;
  s.median_us = Quantile(times_us, 0.5);
  s.p10_us = Quantile(times_us, 0.1);
  s.p90_us = Quantile(times_us, 0.9);
  s.repeats = static_cast<int64_t>(times_us.size());
  return s;
}

double CollectiveBusFactor(ProfiledCollective collective, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (collective) {
    case ProfiledCollective::kAllReduce:
      return 2 * (n - 1) / n;
    case ProfiledCollective::kAllGather:
    case ProfiledCollective::kReduceScatter:
    case ProfiledCollective::kAllToAll:
      return (n - 1) / n;
    case ProfiledCollective::kBroadcast:
    case ProfiledCollective::kSendRecv:
      return 1;
  }
  return 1;
}

CollectiveTiming CollectiveTimingOf(ProfiledCollective collective, int64_t size_bytes,
                                    int64_t ranks, double time_us) {
  CollectiveTiming t;
  t.time_us = time_us;
  t.algbw_GBps = static_cast<double>(size_bytes) / (time_us * 1e-6) / 1e9;
  t.busbw_GBps = t.algbw_GBps * CollectiveBusFactor(collective, ranks);
  return t;
}

int64_t CollectiveCount(int64_t size_bytes) { return size_bytes / 4; }

const char* CollectiveRedop(ProfiledCollective collective) {
  return collective == ProfiledCollective::kAllReduce ||
                 collective == ProfiledCollective::kReduceScatter
             ? "sum"
             : "none";
}

}  // namespace loom
