#ifndef LOOM_SIM_STAGE_MODELS_H_
#define LOOM_SIM_STAGE_MODELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/compute_model.h"
#include "cost/nccl_model.h"
#include "sim/pass_costs.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"

namespace loom {

// The cost models each pipeline stage of a strategy runs on: the compute model of its GPU and the
// communication model of the collectives inside it (tp, cp, ep and data-parallel groups). On a
// cluster of one GPU type every stage shares the cluster's: RooflineComputeModel(cluster.gpu) and
// NcclCommModel(cluster). With node groups (ClusterSpec::node_groups) each group that holds a
// stage has its own: its GPU's compute model, and the cluster's network with the intra-node
// bandwidth capped at the GPU's NVLink (an A100 group of a cluster whose NVSwitch runs at the
// H100's 450 GB/s reaches its own 300). Pipeline sends between stages and the host side stay the
// cluster's.
class StageModels {
 public:
  // REQUIRES: the degrees of |strategy| are valid and StageAcrossGroups(cluster, strategy) is
  // nullopt (ValidateStrategy passed).
  StageModels(const ClusterSpec& cluster, const Strategy& strategy);

  // The distinct model sets, and which of them stage |stage| runs on (0 <= stage < pp).
  int32_t sets() const { return static_cast<int32_t>(sets_.size()); }
  int32_t SetOfStage(int64_t stage) const { return set_of_stage_[static_cast<size_t>(stage)]; }

  const ComputeModel& compute(int32_t set) const { return sets_[static_cast<size_t>(set)].compute; }
  const GpuSpec& gpu(int32_t set) const { return sets_[static_cast<size_t>(set)].compute.gpu(); }
  const CommModel& comm(int32_t set) const { return sets_[static_cast<size_t>(set)].comm; }
  const ComputeModel& StageCompute(int64_t stage) const { return compute(SetOfStage(stage)); }
  const CommModel& StageComm(int64_t stage) const { return comm(SetOfStage(stage)); }

 private:
  struct Models {
    RooflineComputeModel compute;
    NcclCommModel comm;
  };
  std::vector<Models> sets_;
  std::vector<int32_t> set_of_stage_;
};

// The clock one model set's GPU runs a training step at (TensorClock, cost/compute_model.h).
struct StepTensorClock {
  std::string gpu_file;
  Dtype dtype = Dtype::kBf16;
  // The model FLOPs of the set's passes over their compute time (tensor-parallel collectives left
  // out) at the calibration's clock: the tensor rate whose power the GPU would draw.
  double demand_flops_per_s = 0;
  // Peak x sustained_tensor_fraction of |dtype|; nullopt when the GPU file has none.
  std::optional<double> sustained_flops_per_s;
  double clock = 1.0;  // 1, or sustained / demand
};

// What |clocks| mean, in words, for reports: each GPU's step tensor rate, the rate it holds at
// its power limit, and the clock the step ran at.
std::string DescribeTensorClocks(const std::vector<StepTensorClock>& clocks);

// How each model set's fused attention kernel is chosen (AttentionKernel::kFused): |given| (loom's
// --attention flash2 or cudnn), else what |framework| (nullptr: none) runs on the set's GPU
// (ChooseFusedAttention, spec/framework.h).
struct FusedAttentionPolicy {
  std::optional<AttentionFamily> given;
  const FrameworkProfile* framework = nullptr;

  // The family a GPU of |gpu| runs under this policy, and why.
  FusedAttentionChoice For(const GpuSpec& gpu) const;
};

// CostChunks with each virtual stage on its own stage's models: every model set costs the chunks
// once (CostChunks costs each distinct block once), and virtual stage v takes its chunk from the
// set of stage v % pp. A training step runs its compute back to back: where a set's chunks (those
// of its stages) ask a higher tensor rate than its GPU holds at its power limit, that set's
// chunks are costed again at the lower tensor clock (TensorClock), which |clocks| (when given)
// receives per set. With one set, CostChunks itself, clocked the same way. |kernels|'
// fused_family is each set's under |attention|; |attention_basis| (when given) receives per set
// the family and why, when the kernels are fused. Errors: those of CostChunks.
Result<std::vector<ChunkCost>> CostStageChunks(const ModelSpec& model, const Strategy& strategy,
                                               const StageModels& models,
                                               const Placements& placements,
                                               const LayerOpsOptions& kernels = {},
                                               const HostCosts* host = nullptr,
                                               std::vector<StepTensorClock>* clocks = nullptr,
                                               const FusedAttentionPolicy& attention = {},
                                               std::vector<std::string>* attention_basis = nullptr);

}  // namespace loom

#endif  // LOOM_SIM_STAGE_MODELS_H_
