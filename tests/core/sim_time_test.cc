#include "core/sim_time.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(SimTime, DefaultIsZero) {
  EXPECT_EQ(SimTime().nanos(), 0);
  EXPECT_EQ(SimTime::Zero(), SimTime::FromNanos(0));
}

TEST(SimTime, ConvertsUnitsExactly) {
  EXPECT_EQ(SimTime::FromMicros(10.0).nanos(), 10000);
  EXPECT_EQ(SimTime::FromSeconds(1.5).nanos(), 1500000000);
  EXPECT_DOUBLE_EQ(SimTime::FromNanos(2500).ToMicros(), 2.5);
  EXPECT_DOUBLE_EQ(SimTime::FromNanos(2500000000).ToSeconds(), 2.5);
}

TEST(SimTime, RoundsToTheNearestNanosecond) {
  EXPECT_EQ(SimTime::FromMicros(0.0014).nanos(), 1);
  EXPECT_EQ(SimTime::FromMicros(0.0016).nanos(), 2);
  EXPECT_EQ(SimTime::FromMicros(0.0025).nanos(), 3);  // halves away from zero
  EXPECT_EQ(SimTime::FromMicros(-0.0025).nanos(), -3);
  EXPECT_EQ(SimTime::FromMicros(0.0004999).nanos(), 0);
  EXPECT_EQ(SimTime::FromSeconds(3.0000000004).nanos(), 3000000000);
}

TEST(SimTime, IsUsableAtCompileTime) {
  constexpr SimTime kLatency = SimTime::FromMicros(4.5);
  static_assert(kLatency.nanos() == 4500);
  static_assert(kLatency + kLatency == SimTime::FromNanos(9000));
  EXPECT_EQ(kLatency.nanos(), 4500);
}

TEST(SimTime, ArithmeticAndOrdering) {
  SimTime t = SimTime::FromNanos(100);
  t += SimTime::FromNanos(50);
  EXPECT_EQ(t.nanos(), 150);
  t -= SimTime::FromNanos(20);
  EXPECT_EQ(t.nanos(), 130);
  EXPECT_EQ((t - SimTime::FromNanos(200)).nanos(), -70);
  EXPECT_LT(SimTime::FromNanos(1), SimTime::FromNanos(2));
  EXPECT_GE(SimTime::FromNanos(2), SimTime::FromNanos(2));
  EXPECT_NE(SimTime::FromNanos(1), SimTime::FromNanos(2));
  EXPECT_EQ(Max(SimTime::FromNanos(3), SimTime::FromNanos(7)).nanos(), 7);
  EXPECT_EQ(Min(SimTime::FromNanos(3), SimTime::FromNanos(7)).nanos(), 3);
}

TEST(SimTime, LargeTimesKeepNanosecondResolution) {
  // One simulated hour is far below the int64 limit and still exact to the nanosecond.
  const SimTime hour = SimTime::FromSeconds(3600.0);
  EXPECT_EQ((hour + SimTime::FromNanos(1)).nanos(), 3600000000001);
}

TEST(SimTime, FormatsMicrosWithThreeExactDecimals) {
  EXPECT_EQ(FormatMicros(SimTime::FromNanos(12345)), "12.345");
  EXPECT_EQ(FormatMicros(SimTime::FromNanos(7)), "0.007");
  EXPECT_EQ(FormatMicros(SimTime::FromNanos(-500)), "-0.500");
  EXPECT_EQ(FormatMicros(SimTime::FromSeconds(3600.0)), "3600000000.000");
}

// A rate of zero or garbage upstream turns into an infinite or NaN time: it saturates instead of
// wrapping into a negative span, and sums and products of saturated times stay saturated.
TEST(SimTime, HugeInfiniteAndNanTimesSaturate) {
  EXPECT_EQ(SimTime::FromSeconds(1e300), SimTime::Forever());
  EXPECT_EQ(SimTime::FromSeconds(std::numeric_limits<double>::infinity()), SimTime::Forever());
  EXPECT_EQ(SimTime::FromSeconds(std::nan("")), SimTime::Forever());
  EXPECT_EQ(SimTime::FromMicros(-1e300), SimTime() - SimTime::Forever());
  EXPECT_EQ(SimTime::Forever() + SimTime::Forever(), SimTime::Forever());
  EXPECT_EQ(SimTime::Forever() + SimTime::FromSeconds(1), SimTime::Forever());
  EXPECT_EQ(SimTime::Forever() * 1000, SimTime::Forever());
  EXPECT_EQ(SimTime::FromSeconds(2) * 3, SimTime::FromSeconds(6));
  SimTime sum;
  for (int i = 0; i < 10; ++i) sum += SimTime::FromSeconds(1e9);
  EXPECT_EQ(sum, SimTime::Forever());
  EXPECT_GT(sum, SimTime());
}

}  // namespace
}  // namespace loom
