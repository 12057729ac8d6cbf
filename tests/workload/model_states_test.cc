#include "workload/model_states.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(BytesPerParameter, MixedPrecisionAdamIsSixteenBytes) {
  // ZeRO (Rajbhandari et al. 2020), Section 3.1: 2 + 2 + K with K = 12.
  StateBytesPerParam b = BytesPerParameter(Dtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(b.weight, 2);
  EXPECT_EQ(b.gradient, 2);
  EXPECT_EQ(b.optimizer, 12);
  EXPECT_EQ(b.Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp16, Optimizer::kAdam).Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp8, Optimizer::kAdam).Total(), 16);
}

TEST(BytesPerParameter, SmallerOptimizersHoldLess) {
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kSgd).Total(), 12);
  EXPECT_EQ(BytesPerParameter(Dtype::kBf16, Optimizer::kAdafactor).Total(), 8);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kAdam).Total(), 16);
  EXPECT_EQ(BytesPerParameter(Dtype::kFp32, Optimizer::kSgd).Total(), 12);
}

TEST(ModelStates, ScalesWithParameters) {
  Result<ModelStateBytes> s = ModelStates(70'553'706'496, Dtype::kBf16, Optimizer::kAdam);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->weights, 141'107'412'992);
  EXPECT_EQ(s->gradients, 141'107'412'992);
  EXPECT_EQ(s->optimizer, 846'644'477'952);
  EXPECT_EQ(s->Total(), 1'128'859'303'936);
}

TEST(ModelStates, OverflowIsAnError) {
  Result<ModelStateBytes> s = ModelStates(int64_t{1} << 61, Dtype::kBf16, Optimizer::kAdam);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("overflow 64-bit"), std::string::npos);
}

TEST(MinGpusForModelStates, RoundsUp) {
  ModelStateBytes s{10, 10, 60};
  EXPECT_EQ(MinGpusForModelStates(s, 80), 1);
  EXPECT_EQ(MinGpusForModelStates(s, 79), 2);
  EXPECT_EQ(MinGpusForModelStates(s, 8), 10);
}

}  // namespace
}  // namespace loom
