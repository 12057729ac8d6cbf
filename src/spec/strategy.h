#ifndef LOOM_SPEC_STRATEGY_H_
#define LOOM_SPEC_STRATEGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/status.h"
#include "schedule/schedule.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {

enum class Recompute { kNone, kSelective, kFull };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames({{
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
}});

enum class Optimizer { kAdam, kAdafactor, kSgd };
inline constexpr EnumNames<Optimizer, 3> kOptimizerNames({{
    {Optimizer::kAdam, "adam"},
    {Optimizer::kAdafactor, "adafactor"},
    {Optimizer::kSgd, "sgd"},
}});

// What ZeRO-Offload (Ren et al. 2021) moves to CPU memory: the optimizer states and their step
// (DeepSpeed's offload_optimizer), or also the parameters between uses (ZeRO-Infinity's
// offload_param, Rajbhandari et al. 2021, which needs ZeRO stage 3).
enum class Offload { kNone, kOptimizer, kOptimizerAndParams };
inline constexpr EnumNames<Offload, 3> kOffloadNames({{
    {Offload::kNone, "none"},
    {Offload::kOptimizer, "optimizer"},
    {Offload::kOptimizerAndParams, "optimizer+params"},
}});

// How context parallelism exchanges keys and values (Megatron-LM's --cp-comm-type): p2p passes
// K/V blocks around the cp ring, each send overlapped with the attention of the block before
// (ring attention, Liu et al. 2023); all_gather gathers the whole sequence's K/V first (Llama 3,
// Dubey et al. 2024, Section 3.3.2).
enum class CpComm { kP2p, kAllGather };
inline constexpr EnumNames<CpComm, 2> kCpCommNames({{
    {CpComm::kP2p, "p2p"},
    {CpComm::kAllGather, "all_gather"},
}});

// How each micro-batch's weight gradients are summed into the gradients the optimizer steps on.
// - fused: Megatron-LM's --gradient-accumulation-fusion (on by default): the weight-gradient GEMM
//   of every linear layer adds its product into the main_grad buffer (C = A^T B + C; APEX's
//   fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32, or _fp16 for a 2-byte buffer); biases,
//   norm weights, embeddings and the MoE router have no such GEMM, and the DDP backward hook adds
//   their gradients with main_grad.add_(grad) (megatron/core/tensor_parallel/layers.py,
//   LinearWithGradAccumulationAndAsyncCommunication.backward; megatron/core/distributed/
//   distributed_data_parallel.py, _make_backward_post_hook; NVIDIA/Megatron-LM d98e8a64).
// - add: --no-gradient-accumulation-fusion: every parameter's gradient is written in the param
//   dtype, then main_grad.add_(grad) adds it to the buffer.
// - autograd: no main_grad buffer: PyTorch's AccumulateGrad sums .grad in the param dtype; the
//   first micro-batch's gradient becomes .grad without a kernel (Megatron-LM zeroes gradients with
//   set_to_none), each later one is added (.grad += new). PyTorch DDP (Megatron's --DDP-impl torch)
//   and Megatron's local DDP without contiguous buffers ran so, e.g. the fp16 runs of Narayanan et
//   al. 2021 (examples/sc21 at NVIDIA/Megatron-LM 6985e589).
// The main_grad buffer of fused and add holds BytesPerParameter(strategy).gradient bytes a
// parameter: fp32 for bf16 and fp8 unless grad_reduce_in_bf16, 2 bytes for fp16.
enum class GradAccumulation { kFused, kAdd, kAutograd };
inline constexpr EnumNames<GradAccumulation, 3> kGradAccumulationNames({{
    {GradAccumulation::kFused, "fused"},
    {GradAccumulation::kAdd, "add"},
    {GradAccumulation::kAutograd, "autograd"},
}});

