#ifndef LOOM_PLAN_GOODPUT_H_
#define LOOM_PLAN_GOODPUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/reliability.h"
#include "spec/strategy.h"

namespace loom {

// The parts a job of |gpus| GPUs runs on and how often they stop it. A synchronous job stops when
// any of its parts fails, so with independent exponential failures its rate is the sum of the
// component rates times the counts.
struct JobFailures {
  int64_t gpus = 0;
  int64_t nodes = 0;  // ceil(gpus / gpus_per_node): a node the job touches is one it stops with
  int64_t nics = 0;   // nodes * nics_per_node
  double failures_per_day = 0;

  // Mean time between the job's failures, 86400 / failures_per_day.
  double MtbfSeconds() const;
};

// REQUIRES: gpus, gpus_per_node, nics_per_node >= 1.
JobFailures FailuresOfJob(const Reliability& reliability, int64_t gpus, int64_t gpus_per_node,
                          int64_t nics_per_node);

// Young's first-order optimum interval of compute between checkpoints, sqrt(2 * delta * M), for a
// checkpoint that takes |checkpoint_s| (delta) and a mean time between failures |mtbf_s| (M)
// (J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9),
// 1974). REQUIRES: both > 0.
double YoungInterval(double checkpoint_s, double mtbf_s);

// Daly's higher-order optimum (J. T. Daly, "A higher order estimate of the optimum checkpoint
// interval for restart dumps", FGCS 22(3), 2006):
//   tau = sqrt(2 delta M) * [1 + (1/3) sqrt(delta / (2M)) + (1/9) (delta / (2M))] - delta
// for delta < 2M, else tau = M. REQUIRES: both > 0.
double DalyInterval(double checkpoint_s, double mtbf_s);

// The fraction of wall time that advances training (T_s / T_w) under exponential failures, with
// Daly's wall time (2006) for |interval_s| (tau) of compute between checkpoints of
// |checkpoint_s| (delta), |recovery_s| (R: restart plus checkpoint read) after each failure:
//   T_w = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau.
// It tends to tau / (tau + delta) as failures vanish and falls as M does.
// REQUIRES: interval_s, mtbf_s > 0; checkpoint_s, recovery_s >= 0.
double DalyGoodput(double interval_s, double checkpoint_s, double recovery_s, double mtbf_s);

// Bytes one checkpoint of |params| parameters holds for |strategy|: the weights and the optimizer
// states (fp32 master weights included) of the whole model, as BytesPerParameter counts them
// (spec/state_bytes.h); gradients are not saved. Errors: InvalidArgument on 64-bit overflow.
Result<int64_t> CheckpointBytes(int64_t params, const Strategy& strategy);

// What a job loses to failures, and what of it the cluster file lets loom say.
struct GoodputEstimate {
  JobFailures failures;
  double mtbf_s = 0;
  int64_t checkpoint_bytes = 0;
  // Unset where a reliability key they need is missing (|missing|).
  std::optional<double> checkpoint_write_s;  // checkpoint_bytes / checkpoint_write_GBps
  std::optional<double> checkpoint_read_s;   // checkpoint_bytes / checkpoint_read_GBps
  std::optional<double> young_interval_s;
  std::optional<double> daly_interval_s;
  std::optional<double> recovery_s;  // restart_s + checkpoint_read_s
  std::optional<double> goodput;     // DalyGoodput at the Daly interval
  // The reliability keys left out of the cluster file that the unset values need, in the file's
  // order ("checkpoint_write_GBps", "checkpoint_read_GBps", "restart_s").
  std::vector<std::string> missing;
};

// The estimate for |strategy| (its GPU count, dtype and optimizer) of a model of |params|
// parameters on |cluster|, checkpointing at the Daly interval. Storage is taken as the bottleneck
// of a checkpoint (the file's aggregate bandwidth, whatever the job's size). Errors:
// InvalidArgument naming the cluster file when it has no "reliability" object; those of
// CheckpointBytes.
Result<GoodputEstimate> EstimateGoodput(const ClusterSpec& cluster, int64_t params,
                                        const Strategy& strategy);
// The same with the model's parameter count (CountParameters).
Result<GoodputEstimate> EstimateGoodput(const ModelSpec& model, const ClusterSpec& cluster,
                                        const Strategy& strategy);

// OK when |cluster|'s reliability object holds every key a goodput needs; else InvalidArgument
// naming the cluster file, the first missing key and how to add it.
Status CheckGoodputInputs(const ClusterSpec& cluster);

// "cluster.json: reliability.restart_s is missing, which the goodput needs; add ..." for |key|.
std::string MissingReliabilityKeyMessage(const ClusterSpec& cluster, const std::string& key);

}  // namespace loom

#endif  // LOOM_PLAN_GOODPUT_H_
