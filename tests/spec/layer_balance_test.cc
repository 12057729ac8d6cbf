#include "spec/layer_balance.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace loom {
namespace {

using Layers = std::vector<int64_t>;

// Stage 0 runs a layer in 1 s, stage 1 in 2 s: the times are equal at 16 and 8 layers (16 s each).
TEST(BalancedStageLayers, TwiceAsFastAStageTakesTwiceTheLayers) {
  EXPECT_EQ(BalancedStageLayers({1, 2}, {0, 0}, 24, 1), (Layers{16, 8}));
  EXPECT_EQ(BalancedStageLayers({2, 1}, {0, 0}, 24, 1), (Layers{8, 16}));
}

// Equal speeds split evenly; 4 stages of 1 s and 4 of 2 s share 36 layers as 6 and 3.
TEST(BalancedStageLayers, GroupsOfStagesShareInProportionToSpeed) {
  EXPECT_EQ(BalancedStageLayers({1, 1, 1}, {0, 0, 0}, 12, 1), (Layers{4, 4, 4}));
  EXPECT_EQ(BalancedStageLayers({1, 1, 1, 1, 2, 2, 2, 2}, std::vector<double>(8, 0), 36, 1),
            (Layers{6, 6, 6, 6, 3, 3, 3, 3}));
}

// 25 layers at speeds 2:1 are 16.67 and 8.33: rounded down to 16 and 8, the layer left goes to the
// larger fraction (0.67, stage 0).
TEST(BalancedStageLayers, LargestRemainderPlacesTheLayersLeftOver) {
  EXPECT_EQ(BalancedStageLayers({1, 2}, {0, 0}, 25, 1), (Layers{17, 8}));
  // 10 layers over 3 equal stages: 3.33 each; the one left goes to the first of the equal
  // fractions.
  EXPECT_EQ(BalancedStageLayers({1, 1, 1}, {0, 0, 0}, 10, 1), (Layers{4, 3, 3}));
}

// Fixed work counts like layers: the last stage's 2 s of loss leave it 2 layers fewer. Equal ends
// at T = (10 + 2) / 2 = 6: stage 0 takes 6 layers, stage 1 (6 - 2) / 1 = 4.
TEST(BalancedStageLayers, FixedWorkOfTheEndStagesTakesTheirPlaceOfLayers) {
  EXPECT_EQ(BalancedStageLayers({1, 1}, {0, 2}, 10, 1), (Layers{6, 4}));
  EXPECT_EQ(BalancedStageLayers({1, 1, 1}, {1, 0, 2}, 12, 1), (Layers{4, 5, 3}));
}

// A stage 100 times slower would get 0.1 of 10 layers: it keeps the minimum of 1, and the other
// takes the other 9.
TEST(BalancedStageLayers, EveryStageKeepsTheMinimum) {
  EXPECT_EQ(BalancedStageLayers({1, 100}, {0, 0}, 10, 1), (Layers{9, 1}));
  EXPECT_EQ(BalancedStageLayers({1, 100, 100}, {0, 0, 0}, 10, 2), (Layers{6, 2, 2}));
  EXPECT_EQ(BalancedStageLayers({1, 1}, {0, 0}, 2, 1), (Layers{1, 1}));
}

}  // namespace
}  // namespace loom