// How one training step is spread over GPUs. Field names follow Megatron-LM's arguments.
struct Strategy {
  int64_t tp = 1;  // tensor parallel
  int64_t pp = 1;  // pipeline parallel
  int64_t dp = 1;  // data parallel
  int64_t cp = 1;  // context parallel
  int64_t ep = 1;  // expert parallel
  // Expert tensor parallel: the ranks each expert's MLP is split over (Megatron-LM's
  // --expert-tensor-parallel-size). 0 means tp, Megatron-LM's default.
  int64_t etp = 0;
  bool sp = false;  // sequence parallel (over the tp group)
  int64_t vpp = 1;  // model chunks per pipeline stage (virtual stages)
  int64_t micro_batch = 1;
  int64_t global_batch = 1;
  int64_t seq_len = 2048;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  Recompute recompute = Recompute::kNone;
  // With full recompute: how many layers of each model chunk are recomputed (Megatron-LM's
  // --recompute-method block --recompute-num-layers); the others keep their activations.
  // 0 recomputes every layer.
  int64_t recompute_layers = 0;
  int64_t zero_stage = 0;  // 0..3 (Rajbhandari et al. 2020)
  Dtype dtype = Dtype::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
  Offload offload = Offload::kNone;
  bool allow_cross_node_tp = false;  // accept tp > GPUs per node
  CpComm cp_comm = CpComm::kP2p;     // Megatron-LM's default
  // Uneven pipeline stages (Megatron-LM's --decoder-first-pipeline-num-layers and
  // --decoder-last-pipeline-num-layers): transformer layers on the first and last stage, the rest
  // split evenly over the stages between. 0: an even split.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;
  // An explicit pipeline layout (Megatron-core's --pipeline-model-parallel-layout, core_v0.13.0
  // and later): the transformer layers of each virtual stage, pp * vpp entries in Megatron's order
  // (virtual stage v is model chunk v / pp of stage v % pp). The embedding is on virtual stage 0
  // and the output layer with the loss on the last; either of those two may hold no transformer
  // layer (Llama 3 405B's first and last chunk held only the embedding and only the loss, Dubey et
  // al. 2024, Section 3.3.2), every other virtual stage holds at least one. Empty: the split of
  // first_stage_layers / last_stage_layers (LayersPerVirtualStage). Excludes those two.
  std::vector<int64_t> layout;
  // Interleaved schedule: micro-batches that run through one model chunk before the next
  // (Megatron-LM's --microbatch-group-size-per-virtual-pipeline-stage, in megatron/core/
  // model_parallel_config.py; the default, 0 here, is pp: Narayanan et al. 2021's depth-first
  // order). Megatron requires pp <= group <= micro-batches, and the last, partial group empty or of
  // at least pp micro-batches (forward_backward_pipelining_with_interleaving, schedules.py).
  int64_t microbatch_group = 0;
  // Mixture of experts. Capacity factor (Megatron-LM's --moe-expert-capacity-factor; Fedus et
  // al. 2022, Section 2.2): each expert takes at most capacity * tokens * top_k / experts tokens,
  // and drops the rest. 0: dropless (Megatron-LM's default).
  double moe_capacity_factor = 0;
  // Tokens of the busiest expert over the mean (>= 1): the busiest expert's rank sets the time of
  // the expert GEMMs and of the all-to-all. 1: a perfectly balanced router.
  double moe_imbalance = 1.0;
  // Megatron-LM's communication overlap switches, off by default as there.
  // --overlap-grad-reduce: gradient buckets are reduced while the backward runs, not after it.
  bool overlap_grad_reduce = false;
  // --overlap-param-gather (with the distributed optimizer, ZeRO >= 1): the all-gather of the
  // updated weights runs under the next step's forward, not after the optimizer step.
  bool overlap_param_gather = false;
  // --tp-comm-overlap: tensor-parallel all-gathers and reduce-scatters split into chunks
  // pipelined with the GEMMs that consume or produce them (Transformer Engine userbuffers).
  bool tp_comm_overlap = false;
  // --grad-reduce-in-bf16: accumulate and reduce bf16 (and fp8 training's bf16) gradients in
  // bf16. Off, Megatron-LM accumulates and reduces them in fp32.
  bool grad_reduce_in_bf16 = false;
  // How micro-batches' weight gradients are accumulated (see GradAccumulation).
  GradAccumulation grad_accumulation = GradAccumulation::kFused;

