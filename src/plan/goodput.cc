#include "plan/goodput.h"

#include <cmath>

#include "core/checked.h"
#include "workload/model_states.h"

namespace loom {
namespace {

constexpr double kSecondsPerDay = 86400;
constexpr double kBytesPerGB = 1e9;  // the files' GB/s are 10^9 bytes per second

// The keys a goodput needs that |r| lacks, in the file's order.
std::vector<std::string> MissingKeys(const Reliability& r) {
  std::vector<std::string> missing;
  if (!r.checkpoint_write_GBps) missing.emplace_back(kCheckpointWriteKey);
  if (!r.checkpoint_read_GBps) missing.emplace_back(kCheckpointReadKey);
  if (!r.restart_s) missing.emplace_back(kRestartKey);
  return missing;
}

}  // namespace

double JobFailures::MtbfSeconds() const { return kSecondsPerDay / failures_per_day; }

JobFailures FailuresOfJob(const Reliability& r, int64_t gpus, int64_t gpus_per_node,
                          int64_t nics_per_node) {
  JobFailures f;
  f.gpus = gpus;
  f.nodes = (gpus + gpus_per_node - 1) / gpus_per_node;
  f.nics = f.nodes * nics_per_node;
  const double per_node = r.host_failures_per_1000_node_days +
                          r.network_failures_per_1000_node_days +
                          r.software_failures_per_1000_node_days;
  f.failures_per_day = (static_cast<double>(f.gpus) * r.gpu_failures_per_1000_gpu_days +
                        static_cast<double>(f.nodes) * per_node +
                        static_cast<double>(f.nics) * r.nic_failures_per_1000_nic_days) /
                       1000;
  return f;
}

double YoungInterval(double checkpoint_s, double mtbf_s) {
  return std::sqrt(2 * checkpoint_s * mtbf_s);
}

double DalyInterval(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2 * mtbf_s);
  return YoungInterval(checkpoint_s, mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - checkpoint_s;
}

double DalyGoodput(double interval_s, double checkpoint_s, double recovery_s, double mtbf_s) {
  // expm1 keeps the digits of e^x - 1 when failures are rare (x small).
  const double wall_per_work = mtbf_s * std::exp(recovery_s / mtbf_s) *
                               std::expm1((interval_s + checkpoint_s) / mtbf_s) / interval_s;
  return 1 / wall_per_work;
}

Result<int64_t> CheckpointBytes(int64_t params, const Strategy& strategy) {
  LOOM_ASSIGN_OR_RETURN(
      ModelStateBytes states,
      ModelStates(params, strategy.dtype, strategy.optimizer, strategy.grad_reduce_in_bf16));
  const std::optional<int64_t> bytes =
      (CheckedInt(states.weights) + CheckedInt(states.optimizer)).get();
  if (!bytes) {
    return Status::InvalidArgument("a checkpoint of " + std::to_string(params) +
                                   " parameters does not fit in 64-bit bytes");
  }
  return *bytes;
}

Result<GoodputEstimate> EstimateGoodput(const ClusterSpec& cluster, int64_t params,
                                        const Strategy& strategy) {
  if (!cluster.reliability) {
    return Status::InvalidArgument(
        ClusterRef(cluster) +
        ": has no \"reliability\" object, which a goodput needs; add one with the failure rates, "
        "checkpoint bandwidths and restart time of the cluster (hardware/README.md, "
        "hardware/clusters/dgx-h100.json has one)");
  }
  const Reliability& r = *cluster.reliability;
  GoodputEstimate e;
  e.failures = FailuresOfJob(r, strategy.WorldSize(), cluster.gpus_per_node,
                             cluster.inter_node.nics_per_node);
  e.mtbf_s = e.failures.MtbfSeconds();
  LOOM_ASSIGN_OR_RETURN(e.checkpoint_bytes, CheckpointBytes(params, strategy));
  e.missing = MissingKeys(r);
  const double bytes = static_cast<double>(e.checkpoint_bytes);
  if (r.checkpoint_write_GBps) {
    e.checkpoint_write_s = bytes / (*r.checkpoint_write_GBps * kBytesPerGB);
    e.young_interval_s = YoungInterval(*e.checkpoint_write_s, e.mtbf_s);
    e.daly_interval_s = DalyInterval(*e.checkpoint_write_s, e.mtbf_s);
  }
  if (r.checkpoint_read_GBps) e.checkpoint_read_s = bytes / (*r.checkpoint_read_GBps * kBytesPerGB);
  if (r.restart_s && e.checkpoint_read_s) e.recovery_s = *r.restart_s + *e.checkpoint_read_s;
  if (e.daly_interval_s && e.recovery_s) {
    e.goodput = DalyGoodput(*e.daly_interval_s, *e.checkpoint_write_s, *e.recovery_s, e.mtbf_s);
  }
  return e;
}

Result<GoodputEstimate> EstimateGoodput(const ModelSpec& model, const ClusterSpec& cluster,
                                        const Strategy& strategy) {
  LOOM_ASSIGN_OR_RETURN(ParameterCount count, CountParameters(model));
  return EstimateGoodput(cluster, count.total, strategy);
}

std::string MissingReliabilityKeyMessage(const ClusterSpec& cluster, const std::string& key) {
  std::string what;
  if (key == kCheckpointWriteKey) {
    what = "<aggregate GB/s the cluster's storage writes checkpoints at>";
  } else if (key == kCheckpointReadKey) {
    what = "<aggregate GB/s the cluster's storage reads a checkpoint back at>";
  } else {
    what =
        "<seconds from a failure to training again: detection, rescheduling, process start, "
        "communicator set-up; the checkpoint read is added by loom>";
  }
  return ClusterRef(cluster) + ": reliability." + key +
         " is missing, which the goodput needs; add \"" + key + "\": " + what +
         " with its source under \"sources\"" +
         (key == kRestartKey ? std::string(", or give loom the time with --restart-s") : "");
}

Status CheckGoodputInputs(const ClusterSpec& cluster) {
  if (!cluster.reliability) {
    return Status::InvalidArgument(
        ClusterRef(cluster) +
        ": has no \"reliability\" object, which --objective goodput needs; add one with the "
        "failure rates, checkpoint bandwidths and restart time of the cluster "
        "(hardware/README.md), or rank by another objective");
  }
  const std::vector<std::string> missing = MissingKeys(*cluster.reliability);
  if (missing.empty()) return Status::Ok();
  return Status::InvalidArgument(MissingReliabilityKeyMessage(cluster, missing.front()));
}

}  // namespace loom
