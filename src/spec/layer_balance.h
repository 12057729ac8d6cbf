#ifndef LOOM_SPEC_LAYER_BALANCE_H_
#define LOOM_SPEC_LAYER_BALANCE_H_

#include <cstdint>
#include <vector>

namespace loom {

// Transformer layers per pipeline stage that even out stages of unequal speed (stages on
// different GPUs, ClusterSpec::node_groups). Stage s takes layers[s] * layer_s[s] + fixed_s[s] per
// micro-batch, fixed_s being its work besides the layers (the embedding on the first stage, the
// output layer and the loss on the last). The pipeline runs at its slowest stage's pace, so the
// layers go where every stage's time comes out equal: with no fixed work, in proportion to each
// stage's speed 1 / layer_s[s]. A stage whose share falls below |min_layers| keeps |min_layers|
// and the others share the rest the same way. The real shares are then rounded to whole layers
// summing to |num_layers| by largest remainder (Hamilton's method: each share rounded down, the
// layers left over to the largest fractions, ties to the earlier stage).
// REQUIRES: layer_s.size() == fixed_s.size() >= 1, every layer_s > 0, every fixed_s >= 0,
// min_layers >= 0, num_layers >= min_layers * layer_s.size().
std::vector<int64_t> BalancedStageLayers(const std::vector<double>& layer_s,
                                         const std::vector<double>& fixed_s, int64_t num_layers,
                                         int64_t min_layers);

}  // namespace loom

#endif  // LOOM_SPEC_LAYER_BALANCE_H_
