#include "cost/profile_collectives.h"

#include <optional>
#include <string>

namespace loom {
namespace {

std::optional<NcclTest> TestOf(ProfiledCollective collective) {
  switch (collective) {
    case ProfiledCollective::kAllReduce:
      return NcclTest::kAllReduce;
    case ProfiledCollective::kAllGather:
      return NcclTest::kAllGather;
    case ProfiledCollective::kReduceScatter:
      return NcclTest::kReduceScatter;
    case ProfiledCollective::kAllToAll:
      return NcclTest::kAllToAll;
    case ProfiledCollective::kSendRecv:
      return NcclTest::kSendRecv;
    case ProfiledCollective::kBroadcast:
      return std::nullopt;
  }
  return std::nullopt;
}

NcclTestsTiming Timing(const CollectiveTiming& t) {
  return {t.time_us, t.algbw_GBps, t.busbw_GBps};
}

}  // namespace

std::vector<NcclTestsRun> NcclTestsRunsOf(const Profile& profile) {
  std::vector<NcclTestsRun> runs;
  std::vector<std::pair<ProfiledCollective, ProbeGroup>> keys;
  for (size_t i = 0; i < profile.collectives.size(); ++i) {
    const CollectiveSample& s = profile.collectives[i];
    const std::optional<NcclTest> test = TestOf(s.collective);
    if (!test) continue;
    size_t run = 0;
    while (run < keys.size() && keys[run] != std::make_pair(s.collective, s.group)) ++run;
    if (run == keys.size()) {
      keys.emplace_back(s.collective, s.group);
      NcclTestsRun r;
      r.file = profile.file + " (" + std::string(kProbeGroupNames.Name(s.group)) + ")";
      r.test = *test;
      r.ranks = s.ranks;
      r.nodes = s.nodes;
      r.gpu_name = profile.device.name;
      runs.push_back(std::move(r));
    }
    NcclTestsRow row;
    row.size_bytes = s.size_bytes;
    row.count = s.count;
    row.type = s.type;
    row.redop = s.redop;
    row.out_of_place = Timing(s.out_of_place);
    row.in_place = Timing(s.in_place);
    row.where = profile.file + ": collectives[" + std::to_string(i) + "]";
    runs[run].rows.push_back(std::move(row));
  }
  return runs;
}

}  // namespace loom
