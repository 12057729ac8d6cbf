#include "program/step_timeline.h"

#include <gtest/gtest.h>

#include <vector>

namespace loom {
namespace {

TEST(StartSequence, OrdersByStartWithTiesToTheLowerTaskId) {
  const std::vector<SimTime> start = {SimTime::FromMicros(3), SimTime::FromMicros(1),
                                      SimTime::FromMicros(3), SimTime::FromMicros(0)};
  EXPECT_EQ(StartSequence(start), (std::vector<int32_t>{2, 1, 3, 0}));
}

}  // namespace
}  // namespace loom
