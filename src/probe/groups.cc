#include "probe/groups.h"

#include <algorithm>
#include <map>

#include "device/launcher.h"

namespace loom {
namespace {

// The index of every distinct host, in order of first appearance.
std::vector<int> HostIndices(const std::vector<std::string>& hosts) {
  std::map<std::string, int> index;
  std::vector<int> out;
  out.reserve(hosts.size());
  for (const std::string& host : hosts) {
    auto [it, added] = index.emplace(host, static_cast<int>(index.size()));
    out.push_back(it->second);
  }
  return out;
}

int CountNodes(const std::vector<int>& host_of, const std::vector<int>& members) {
  std::vector<int> seen;
  for (int r : members) seen.push_back(host_of[r]);
  std::sort(seen.begin(), seen.end());
  return static_cast<int>(std::unique(seen.begin(), seen.end()) - seen.begin());
}

}  // namespace

GroupMembership MembershipOf(ProbeGroup group, const std::vector<std::string>& hosts, int rank) {
  const std::vector<int> host_of = HostIndices(hosts);
  std::vector<int> members;
  GroupMembership m;
  m.group = group;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    const bool same = group == ProbeGroup::kWorld ? true
                      : group == ProbeGroup::kIntraNode
                          ? host_of[r] == host_of[rank]
                          : LocalIndex(hosts, r) == LocalIndex(hosts, rank);
    if (!same) continue;
    if (r == rank) m.key = static_cast<int>(members.size());
    members.push_back(r);
  }
  m.color = group == ProbeGroup::kWorld       ? 0
            : group == ProbeGroup::kIntraNode ? host_of[rank]
                                              : LocalIndex(hosts, rank);
  m.ranks = static_cast<int>(members.size());
  m.nodes = CountNodes(host_of, members);
  return m;
}

std::vector<ProbeGroup> GroupsToMeasure(const std::vector<std::string>& hosts) {
  const std::vector<int> host_of = HostIndices(hosts);
  const int nodes = host_of.empty() ? 0 : *std::max_element(host_of.begin(), host_of.end()) + 1;
  int widest_host = 0;
  for (int h = 0; h < nodes; ++h) {
    widest_host =
        std::max(widest_host, static_cast<int>(std::count(host_of.begin(), host_of.end(), h)));
  }
  std::vector<ProbeGroup> groups;
  if (hosts.size() >= 2) groups.push_back(ProbeGroup::kWorld);
  if (nodes >= 2 && widest_host >= 2) {
    groups.push_back(ProbeGroup::kIntraNode);
    groups.push_back(ProbeGroup::kRails);
  }
  return groups;
}

}  // namespace loom