  // tp * pp * dp * cp: the GPUs one step occupies (ep is carved out of dp * cp).
  int64_t WorldSize() const { return tp * pp * dp * cp; }
  // global_batch / (micro_batch * dp). REQUIRES: Validate() passed.
  int64_t NumMicroBatches() const { return global_batch / (micro_batch * dp); }
  // The interleaved schedule's micro-batch group in effect: microbatch_group, or pp when it is 0.
  int64_t MicrobatchGroup() const { return microbatch_group == 0 ? pp : microbatch_group; }
  // The expert tensor-parallel size in effect: etp, or tp when etp is 0.
  int64_t ExpertTp() const { return etp == 0 ? tp : etp; }
  // Expert data parallel: the ranks that hold the same experts, tp * dp * cp / (ep * etp).
  // REQUIRES: Validate() passed.
  int64_t ExpertDp() const { return tp * dp * cp / (ep * ExpertTp()); }
};

// Transformer layers of each virtual stage (pp * vpp of them, in model order: virtual stage v is
// model chunk v / pp of pipeline stage v % pp): strategy.layout when it is given; else every stage
// holds num_layers / pp, or first_stage_layers / last_stage_layers on the first / last stage and
// the rest evenly between, and each stage's layers split over its vpp chunks as evenly as they
// go. Where a stage's layers do not divide by vpp, the chunks nearest the model's ends get the
// fewer: the first chunks of the first stage (beside the embedding), the last chunks of the last
// stage (beside the output layer and loss), and the last chunks of the stages between. Megatron
// cannot express such chunks with --decoder-first/last-pipeline-num-layers (TransformerConfig
// requires them divisible by vpp); MegatronArguments emits them as a layout.
// REQUIRES: StrategyViolations(strategy, model, ...) is empty.
std::vector<int64_t> LayersPerVirtualStage(const Strategy& strategy, int64_t num_layers);

// The layers of each pipeline stage (|stage_layers|, pp of them) split over its |vpp| chunks as
// LayersPerVirtualStage splits them, in its order, for |schedule|'s placement of the chunks
// (VirtualStageOf, schedule/schedule.h). REQUIRES: vpp >= 1 (2 for a V-shaped schedule), every
// entry >= 0.
std::vector<int64_t> SplitStagesIntoChunks(const std::vector<int64_t>& stage_layers, int64_t vpp,
                                           ScheduleKind schedule);

// One rule a strategy breaks. The rules live here only: the layers below (workload/, the
// simulator) state them as REQUIRES, and the planner tallies rejections by |flag|.
struct StrategyViolation {
  // The setting the rule is about, as its command-line flag ("--tp"); |message| starts with it.
  std::string flag;
  // Names the setting, the values and the fix: "--tp 3: num_attention_heads (32) of ...".
  std::string message;

  friend bool operator==(const StrategyViolation&, const StrategyViolation&) = default;
};

// Every rule |strategy| breaks for |model| on |cluster|, one violation each, in a fixed order.
std::vector<StrategyViolation> StrategyViolations(const Strategy& strategy, const ModelSpec& model,
                                                  const ClusterSpec& cluster);

// The rules of StrategyViolations on how one layer of |model| splits over |strategy|'s tensor-,
// context- and expert-parallel ranks (the ranges of the degrees; heads, query groups and MLP widths
// over tp and etp, experts over ep, the sequence over cp and, with sp, over tp), in
// StrategyViolations' order: what the layer builders of workload/ require, for callers that build
// layers of strategies they made up rather than validated (the probe's shape sweep).
std::vector<StrategyViolation> LayerSplitViolations(const Strategy& strategy,
                                                    const ModelSpec& model);

// OK, or InvalidArgument with every violation on its own line.
Status ValidateStrategy(const Strategy& strategy, const ModelSpec& model,
                        const ClusterSpec& cluster);

}  // namespace loom

#endif  // LOOM_SPEC_STRATEGY_H_
