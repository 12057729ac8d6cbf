#include "spec/layer_balance.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

namespace loom {
namespace {

// The real layer shares: with the stages in |pinned| at |min_layers|, the others get the time T at
// which they all end together, sum over free s of (T - fixed_s) / layer_s = the layers left; a
// free stage whose share falls below |min_layers| is pinned and T found again. Each round pins at
// least one stage or ends, so it ends within n rounds, and some stage stays free: the free shares
// sum to the layers left, at least min_layers per free stage, so not all of them fall below it.
std::vector<double> RealShares(const std::vector<double>& layer_s,
                               const std::vector<double>& fixed_s, int64_t num_layers,
                               int64_t min_layers) {
  const size_t n = layer_s.size();
  const double least = static_cast<double>(min_layers);
  std::vector<bool> pinned(n, false);
  std::vector<double> share(n, least);
  for (bool changed = true; changed;) {
    changed = false;
    double speed = 0, left = static_cast<double>(num_layers), lead = 0;
    for (size_t s = 0; s < n; ++s) {
      if (pinned[s]) {
        left -= least;
      } else {
        speed += 1 / layer_s[s];
        lead += fixed_s[s] / layer_s[s];
      }
    }
    if (speed == 0) break;
    const double end = (left + lead) / speed;
    for (size_t s = 0; s < n; ++s) {
      if (pinned[s]) continue;
      share[s] = (end - fixed_s[s]) / layer_s[s];
      if (share[s] < least) {
        pinned[s] = changed = true;
        share[s] = least;
      }
    }
  }
  return share;
}

}  // namespace

std::vector<int64_t> BalancedStageLayers(const std::vector<double>& layer_s,
                                         const std::vector<double>& fixed_s, int64_t num_layers,
                                         int64_t min_layers) {
  const std::vector<double> share = RealShares(layer_s, fixed_s, num_layers, min_layers);
  const size_t n = share.size();
  // A share a rounding error below a whole number counts as that number.
  constexpr double kSlack = 1e-9;
  std::vector<int64_t> layers(n);
  std::vector<double> fraction(n);
  for (size_t s = 0; s < n; ++s) {
    const double whole = std::floor(share[s] + kSlack);
    layers[s] = std::max(min_layers, static_cast<int64_t>(whole));
    fraction[s] = share[s] - whole;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return fraction[a] > fraction[b]; });
  int64_t left = num_layers - std::accumulate(layers.begin(), layers.end(), int64_t{0});
  // The shares sum to num_layers, so fewer than n layers are left over; rounding errors of the
  // shares can leave one too many placed, taken back from the smallest fraction above the minimum.
  for (size_t i = 0; left > 0; i = (i + 1) % n, --left) ++layers[order[i]];
  for (size_t i = n; left < 0 && i > 0; --i) {
    if (layers[order[i - 1]] > min_layers) {
      --layers[order[i - 1]];
      ++left;
    }
  }
  return layers;
}

}  // namespace loom
