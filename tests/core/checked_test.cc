#include "core/checked.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(CheckedInt, ExactBelowTheLimit) {
  CheckedInt v = CheckedInt(8192) * 28672 * 3 + 8192;
  ASSERT_FALSE(v.overflowed());
  EXPECT_EQ(v.value(), 704651264);
}

TEST(CheckedInt, MultiplicationOverflowIsSticky) {
  CheckedInt big = CheckedInt(int64_t{1} << 40) * (int64_t{1} << 40);
  EXPECT_TRUE(big.overflowed());
  EXPECT_TRUE((big + 1).overflowed());
  EXPECT_TRUE((big * 0).overflowed());
  EXPECT_FALSE(big.get().has_value());
}

TEST(CheckedInt, AdditionOverflowIsDetected) {
  CheckedInt v = CheckedInt(INT64_MAX) + 1;
  EXPECT_TRUE(v.overflowed());
  CheckedInt w = INT64_MAX;
  w += 0;
  EXPECT_EQ(w.get(), INT64_MAX);
}

}  // namespace
}  // namespace loom
