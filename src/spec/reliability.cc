#include "spec/reliability.h"

#include <string>

namespace loom {
namespace {

// A rate of 10^6 interruptions per 1000 component-days is one every 86 ms: a typing or unit
// error. Meta's Llama 3 fleet saw about 0.3 per 1000 GPU-days (tests/reference/).
constexpr NumberRange kRatePer1000Days{0, 1e6};
// Storage from 10 MB/s to 10^3 TB/s; Meta's Tectonic, which held Llama 3's checkpoints, sustains
// 2 TB/s (Llama 3 Herd of Models, Section 3.3.1).
constexpr NumberRange kStorageGBps{1e-2, 1e6};
// Up to about eleven days from a failure to training again.
constexpr NumberRange kRestartS{0, 1e6};

// A required rate >= 0; a missing one says what it counts, since 0 is a claim, not a default.
double Rate(JsonReader& reader, std::string_view key, std::string_view counts) {
  if (!reader.Has(key)) {
    reader.Allow(key);
    reader.AddError(key, "is missing; add \"" + std::string(key) + "\": <interruptions of " +
                             std::string(counts) +
                             " per 1000 of its days, >= 0> (see hardware/README.md)");
    return 0;
  }
  return reader.OptionalNonNegativeNumber(key, kRatePer1000Days).value_or(0);
}

}  // namespace

Reliability ReadReliability(JsonReader& reader) {
  Reliability r;
  r.gpu_failures_per_1000_gpu_days = Rate(reader, "gpu_failures_per_1000_gpu_days", "one GPU");
  r.host_failures_per_1000_node_days =
      Rate(reader, "host_failures_per_1000_node_days", "one node's host");
  r.nic_failures_per_1000_nic_days = Rate(reader, "nic_failures_per_1000_nic_days", "one NIC");
  r.network_failures_per_1000_node_days = Rate(reader, "network_failures_per_1000_node_days",
                                               "the network's switches and cables, per node");
  r.software_failures_per_1000_node_days =
      Rate(reader, "software_failures_per_1000_node_days", "the software stack, per node");
  const double total = r.gpu_failures_per_1000_gpu_days + r.host_failures_per_1000_node_days +
                       r.nic_failures_per_1000_nic_days + r.network_failures_per_1000_node_days +
                       r.software_failures_per_1000_node_days;
  if (total == 0 && reader.Has("gpu_failures_per_1000_gpu_days")) {
    reader.AddError("",
                    "has every failure rate 0, which no fleet has measured and which leaves no "
                    "time between failures to plan checkpoints for; give the measured rates, or "
                    "remove the object");
  }
  r.source = reader.String("source");
  if (reader.Has("source") && r.source.empty()) {
    reader.AddError("source", "is empty; say where the rates come from");
  }
  r.checkpoint_write_GBps = reader.OptionalPositiveNumber(kCheckpointWriteKey, kStorageGBps);
  r.checkpoint_read_GBps = reader.OptionalPositiveNumber(kCheckpointReadKey, kStorageGBps);
  r.restart_s = reader.OptionalNonNegativeNumber(kRestartKey, kRestartS);
  return r;
}

}  // namespace loom
