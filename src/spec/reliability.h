#ifndef LOOM_SPEC_RELIABILITY_H_
#define LOOM_SPEC_RELIABILITY_H_

#include <optional>
#include <string>
#include <string_view>

#include "core/json_reader.h"

namespace loom {

// How often a cluster's parts stop a training job, and what a restart costs: the cluster file's
// optional "reliability" object. A synchronous job stops when any part it runs on fails, so each
// rate is per component of one kind and the job's rate is their sum over the parts it uses
// (plan/goodput.h). Rates count interruptions per 1000 component-days: hardware/clusters/ derive
// them from a published fleet's interruptions over its component-days (tests/reference/).
struct Reliability {
  // Interruptions per 1000 days of one GPU: the GPU, its HBM and SRAM, its system processor,
  // silent data corruption, its thermal interface.
  double gpu_failures_per_1000_gpu_days = 0;
  // Per 1000 days of one node (host): CPU, system memory, power supply, SSD, chassis, boards and
  // unplanned host maintenance.
  double host_failures_per_1000_node_days = 0;
  // Per 1000 days of one NIC (the cluster has inter_node.nics_per_node of them per node).
  double nic_failures_per_1000_nic_days = 0;
  // Switches and cables of the network, per 1000 days of one node attached to it.
  double network_failures_per_1000_node_days = 0;
  // Software: bugs, collective timeouts, dependencies, per 1000 days of one node of the job.
  double software_failures_per_1000_node_days = 0;
  // Where the rates come from.
  std::string source;
  // Aggregate bandwidth of the storage checkpoints are written to and read from, GB/s (10^9
  // bytes per second), and the seconds from a failure to training again (detection, rescheduling,
  // process start and communicator set-up) without the checkpoint read, which loom computes.
  // Optional in the file, each: the goodput they decide is reported missing without them.
  std::optional<double> checkpoint_write_GBps;
  std::optional<double> checkpoint_read_GBps;
  std::optional<double> restart_s;
};

// The file's keys, as hardware/README.md documents them and messages name them.
inline constexpr std::string_view kCheckpointWriteKey = "checkpoint_write_GBps";
inline constexpr std::string_view kCheckpointReadKey = "checkpoint_read_GBps";
inline constexpr std::string_view kRestartKey = "restart_s";

// Reads the "reliability" object that |reader| holds; problems are recorded in |reader| (every
// rate required, >= 0, not all 0; "source" required; bandwidths > 0; restart >= 0).
Reliability ReadReliability(JsonReader& reader);

}  // namespace loom

#endif  // LOOM_SPEC_RELIABILITY_H_
