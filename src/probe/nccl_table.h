#ifndef LOOM_PROBE_NCCL_TABLE_H_
#define LOOM_PROBE_NCCL_TABLE_H_

#include <string>
#include <string_view>
#include <vector>

#include "cost/profile.h"

namespace loom {

// The nccl-tests binary that measures |collective|: "all_reduce_perf", "alltoall_perf", ...
std::string_view NcclTestsBinary(ProfiledCollective collective);

// |rows| (one collective over one group, smallest size first) as nccl-tests prints them: the
// "Collective test starting" line, one "#  Rank" line per host of |hosts| (the group's ranks, so
// that readers count ranks and nodes) naming |device_name|, the three-line column header, one row
// per size with out-of-place and in-place time, algbw and busbw (#wrong is "N/A": loom probe does
// not check results, as nccl-tests with -c 0), "# Avg bus bandwidth" (the mean busbw of every
// timing, as nccl-tests computes it) and the "concluded" line. ParseNcclTestsText reads it back.
std::string NcclTestsTable(const std::vector<CollectiveSample>& rows,
                           const std::vector<std::string>& hosts, const std::string& device_name);

}  // namespace loom

#endif  // LOOM_PROBE_NCCL_TABLE_H_
