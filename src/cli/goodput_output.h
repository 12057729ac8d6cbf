#ifndef LOOM_CLI_GOODPUT_OUTPUT_H_
#define LOOM_CLI_GOODPUT_OUTPUT_H_

#include <optional>
#include <ostream>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "plan/goodput.h"
#include "spec/cluster.h"

namespace loom {

// `loom simulate`'s goodput section, for a cluster with a "reliability" object: the job's parts and
// failures per day, its MTBF, the checkpoint's bytes and write and read times, Young's and Daly's
// intervals, the expected goodput and the effective tokens/s (|tokens_per_s| x goodput). A value
// the file's keys cannot give is named by the key it misses.
void PrintGoodput(const GoodputEstimate& estimate, double tokens_per_s, const ClusterSpec& cluster,
                  std::ostream& out);

// The same as JSON (simulate's "goodput" key): {"gpus", "nodes", "nics", "failures_per_day",
// "mtbf_s", "checkpoint_bytes", "checkpoint_write_s", "checkpoint_read_s", "young_interval_s",
// "daly_interval_s", "recovery_s", "goodput", "effective_tokens_per_s", "missing_keys",
// "source"}: times in seconds, goodput a fraction, null where a key is missing (named in
// "missing_keys" as "reliability.<key>").
nlohmann::ordered_json GoodputJson(const GoodputEstimate& estimate, double tokens_per_s,
                                   const ClusterSpec& cluster);

// The help of --restart-s, which simulate and plan share.
inline constexpr char kRestartHelp[] =
    "Seconds from a failure to training again (detection, rescheduling, process start, "
    "communicator set-up; loom adds the checkpoint read), in place of the cluster file's "
    "reliability.restart_s: what the goodput needs when the file has none";

// |cluster| with --restart-s (when given) as its reliability.restart_s. Errors: InvalidArgument,
// naming the file, when the cluster has no "reliability" object for the time to complete.
Status ApplyRestartTime(std::optional<double> restart_s, ClusterSpec& cluster);

}  // namespace loom

#endif  // LOOM_CLI_GOODPUT_OUTPUT_H_
