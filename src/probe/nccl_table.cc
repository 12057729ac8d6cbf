#include "probe/nccl_table.h"

#include "core/formatted.h"

namespace loom {
namespace {

// nccl-tests prints times with 2 decimals below 10 ms and bandwidths with 2 decimals.
std::string Timing(const CollectiveTiming& t) {
  return Formatted(t.time_us < 1e4 ? " %8.2f %7.2f %7.2f %6s" : " %8.0f %7.2f %7.2f %6s", t.time_us,
                   t.algbw_GBps, t.busbw_GBps, "N/A");
}

}  // namespace

std::string_view NcclTestsBinary(ProfiledCollective collective) {
  switch (collective) {
    case ProfiledCollective::kAllReduce:
      return "all_reduce_perf";
    case ProfiledCollective::kAllGather:
      return "all_gather_perf";
    case ProfiledCollective::kReduceScatter:
      return "reduce_scatter_perf";
    case ProfiledCollective::kAllToAll:
      return "alltoall_perf";
    case ProfiledCollective::kBroadcast:
      return "broadcast_perf";
    case ProfiledCollective::kSendRecv:
      return "sendrecv_perf";
  }
  return "";
}

std::string NcclTestsTable(const std::vector<CollectiveSample>& rows,
                           const std::vector<std::string>& hosts, const std::string& device_name) {
  if (rows.empty()) return "";
  const CollectiveSample& first = rows.front();
  const std::string binary(NcclTestsBinary(first.collective));
  std::string text = "# Collective test starting: " + binary + "\n";
  text += "# loom probe, group " + std::string(kProbeGroupNames.Name(first.group)) + ": " +
          std::to_string(first.ranks) + " ranks on " + std::to_string(first.nodes) +
          " node(s)\n#\n";
  text += "# Using devices\n";
  for (size_t r = 0; r < hosts.size(); ++r) {
    text += Formatted("#  Rank %2zu Group  0 on %s device %2zu [loom] %s\n", r, hosts[r].c_str(), r,
                      device_name.c_str());
  }
  text += "#\n";
  text += Formatted("# %10s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "", "", "", "", "",
                    "", "out-of-place", "", "", "", "in-place", "", "");
  text += Formatted("# %10s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "size", "count",
                    "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                    "busbw", "#wrong");
  text +=
      Formatted("# %10s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "(B)", "(elements)",
                "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  double busbw_sum = 0;
  for (const CollectiveSample& row : rows) {
    const int root = row.collective == ProfiledCollective::kBroadcast ? 0 : -1;
    text += Formatted("  %10lld %13lld %9s %7s %7d", static_cast<long long>(row.size_bytes),
                      static_cast<long long>(row.count), row.type.c_str(), row.redop.c_str(), root);
    text += Timing(row.out_of_place) + Timing(row.in_place) + "\n";
    busbw_sum += row.out_of_place.busbw_GBps + row.in_place.busbw_GBps;
  }
  text += Formatted("# Avg bus bandwidth    : %g \n#\n",
                    busbw_sum / (2.0 * static_cast<double>(rows.size())));
  text += "# Collective test concluded: " + binary + "\n";
  return text;
}

}  // namespace loom
