#ifndef LOOM_PROBE_STATISTICS_H_
#define LOOM_PROBE_STATISTICS_H_

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "cost/profile.h"

namespace loom {

// The statistics a profile keeps of one point's timed repeats.
struct TimeSummary {
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  int64_t repeats = 0;
};

// Median and 10th/90th percentiles of |times_us|, interpolated linearly between the closest
// ranks (position q * (n - 1) in the sorted times: NumPy's default "linear" method), so a summary
// of 1 repeat is that repeat. InvalidArgument for no times, or a time that is not finite and > 0
// (a timer that read 0 is a broken measurement, not a fast kernel).
Result<TimeSummary> Summarize(std::vector<double> times_us);

// nccl-tests' bus-bandwidth factor of |collective| over |ranks| (doc/PERFORMANCE.md): 2(n-1)/n for
// all-reduce; (n-1)/n for all-gather, reduce-scatter and all-to-all; 1 for broadcast and
// send/recv. busbw = algbw * factor is comparable with the link bandwidth whatever the collective.
double CollectiveBusFactor(ProfiledCollective collective, int64_t ranks);

// nccl-tests' columns for one size: algbw = size_bytes / time (GB/s, 1e9 bytes per second) and
// busbw = algbw * CollectiveBusFactor.
CollectiveTiming CollectiveTimingOf(ProfiledCollective collective, int64_t size_bytes,
                                    int64_t ranks, double time_us);

// nccl-tests' count column for fp32 ("float") elements: size_bytes / 4.
int64_t CollectiveCount(int64_t size_bytes);

// nccl-tests' redop column: "sum" for the reductions, "none" otherwise.
const char* CollectiveRedop(ProfiledCollective collective);

}  // namespace loom

#endif  // LOOM_PROBE_STATISTICS_H_
