#include "probe/bench.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace loom {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(RotationCount, ExceedsTwiceTheL2) {
  EXPECT_EQ(RotationCount(10 * kMiB, 50 * kMiB, true), 11);  // 110 MiB > 100 MiB
  EXPECT_EQ(RotationCount(100 * kMiB, 50 * kMiB, true), 2);  // one copy only equals 2x L2
  EXPECT_EQ(RotationCount(1024 * kMiB, 50 * kMiB, true), 1);
}

TEST(RotationCount, IsAtMost64AndOneWhenOff) {
  EXPECT_EQ(RotationCount(1024, 50 << 20, true), 64);
  EXPECT_EQ(RotationCount(1024, 50 << 20, false), 1);
}

TEST(OperationsPerBatch, TwentyUpTo1MiBFiveUpTo256MiBThenOne) {
  EXPECT_EQ(OperationsPerBatch(8), 20);
  EXPECT_EQ(OperationsPerBatch(kMiB), 20);
  EXPECT_EQ(OperationsPerBatch(kMiB + 4), 5);
  EXPECT_EQ(OperationsPerBatch(256 * kMiB), 5);
  EXPECT_EQ(OperationsPerBatch(256 * kMiB + 4), 1);
  EXPECT_EQ(OperationsPerBatch(8192 * kMiB), 1);
}

}  // namespace
}  // namespace loom
