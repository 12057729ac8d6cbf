#ifndef LOOM_PLAN_LEADERBOARD_H_
#define LOOM_PLAN_LEADERBOARD_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "plan/planner.h"

namespace loom {

// Whether |a| ranks before |b|: the lower score, then the shorter step, then the earlier index.
bool RanksBefore(const RankedPlan& a, const RankedPlan& b);

// The plans a search has found so far, best first, and the score a strategy's bound must not
// exceed to enter them. Offer and Best may be called from several threads at once.
class Leaderboard {
 public:
  // Keeps the |top_k| best plans and, with |slack| > 1, past them every plan that scores at most
  // |slack| times the top_k-th. With |better_than|, keeps every plan that scores below it instead,
  // until there are |better_than_limit| (then saturated()).
  Leaderboard(int64_t top_k, std::optional<double> better_than, int64_t better_than_limit,
              double slack = 1);

  // The highest bound that may still enter: never rises.
  double Threshold() const { return threshold_.load(std::memory_order_relaxed); }

  void Offer(RankedPlan plan);

  // The best plan so far, if any.
  std::optional<RankedPlan> Best();

  // The plans, best first; with better_than, at most better_than_limit of them (threads may have
  // offered a few more before the limit stopped them). REQUIRES: no thread offers any more.
  std::vector<RankedPlan> Take();
  bool saturated() const { return saturated_; }

 private:
  const int64_t top_k_;
  const std::optional<double> better_than_;
  const int64_t better_than_limit_;
  const double slack_;
  bool saturated_ = false;
  std::mutex mutex_;
  std::vector<RankedPlan> plans_;
  std::atomic<double> threshold_;
};

}  // namespace loom

#endif  // LOOM_PLAN_LEADERBOARD_H_
