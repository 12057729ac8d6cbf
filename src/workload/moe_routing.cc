#include "workload/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace loom {
namespace {

// Rows one routing rank sends to the busiest expert and to each other expert, after the capacity.
struct RowsPerExpert {
  double busiest = 0;
  double other = 0;
};

int64_t Round(double rows) { return static_cast<int64_t>(std::llround(rows)); }

RowsPerExpert PerRoutingRank(const MoeRouting& r) {
  const double experts = static_cast<double>(r.experts);
  const double mean = static_cast<double>(r.routed_rows) / experts;
  // An expert sees each token at most once: its rows are at most the tokens, E / top_k means.
  const double skew = std::min(r.imbalance, experts / static_cast<double>(r.top_k));
  const double other_share = r.experts > 1 ? (experts - skew) / (experts - 1) : 1.0;
  RowsPerExpert rows{skew * mean, other_share * mean};
  if (r.capacity_factor > 0) {
    // megatron/core/transformer/moe/moe_utils.py, get_capacity: ceil(tokens * top_k / E * factor).
    const double capacity = std::ceil(mean * r.capacity_factor);
    rows.busiest = std::min(rows.busiest, capacity);
    rows.other = std::min(rows.other, capacity);
  }
  return rows;
}

}  // namespace

ExpertLoad BusiestRankLoad(const MoeRouting& r) {
  const RowsPerExpert per_rank = PerRoutingRank(r);
  const double others = static_cast<double>(r.local_experts - 1);
  ExpertLoad load;
  // ep routing ranks send to this rank; the etp all-gather then joins etp such streams.
  load.received_rows =
      Round(static_cast<double>(r.ep) * (per_rank.busiest + others * per_rank.other));
  load.rows = r.etp * load.received_rows;
  load.sent_rows = Round(per_rank.busiest + static_cast<double>(r.experts - 1) * per_rank.other);
  const int64_t busiest =
      std::min(load.rows, Round(static_cast<double>(r.ep * r.etp) * per_rank.busiest));
  std::map<int64_t, int64_t, std::greater<>> experts_by_rows;
  if (r.local_experts == 1) {
    experts_by_rows[load.rows] = 1;
  } else {
    const int64_t rest = load.rows - busiest;
    const int64_t q = rest / (r.local_experts - 1);
    const int64_t extra = rest % (r.local_experts - 1);
    experts_by_rows[busiest] += 1;
    experts_by_rows[q + 1] += extra;
    experts_by_rows[q] += r.local_experts - 1 - extra;
  }
  for (auto [rows, experts] : experts_by_rows) {
    if (experts > 0) load.groups.push_back({experts, rows});
  }
  return load;
}

double DroppedTokenFraction(const MoeRouting& r) {
  if (r.capacity_factor <= 0 || r.routed_rows == 0) return 0;
  const RowsPerExpert per_rank = PerRoutingRank(r);
  const double kept = per_rank.busiest + static_cast<double>(r.experts - 1) * per_rank.other;
  return std::max(0.0, 1.0 - kept / static_cast<double>(r.routed_rows));
}

}  // namespace loom
