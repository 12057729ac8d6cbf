#ifndef LOOM_PROBE_GROUPS_H_
#define LOOM_PROBE_GROUPS_H_

#include <string>
#include <vector>

#include "cost/profile.h"

namespace loom {

// One rank's place in one ProbeGroup, derived from the host name of every rank. Several groups
// of a kind run at once (every host's intra_node group, every local index's rail), as the
// tensor- and data-parallel groups of a training job do.
struct GroupMembership {
  ProbeGroup group = ProbeGroup::kWorld;
  int color = 0;  // ranks with the same color form one communicator (ncclCommSplit's color)
  int key = 0;    // this rank's position in it (ncclCommSplit's key)
  int ranks = 1;  // ranks in this rank's communicator
  int nodes = 1;  // hosts those ranks span
};

// |rank|'s membership of |group| given |hosts| (one host name per rank, in rank order).
// intra_node: the ranks of |rank|'s host; rails: the ranks with |rank|'s local index (its position
// among the ranks of its host), one per host.
// REQUIRES: 0 <= rank < hosts.size().
GroupMembership MembershipOf(ProbeGroup group, const std::vector<std::string>& hosts, int rank);

// The groups worth measuring for |hosts|: world when it has 2 ranks or more; intra_node when some
// host has 2 ranks or more and there is more than one host (on one host it is world); rails when
// there are 2 hosts or more and some host has 2 ranks or more (with one rank per host it is
// world). Groups of one rank everywhere are left out: they have nothing to communicate.
std::vector<ProbeGroup> GroupsToMeasure(const std::vector<std::string>& hosts);

}  // namespace loom

#endif  // LOOM_PROBE_GROUPS_H_
