#include "probe/groups.h"

#include <gtest/gtest.h>

#include "device/launcher.h"

namespace loom {
namespace {

const std::vector<std::string> kTwoNodes = {"a", "a", "a", "a", "b", "b", "b", "b"};

TEST(MembershipOf, WorldHoldsEveryRank) {
  GroupMembership m = MembershipOf(ProbeGroup::kWorld, kTwoNodes, 5);
  EXPECT_EQ(m.ranks, 8);
  EXPECT_EQ(m.nodes, 2);
  EXPECT_EQ(m.key, 5);
  EXPECT_EQ(m.color, 0);
}

TEST(MembershipOf, IntraNodeIsTheRanksOfOneHost) {
  GroupMembership m = MembershipOf(ProbeGroup::kIntraNode, kTwoNodes, 5);
  EXPECT_EQ(m.ranks, 4);
  EXPECT_EQ(m.nodes, 1);
  EXPECT_EQ(m.key, 1);
  EXPECT_EQ(m.color, 1);
  EXPECT_NE(MembershipOf(ProbeGroup::kIntraNode, kTwoNodes, 2).color, m.color);
}

TEST(MembershipOf, RailsAreOneRankPerHostWithTheSameLocalIndex) {
  GroupMembership m = MembershipOf(ProbeGroup::kRails, kTwoNodes, 6);
  EXPECT_EQ(m.ranks, 2);
  EXPECT_EQ(m.nodes, 2);
  EXPECT_EQ(m.key, 1);
  EXPECT_EQ(m.color, 2);
  EXPECT_EQ(MembershipOf(ProbeGroup::kRails, kTwoNodes, 2).color, m.color);
  EXPECT_EQ(LocalIndex(kTwoNodes, 6), 2);
}

TEST(MembershipOf, InterleavedHostsAreGroupedByName) {
  const std::vector<std::string> hosts = {"a", "b", "a", "b"};
  EXPECT_EQ(MembershipOf(ProbeGroup::kIntraNode, hosts, 2).key, 1);
  EXPECT_EQ(MembershipOf(ProbeGroup::kRails, hosts, 3).key, 1);
  EXPECT_EQ(LocalIndex(hosts, 3), 1);
}

TEST(GroupsToMeasure, LeavesOutGroupsThatAreWorldOrSingleRanks) {
  EXPECT_EQ(GroupsToMeasure({"a"}), std::vector<ProbeGroup>{});
  EXPECT_EQ(GroupsToMeasure({"a", "a", "a", "a"}), std::vector<ProbeGroup>{ProbeGroup::kWorld});
  EXPECT_EQ(GroupsToMeasure({"a", "b"}), std::vector<ProbeGroup>{ProbeGroup::kWorld});
  EXPECT_EQ(
      GroupsToMeasure(kTwoNodes),
      (std::vector<ProbeGroup>{ProbeGroup::kWorld, ProbeGroup::kIntraNode, ProbeGroup::kRails}));
}

}  // namespace
}  // namespace loom
