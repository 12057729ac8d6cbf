#ifndef LOOM_COST_OFFLOAD_MODEL_H_
#define LOOM_COST_OFFLOAD_MODEL_H_

#include <cstdint>

#include "core/sim_time.h"
#include "core/status.h"
#include "op/op.h"
#include "spec/cluster.h"
#include "spec/state_bytes.h"
#include "spec/strategy.h"

namespace loom {

// What one rank's optimizer offload costs per training step (ZeRO-Offload, Ren et al. 2021,
// Sections 4-5): the rank sends its gradient shard to the host, the node's CPUs step the optimizer
// over it, and the updated weights come back. The three run one after the other for one shard;
// the simulator may overlap them across gradient buckets.
struct OffloadCost {
  // The rank's gradient shard, GPU -> host over its PCIe link.
  SimTime grad_to_host;
  // The optimizer step over the shard on the CPUs, bound by the rank's share of the node's DRAM
  // bandwidth.
  SimTime cpu_step;
  // The updated weight shard, host -> GPU over PCIe. Zero with parameter offload: the weights stay
  // on the host and come to the GPU layer by layer (CostParameterFetch).
  SimTime params_to_gpu;
};

// CPU DRAM traffic of the optimizer step over |params| offloaded parameters with states of
// |bytes| (BytesPerParameter), per parameter as DeepSpeed's CPU Adam runs it
// (csrc/adam/cpu_adam_impl.cpp, Step_AVX: one fused pass with the loss-scale division folded in;
// the gradient norm is taken on the GPU before the gradients leave it):
// - Adam: reads the fp32 weight, the gradient (|bytes.gradient|, as it arrived), momentum and
//   variance; writes weight, momentum and variance: r(12 + g) w12.
// - SGD with momentum: r(8 + g) w8. Adafactor (beta1 = 0): r(4 + 2g) w4, the gradient read
//   again for its row and column sums, as on the GPU (OptimizerStepTraffic).
// - mixed precision: the weight is also written as the |bytes.weight|-byte copy sent to the GPU.
// Bf16 Adam with fp32 gradients: r16 w14, 30 bytes per parameter. Saturates at INT64_MAX bytes.
MemoryShape CpuOptimizerStepTraffic(int64_t params, const StateBytesPerParam& bytes,
                                    Optimizer optimizer);

// The per-step offload costs of a rank that updates |shard_params| parameters (its ZeRO shard)
// under |strategy| on |cluster|:
// - grad_to_host: shard_params * BytesPerParameter(strategy).gradient / host.pcie_bandwidth_GBps.
// - cpu_step: CpuOptimizerStepTraffic bytes / (host.memory_bandwidth_GBps / gpus_per_node): the
//   ranks of a node step at once and share its DRAM bandwidth.
// - params_to_gpu: shard_params * BytesPerParameter(strategy).weight / host.pcie_bandwidth_GBps,
//   or zero with --offload optimizer+params.
// PCIe bandwidth is per GPU and per direction, so the two copies do not contend with each other
// or with other GPUs. With --offload none every time is zero.
// Errors: InvalidArgument naming the cluster file and key if host.memory_bandwidth_GBps is absent
// or a bandwidth or gpus_per_node is not positive; if shard_params is negative; if a time exceeds
// the range of SimTime.
Result<OffloadCost> CostOptimizerOffload(const ClusterSpec& cluster, const Strategy& strategy,
                                         int64_t shard_params);

// The time to bring a layer's weight shard of |shard_params| parameters (this rank's 1/(dp * cp)
// of the layer, before ZeRO-3 all-gathers it) from host memory to the GPU with parameter offload
// (ZeRO-Infinity, Rajbhandari et al. 2021, Section 5): shard_params *
// BytesPerParameter(strategy).weight / host.pcie_bandwidth_GBps. It is paid before each use of the
// layer: once in the forward and once in the backward of every micro-batch.
// Errors: InvalidArgument if strategy.offload is not optimizer+params, shard_params is negative,
// the PCIe bandwidth is not positive (naming the cluster file and key) or the time exceeds the
// range of SimTime.
Result<SimTime> CostParameterFetch(const ClusterSpec& cluster, const Strategy& strategy,
                                   int64_t shard_params);

}  // namespace loom

#endif  // LOOM_COST_OFFLOAD_MODEL_H_
