#ifndef LOOM_COST_COMM_MODEL_H_
#define LOOM_COST_COMM_MODEL_H_

#include <cstdint>

#include "core/sim_time.h"
#include "op/op.h"
#include "spec/cluster.h"

namespace loom {

// Where the ranks of one communicator sit: |ranks| in all, |ranks_per_node| of them on each node.
// "Node" here is the NVLink domain (ClusterSpec::NvlinkDomainGpus()): members on one node talk
// over NVLink, and Nodes() > 1 means the group crosses the NICs. It is the host on every cluster
// whose NVLink stops at the host; on GB200 NVL72 it is the rack's 72 GPUs.
struct GroupPlacement {
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;

  int64_t Nodes() const { return ranks / ranks_per_node; }
};

// The placement of a group of |ranks| ranks whose members are |stride| global ranks apart, with
// ranks numbered node by node (Megatron-LM numbers tp fastest, then cp, dp, pp: a tp group has
// stride 1, a dp group stride tp*cp), on NVLink domains of |nvlink_domain_gpus| GPUs.
// REQUIRES: all arguments >= 1.
GroupPlacement PlaceGroup(int64_t ranks, int64_t stride, int64_t nvlink_domain_gpus);

// busbw / algbw for |kind| over |ranks| ranks, the convention of nccl-tests (doc/PERFORMANCE.md):
// all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n. Bytes follow
// CollectiveShape's (nccl-tests') size convention. REQUIRES: ranks >= 1.
double BusBandwidthFactor(CollectiveKind kind, int64_t ranks);

// Time of collectives and point-to-point transfers on a cluster.
class CommModel {
 public:
  virtual ~CommModel() = default;

  // Time of one |kind| of |bytes| (nccl-tests' size convention, see BusBandwidthFactor) over
  // |group|. A group of one rank costs nothing.
  virtual SimTime Collective(CollectiveKind kind, int64_t bytes, GroupPlacement group) const = 0;

  // Time to send |bytes| from one GPU to another, on the same node or not.
  virtual SimTime PointToPoint(int64_t bytes, bool across_nodes) const = 0;
};

// A first-order model of NCCL's ring algorithm built from the cluster file alone, following the
// structure of NCCL's own tuner (src/graph/tuning.cc): a ring collective takes
// (steps - inter_steps) intra-node hops and inter_steps inter-node hops of latency, plus
// bytes * busbw_factor / busbw. Steps: 2(n-1) for all-reduce, n-1 for all-gather, reduce-scatter
// and all-to-all; inter-node steps count nodes instead of ranks. The bus bandwidth is the
// intra-node link per GPU, or across nodes the GPU's share of its node's NICs divided by the
// oversubscription. No protocol (LL/LL128/Simple) choice, no tree or NVLS; the calibrated model
// (fitted to measured collectives) replaces this one.
class RingCommModel : public CommModel {
 public:
  explicit RingCommModel(const ClusterSpec& cluster);

  SimTime Collective(CollectiveKind kind, int64_t bytes, GroupPlacement group) const override;
  SimTime PointToPoint(int64_t bytes, bool across_nodes) const override;

  // Bus bandwidth of a group that spans nodes or not, in bytes per second.
  double BusBandwidth(bool across_nodes) const;

 private:
  double intra_bytes_per_s_;
  double inter_bytes_per_s_;
  double intra_latency_s_;
  double inter_latency_s_;
};

}  // namespace loom

#endif  // LOOM_COST_COMM_MODEL_H_
