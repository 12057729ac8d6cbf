#include "plan/deepspeed_partition.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace loom {
namespace {

// partition_uniform: items spread one by one over the first parts.
std::vector<int64_t> PartitionUniform(int64_t items, int64_t parts) {
  std::vector<int64_t> cuts(static_cast<size_t>(parts + 1), 0);
  if (items <= parts) {
    for (int64_t p = 0; p <= parts; ++p) cuts[p] = std::min(p, items);
    return cuts;
  }
  const int64_t chunk = items / parts, residual = items - chunk * parts;
  for (int64_t p = 0; p <= parts; ++p) cuts[p] = p * chunk + std::min(p, residual);
  return cuts;
}

}  // namespace

std::vector<int64_t> PartitionBalanced(const std::vector<int64_t>& weights, int64_t parts) {
  const int64_t n = static_cast<int64_t>(weights.size()), m = parts;
  if (n <= m) return PartitionUniform(n, m);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto at = [m](int64_t i, int64_t j) { return static_cast<size_t>(i * (m + 1) + j); };
  const size_t cells = static_cast<size_t>((n + 1) * (m + 1));
  std::vector<double> most(cells, kInf), least(cells, kInf), cost(cells, kInf);
  std::vector<int64_t> position(cells, 0);
  std::vector<double> prefix(static_cast<size_t>(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + static_cast<double>(weights[i]);
  most[at(0, 0)] = 0;
  cost[at(0, 0)] = 0;
  for (int64_t i = 1; i <= n; ++i) {
    for (int64_t j = 1; j <= std::min(i, m); ++j) {
      for (int64_t k = 0; k < i; ++k) {
        const double sum = prefix[i] - prefix[k];
        const double high = std::max(most[at(k, j - 1)], sum);
        const double low = std::min(least[at(k, j - 1)], sum);
        if (cost[at(i, j)] >= high - low) {  // DeepSpeed's >=: the last k of equal cost wins
          cost[at(i, j)] = high - low;
          most[at(i, j)] = high;
          least[at(i, j)] = low;
          position[at(i, j)] = k;
        }
      }
    }
  }
  std::vector<int64_t> cuts = {n};
  for (int64_t j = m; j >= 1; --j) cuts.push_back(position[at(cuts.back(), j)]);
  std::reverse(cuts.begin(), cuts.end());
  return cuts;
}

std::vector<int64_t> MegatronDeepSpeedStageLayers(const ModelSpec& model, int64_t pp) {
  // Layers pp divides split evenly: no other cut has a cost of 0. The planner asks this of every
  // strategy it admits, so the dynamic program (layers^2 * pp steps) runs once a thread for each
  // uneven shape.
  if (pp >= 1 && model.num_layers % pp == 0) {
    return std::vector<int64_t>(static_cast<size_t>(pp), model.num_layers / pp);
  }
  thread_local std::map<std::tuple<int64_t, bool, int64_t>, std::vector<int64_t>> memo;
  const auto key = std::make_tuple(model.num_layers, model.moe.has_value(), pp);
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  std::vector<int64_t> weights = {0, 0};  // _to_float16, the embedding
  weights.insert(weights.end(), static_cast<size_t>(model.num_layers), 1);
  if (model.moe.has_value()) weights.push_back(0);  // _calculate_moe_loss
  weights.insert(weights.end(), {0, 0, 0});         // the final norm, the head, float16_to_fp32
  const std::vector<int64_t> cuts = PartitionBalanced(weights, pp);
  std::vector<int64_t> layers;
  for (int64_t p = 0; p < pp; ++p) {
    int64_t count = 0;
    for (int64_t i = cuts[p]; i < cuts[p + 1]; ++i) count += weights[static_cast<size_t>(i)];
    layers.push_back(count);
  }
  memo.emplace(key, layers);
  return layers;
}

}  // namespace loom
