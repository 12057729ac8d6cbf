#include "device/launcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom {
namespace {

TEST(LocalIndex, CountsTheRanksOfTheSameHostBeforeTheRank) {
  const std::vector<std::string> hosts = {"a", "b", "a", "b", "a"};
  EXPECT_EQ(LocalIndex(hosts, 0), 0);
  EXPECT_EQ(LocalIndex(hosts, 1), 0);
  EXPECT_EQ(LocalIndex(hosts, 2), 1);
  EXPECT_EQ(LocalIndex(hosts, 3), 1);
  EXPECT_EQ(LocalIndex(hosts, 4), 2);
}

TEST(SingleProcessLauncher, IsRankZeroOfOneOnItsHost) {
  SingleProcessLauncher launcher("node7");
  EXPECT_EQ(launcher.Rank(), 0);
  EXPECT_EQ(launcher.Size(), 1);
  EXPECT_EQ(launcher.Hosts(), std::vector<std::string>{"node7"});
  Result<double> max = launcher.MaxOverRanks(2.5);
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, 2.5);
  int value = 3;
  EXPECT_TRUE(launcher.Broadcast(&value, sizeof value, 0).ok());
  EXPECT_EQ(value, 3);
  EXPECT_TRUE(launcher.Barrier().ok());
}

}  // namespace
}  // namespace loom
