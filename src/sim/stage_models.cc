#include "sim/stage_models.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "spec/stage_gpus.h"

namespace loom {
namespace {

// |cluster| as the collectives inside node group |group| see it: the intra-node bandwidth no
// faster than the group's GPU can drive its NVLink (the loader lets the cluster's be the fastest
// group's, ClusterSpec::node_groups).
ClusterSpec GroupCluster(const ClusterSpec& cluster, int64_t group) {
  ClusterSpec view = cluster;
  view.gpu = cluster.node_groups[static_cast<size_t>(group)].gpu;
  if (view.intra_node.fabric == IntraNodeFabric::kNvSwitch) {
    view.intra_node.bandwidth_GBps =
        std::min(view.intra_node.bandwidth_GBps, view.gpu.nvlink_bandwidth_GBps);
  }
  return view;
}

}  // namespace

StageModels::StageModels(const ClusterSpec& cluster, const Strategy& strategy) {
  if (cluster.node_groups.empty()) {
    sets_.push_back({RooflineComputeModel(cluster.gpu), NcclCommModel(cluster)});
    set_of_stage_.assign(static_cast<size_t>(strategy.pp), 0);
    return;
  }
  std::vector<int64_t> groups;  // the node group of each set
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    const int64_t group = NodeGroupOfStage(cluster, strategy, stage);
    auto it = std::find(groups.begin(), groups.end(), group);
    if (it == groups.end()) {
      const ClusterSpec view = GroupCluster(cluster, group);
      sets_.push_back({RooflineComputeModel(view.gpu), NcclCommModel(view)});
      groups.push_back(group);
      it = groups.end() - 1;
    }
    set_of_stage_.push_back(static_cast<int32_t>(it - groups.begin()));
  }
}

namespace {

// The model FLOPs of |costs|' chunks on the stages of |set| over their compute time.
double TensorDemand(const std::vector<ChunkCost>& costs, const Strategy& strategy,
                    const StageModels& models, int32_t set) {
  double flops = 0, seconds = 0;
  for (size_t v = 0; v < costs.size(); ++v) {
    if (models.SetOfStage(static_cast<int64_t>(v) % strategy.pp) != set) continue;
    for (const PassCost* pass :
         {&costs[v].forward, &costs[v].backward_input, &costs[v].backward_weight}) {
      flops += pass->flops;
      seconds += (pass->time - pass->tp_comm).ToSeconds();
    }
  }
  return seconds > 0 ? flops / seconds : 0.0;
}

}  // namespace

std::string DescribeTensorClocks(const std::vector<StepTensorClock>& clocks) {
  std::string out;
  for (const StepTensorClock& c : clocks) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(0);
    const std::string dtype(kDtypeNames.Name(c.dtype));
    if (!c.sustained_flops_per_s) {
      line << c.gpu_file << " has no sustained_tensor_fraction_" << dtype
           << ": the step's tensor work (" << c.demand_flops_per_s / 1e12
           << " TFLOP/s over its compute) ran at the calibration's burst clock";
    } else {
      line << c.demand_flops_per_s / 1e12 << " TFLOP/s " << dtype
           << " over the step's compute at the calibration's clock, against the "
           << *c.sustained_flops_per_s / 1e12 << " the GPU holds at its power limit (" << c.gpu_file
           << " sustained_tensor_fraction_" << dtype << "): ";
      if (c.clock < 1.0) {
        line << "tensor work at " << std::setprecision(3) << c.clock << " of that clock";
      } else {
        line << "the calibration's clock";
      }
    }
    out += (out.empty() ? "" : "; ") + line.str();
  }
  return out;
}

FusedAttentionChoice FusedAttentionPolicy::For(const GpuSpec& gpu) const {
  if (!given) return ChooseFusedAttention(framework, gpu);
  return {*given, std::string(kAttentionFamilyNames.Name(*given)) + " (--attention)"};
}

Result<std::vector<ChunkCost>> CostStageChunks(
    const ModelSpec& model, const Strategy& strategy, const StageModels& models,
    const Placements& placements, const LayerOpsOptions& kernels, const HostCosts* host,
    std::vector<StepTensorClock>* clocks, const FusedAttentionPolicy& attention,
    std::vector<std::string>* attention_basis) {
  std::vector<std::vector<ChunkCost>> per_set;
  for (int32_t set = 0; set < models.sets(); ++set) {
    const GpuSpec& gpu = models.gpu(set);
    LayerOpsOptions set_kernels = kernels;
    if (kernels.attention == AttentionKernel::kFused) {
      const FusedAttentionChoice choice = attention.For(gpu);
      set_kernels.fused_family = choice.family;
      // The Triton port has no efficiency to fall back on: only a benchmark of it gives its rate.
      if (choice.family == AttentionFamily::kTriton &&
          !(gpu.calibration.triton_forward_tiles && gpu.calibration.triton_backward_tiles)) {
        return Status::InvalidArgument(
            gpu.file + ": no calibration." +
            ComputeCalibration::AttentionTilesKey(AttentionFamily::kTriton) +
            ": loom has no rate for the Triton "
            "FlashAttention (" +
            choice.basis + ") on " + gpu.name +
            "; fit it on a benchmark of that kernel (tests/reference/flashattention2_a100_fig4.csv "
            "is the A100's, and the Hopper files carry its ratio to FlashAttention-2 over), or run "
            "another family (--attention flash2 or cudnn)");
      }
      if (attention_basis != nullptr) attention_basis->push_back(gpu.file + ": " + choice.basis);
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<ChunkCost> costs,
                          CostChunks(model, strategy, models.compute(set), models.comm(set),
                                     placements, set_kernels, host));
    StepTensorClock clock;
    clock.gpu_file = gpu.file;
    clock.dtype = strategy.dtype;
    clock.demand_flops_per_s = TensorDemand(costs, strategy, models, set);
    if (const std::optional<double> f = gpu.calibration.SustainedTensorFraction(strategy.dtype))
      clock.sustained_flops_per_s = gpu.PeakTflops(strategy.dtype).value_or(0.0) * 1e12 * *f;
    clock.clock = TensorClock(gpu, strategy.dtype, clock.demand_flops_per_s);
    if (clock.clock < 1.0) {
      const RooflineComputeModel clocked(gpu, ClockRegime::kBurst, clock.clock);
      LOOM_ASSIGN_OR_RETURN(costs, CostChunks(model, strategy, clocked, models.comm(set),
                                              placements, set_kernels, host));
    }
    if (clocks != nullptr) clocks->push_back(clock);
    per_set.push_back(std::move(costs));
  }
  if (per_set.size() == 1) return std::move(per_set.front());
  std::vector<ChunkCost> costs;
  for (size_t v = 0; v < per_set.front().size(); ++v) {
    const int64_t stage =
        StageOfVirtualStage(strategy.pp, strategy.schedule, static_cast<int64_t>(v));
    costs.push_back(per_set[static_cast<size_t>(models.SetOfStage(stage))][v]);
  }
  return costs;
}

}  // namespace loom
