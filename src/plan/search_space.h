#ifndef LOOM_PLAN_SEARCH_SPACE_H_
#define LOOM_PLAN_SEARCH_SPACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/strategy.h"

namespace loom {

// Strategy settings a user pins, as `key=value` pairs (`--fix tp=8,pp=16,schedule=interleaved`,
// or `--explain` with every setting of one strategy). Keys are the scenario files' strategy keys
// (tp, pp, dp, cp, ep, etp, vpp, micro_batch, schedule, recompute, recompute_layers, zero_stage,
// sp, offload, cp_comm, overlap_grad_reduce, overlap_param_gather, tp_comm_overlap,
// first_stage_layers, last_stage_layers, microbatch_group), with dashes accepted for underscores
// and the aliases mbs (micro_batch) and zero (zero_stage). Unset: the planner searches that
// setting.
struct Constraints {
  std::optional<int64_t> tp, pp, dp, cp, ep, etp, vpp, micro_batch, recompute_layers, zero_stage,
      first_stage_layers, last_stage_layers, microbatch_group;
  std::optional<ScheduleKind> schedule;
  std::optional<Recompute> recompute;
  std::optional<Offload> offload;
  std::optional<CpComm> cp_comm;
  std::optional<bool> sp, overlap_grad_reduce, overlap_param_gather, tp_comm_overlap;
};

// Parses "key=value,key=value". |flag| names the option in messages ("--fix"). Errors name the
// pair, the key or value that is wrong and the keys or values that are accepted.
Result<Constraints> ParseConstraints(std::string_view text, std::string_view flag);

// The settings of |strategy| the planner searches, as ParseConstraints reads them (so that a plan
// can be pasted into --fix or --explain): "tp=8,pp=16,dp=128,cp=1,ep=1,etp=0,vpp=1,...".
std::string ConstraintText(const Strategy& strategy);

// Sets every field |constraints| pins on |strategy|.
void ApplyConstraints(const Constraints& constraints, Strategy& strategy);

// What the planner is asked: a training job's shape, and the settings it must keep.
struct SearchRequest {
  int64_t gpus = 0;          // a multiple of the cluster's GPUs per node, or fewer than a node
  int64_t global_batch = 0;  // sequences per step
  int64_t seq_len = 0;
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  // How the framework accumulates gradients over micro-batches: a property of the training code
  // (Megatron-LM's default is fused), not a setting the search varies ...
  GradAccumulation grad_accumulation = GradAccumulation::kFused;
  // ... unless the code is DeepSpeed's, whose mode follows the ZeRO stage: then every strategy
  // takes DeepSpeedGradAccumulation (plan/deepspeed_config.h) instead of |grad_accumulation|.
  bool deepspeed_accumulation = false;
  // The pipeline is DeepSpeed's (Megatron-DeepSpeed): where the stages do not split the layers
  // evenly, each 1F1B or ZB-H1 strategy takes the split DeepSpeed's partition_balanced gives
  // (MegatronDeepSpeedStageLayers) as its layout, instead of balanced first and last stages.
  bool deepspeed_stage_split = false;
  Constraints fixed;
  // Also search the GPU counts gpus / 2^k down to |min_gpus| and gpus * 2^k up to |max_gpus|
  // (GpuCounts). 0: |gpus| alone. The range is the user's to give, never widened by the planner: a
  // question about 512 GPUs is answered about 512 (`--min-gpus`, `--max-gpus`).
  int64_t min_gpus = 0;
  int64_t max_gpus = 0;
};

// The GPU counts the search covers, |request.gpus| first, then its halvings down to no fewer than
// min_gpus, then its doublings up to no more than max_gpus; each a whole number of the cluster's
// nodes or fewer GPUs than one node (a halving or doubling that is neither ends that direction).
std::vector<int64_t> GpuCounts(const SearchRequest& request, const ClusterSpec& cluster);

// Every strategy of the space for |request|: each factorisation of each GPU count (GpuCounts) into
// tp * cp * pp * dp (tp within a node; cp in powers of two that leave each rank at least 2048
// tokens; pp up to the layer count), ep among the divisors of the expert count that fit in tp * dp
// * cp, etp equal to tp or 1; micro-batches of 1, 2, 4, 8 or 16 sequences (Narayanan et al. 2021
// ran 16); 1F1B, interleaved with every chunk count that splits the stage's layers, ZB-H1, ZB-V and
// DualPipeV; when the layers do not split evenly, the most balanced first and last stage counts;
// no, selective, full and partial (a quarter, half, three quarters of each chunk) recomputation;
// ZeRO 0-1 (0-3 without pipelining; only 0 without data-parallel replicas, where the others repeat
// it); optimizer offload with ZeRO >= 1 and parameter offload with ZeRO-3; sequence parallelism on
// or off with tp > 1; Megatron-LM's overlap switches all off or all on (off alone when they have
// nothing to overlap); ring or all-gather context
// parallelism. GPipe is left out unless fixed: it has 1F1B's bubble and holds every
// micro-batch's activations (Narayanan et al. 2021, Section 2.2.1), so it never ranks above it.
// Each pinned setting replaces its list, whatever its value; strategy rules are not applied here
// (the planner counts what they reject).
// Errors: an invalid request (no GPUs, a GPU count that the pinned degrees do not divide).
Result<std::vector<Strategy>> EnumerateStrategies(const ModelSpec& model,
                                                  const ClusterSpec& cluster,
                                                  const SearchRequest& request);

}  // namespace loom

#endif  // LOOM_PLAN_SEARCH_SPACE_H_
