#include "cost/comm_model.h"

#include <algorithm>

namespace loom {

double BusBandwidthFactor(CollectiveKind kind, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  return kind == CollectiveKind::kAllReduce ? 2.0 * (n - 1.0) / n : (n - 1.0) / n;
}

GroupPlacement PlaceGroup(int64_t ranks, int64_t stride, int64_t nvlink_domain_gpus) {
  GroupPlacement placement;
  placement.ranks = ranks;
  // Members |stride| apart: a domain of g GPUs holds g / stride of them, at least one.
  placement.ranks_per_node = std::clamp<int64_t>(nvlink_domain_gpus / stride, 1, ranks);
  // A group that does not divide evenly over nodes is placed as if its nodes were full.
  while (ranks % placement.ranks_per_node != 0) --placement.ranks_per_node;
  return placement;
}

RingCommModel::RingCommModel(const ClusterSpec& cluster) {
  intra_bytes_per_s_ = cluster.intra_node.bandwidth_GBps * 1e9;
  // Every GPU of a node communicates at once in a symmetric step (all tp, dp, pp groups run
  // together), so each gets its node's NIC bandwidth divided by the GPUs per node: one rail NIC
  // per GPU on DGX systems. NICs belong to the host, so this is gpus_per_node, not the NVLink
  // domain.
  const double node_nic_bytes_per_s = static_cast<double>(cluster.inter_node.nics_per_node) *
                                      cluster.inter_node.nic_bandwidth_Gbps * 1e9 / 8.0;
  inter_bytes_per_s_ = std::min(intra_bytes_per_s_, node_nic_bytes_per_s /
                                                        static_cast<double>(cluster.gpus_per_node) /
                                                        cluster.inter_node.oversubscription);
  intra_latency_s_ = cluster.intra_node.latency_us * 1e-6;
  inter_latency_s_ = cluster.inter_node.latency_us * 1e-6;
}

double RingCommModel::BusBandwidth(bool across_nodes) const {
  return across_nodes ? inter_bytes_per_s_ : intra_bytes_per_s_;
}

SimTime RingCommModel::Collective(CollectiveKind kind, int64_t bytes, GroupPlacement group) const {
  if (group.ranks <= 1) return SimTime();
  const int64_t nodes = group.Nodes();
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  const int64_t steps = (all_reduce ? 2 : 1) * (group.ranks - 1);
  const int64_t inter_steps = (all_reduce ? 2 : 1) * (nodes - 1);
  const double latency_s = static_cast<double>(steps - inter_steps) * intra_latency_s_ +
                           static_cast<double>(inter_steps) * inter_latency_s_;
  const double transfer_s =
      static_cast<double>(bytes) * BusBandwidthFactor(kind, group.ranks) / BusBandwidth(nodes > 1);
  return SimTime::FromSeconds(latency_s + transfer_s);
}

SimTime RingCommModel::PointToPoint(int64_t bytes, bool across_nodes) const {
  const double latency_s = across_nodes ? inter_latency_s_ : intra_latency_s_;
  return SimTime::FromSeconds(latency_s + static_cast<double>(bytes) / BusBandwidth(across_nodes));
}

}  // namespace loom
