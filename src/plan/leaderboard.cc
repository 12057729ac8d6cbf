#include "plan/leaderboard.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace loom {

constexpr double kNoPlanEnters = -std::numeric_limits<double>::infinity();

bool RanksBefore(const RankedPlan& a, const RankedPlan& b) {
  if (a.score != b.score) return a.score < b.score;
  if (a.step_time_s != b.step_time_s) return a.step_time_s < b.step_time_s;
  return a.index < b.index;
}

Leaderboard::Leaderboard(int64_t top_k, std::optional<double> better_than,
                         int64_t better_than_limit, double slack)
    : top_k_(top_k),
      better_than_(better_than),
      better_than_limit_(better_than_limit),
      slack_(slack) {
  threshold_.store(better_than.value_or(std::numeric_limits<double>::infinity()));
}

void Leaderboard::Offer(RankedPlan plan) {
  if (better_than_.has_value() && plan.score >= *better_than_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  plans_.insert(std::upper_bound(plans_.begin(), plans_.end(), plan, RanksBefore), std::move(plan));
  if (better_than_.has_value()) {
    // Enough to answer "more than N": nothing else enters.
    if (static_cast<int64_t>(plans_.size()) >= better_than_limit_) {
      saturated_ = true;
      threshold_.store(kNoPlanEnters);
    }
    return;
  }
  const size_t k = static_cast<size_t>(top_k_);
  if (plans_.size() < k) return;
  const double limit = slack_ > 1 ? plans_[k - 1].score * slack_ : plans_[k - 1].score;
  while (plans_.size() > k && (slack_ <= 1 || plans_.back().score > limit)) plans_.pop_back();
  threshold_.store(limit);
}

std::optional<RankedPlan> Leaderboard::Best() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.empty()) return std::nullopt;
  return plans_.front();
}

std::vector<RankedPlan> Leaderboard::Take() {
  if (better_than_.has_value() && static_cast<int64_t>(plans_.size()) > better_than_limit_) {
    plans_.resize(static_cast<size_t>(better_than_limit_));
  }
  return std::move(plans_);
}

}  // namespace loom
