#include "cost/offload_model.h"

#include <limits>
#include <sstream>
#include <string>

#include "core/checked.h"

namespace loom {
namespace {

// SimTime holds whole nanoseconds in 64 bits: about 9.2e9 seconds.
constexpr double kMaxSeconds = 9e9;

std::string ClusterFile(const ClusterSpec& cluster) {
  return cluster.file.empty() ? "the cluster file" : cluster.file;
}

std::string ShowQuantity(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

Status CheckPcie(const ClusterSpec& cluster) {
  if (cluster.host.pcie_bandwidth_GBps > 0) return Status::Ok();
  return Status::InvalidArgument(
      ClusterFile(cluster) + ": host.pcie_bandwidth_GBps is " +
      ShowQuantity(cluster.host.pcie_bandwidth_GBps) +
      "; offload copies over PCIe: set it to the GPU-to-host bandwidth per "
      "GPU and direction (PCIe Gen5 x16: 63.0)");
}

// |bytes| at |GBps|, or an error naming |what| when the time does not fit in a SimTime.
Result<SimTime> TransferTime(double bytes, double GBps, const std::string& what) {
  const double seconds = bytes / (GBps * 1e9);
  if (!(seconds < kMaxSeconds)) {
    return Status::InvalidArgument(
        what + " takes " + ShowQuantity(seconds) +
        " s, past the simulator's clock range; check the parameter count");
  }
  return SimTime::FromSeconds(seconds);
}

double Total(const MemoryShape& m) {
  return static_cast<double>(m.bytes_read) + static_cast<double>(m.bytes_written);
}

}  // namespace

MemoryShape CpuOptimizerStepTraffic(int64_t params, const StateBytesPerParam& bytes,
                                    Optimizer optimizer) {
  const int64_t g = bytes.gradient;
  int64_t read = 0, written = 0;
  switch (optimizer) {
    case Optimizer::kAdam:
      read = 12 + g;
      written = 12;
      break;
    case Optimizer::kSgd:
      read = 8 + g;
      written = 8;
      break;
    case Optimizer::kAdafactor:
      read = 4 + 2 * g;
      written = 4;
      break;
  }
  // Mixed precision keeps an fp32 master apart from the model weight (BytesPerParameter counts it
  // in the optimizer states): the step also writes the model's copy.
  const bool mixed_precision = bytes.weight < 4;
  if (mixed_precision) written += bytes.weight;
  const CheckedInt r = CheckedInt(params) * read, w = CheckedInt(params) * written;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return MemoryShape{r.overflowed() ? kMax : r.value(), w.overflowed() ? kMax : w.value()};
}

Result<OffloadCost> CostOptimizerOffload(const ClusterSpec& cluster, const Strategy& strategy,
                                         int64_t shard_params) {
  if (strategy.offload == Offload::kNone) return OffloadCost{};
  if (shard_params < 0) {
    return Status::InvalidArgument("offload of " + std::to_string(shard_params) +
                                   " parameters: a rank's shard cannot be negative");
  }
  LOOM_RETURN_IF_ERROR(CheckPcie(cluster));
  if (!cluster.host.memory_bandwidth_GBps) {
    return Status::InvalidArgument(ClusterFile(cluster) +
                                   ": host.memory_bandwidth_GBps is missing; --offload " +
                                   std::string(kOffloadNames.Name(strategy.offload)) +
                                   " steps the optimizer on the CPUs, bound by their DRAM "
                                   "bandwidth: add \"memory_bandwidth_GBps\": <GB/s "
                                   "of the node's CPU memory, all sockets> to \"host\" "
                                   "(hardware/clusters/dgx-h100.json has 614.4)");
  }
  if (cluster.gpus_per_node < 1) {
    return Status::InvalidArgument(
        ClusterFile(cluster) + ": gpus_per_node is " + std::to_string(cluster.gpus_per_node) +
        "; the GPUs of a node share its CPU memory bandwidth: set it to at least 1");
  }
  const StateBytesPerParam bytes = BytesPerParameter(strategy);
  const double params = static_cast<double>(shard_params);
  const double pcie_GBps = cluster.host.pcie_bandwidth_GBps;
  const double cpu_GBps =
      *cluster.host.memory_bandwidth_GBps / static_cast<double>(cluster.gpus_per_node);
  OffloadCost cost;
  LOOM_ASSIGN_OR_RETURN(cost.grad_to_host,
                        TransferTime(params * static_cast<double>(bytes.gradient), pcie_GBps,
                                     "the gradient shard's copy to the host"));
  LOOM_ASSIGN_OR_RETURN(
      cost.cpu_step,
      TransferTime(Total(CpuOptimizerStepTraffic(shard_params, bytes, strategy.optimizer)),
                   cpu_GBps, "the CPU optimizer step"));
  if (strategy.offload == Offload::kOptimizer) {
    LOOM_ASSIGN_OR_RETURN(cost.params_to_gpu,
                          TransferTime(params * static_cast<double>(bytes.weight), pcie_GBps,
                                       "the updated weight shard's copy to the GPU"));
  }
  return cost;
}

Result<SimTime> CostParameterFetch(const ClusterSpec& cluster, const Strategy& strategy,
                                   int64_t shard_params) {
  if (strategy.offload != Offload::kOptimizerAndParams) {
    return Status::InvalidArgument(
        "--offload " + std::string(kOffloadNames.Name(strategy.offload)) +
        " keeps the weights on the GPU, so none are fetched; parameter fetches "
        "come with --offload optimizer+params");
  }
  if (shard_params < 0) {
    return Status::InvalidArgument("fetch of " + std::to_string(shard_params) +
                                   " parameters: a layer's shard cannot be negative");
  }
  LOOM_RETURN_IF_ERROR(CheckPcie(cluster));
  const double bytes =
      static_cast<double>(shard_params) * static_cast<double>(BytesPerParameter(strategy).weight);
  return TransferTime(bytes, cluster.host.pcie_bandwidth_GBps,
                      "a layer's weight-shard fetch from the host");
}

}  // namespace loom
