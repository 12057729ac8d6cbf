#ifndef LOOM_SIM_SIMULATOR_H_
#define LOOM_SIM_SIMULATOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "program/plan_workload.h"
#include "schedule/schedule.h"
#include "sim/engine.h"
#include "sim/memory_breakdown.h"
#include "sim/memory_reserve.h"
#include "sim/memory_tracker.h"
#include "sim/pass_costs.h"
#include "sim/stage_models.h"
#include "sim/step_builder.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/strategy.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"

namespace loom {

struct SimulationOptions {
  // Simulate every data-parallel replica instead of one (see StepGraphConfig::replicas).
  bool full = false;
  // The attention kernel (fused FlashAttention, or Megatron-LM's unfused core attention as in
  // Korthikanti et al. 2022) and whether the layers apply dropout.
  LayerOpsOptions kernels;
  // With fused attention: the family --attention named (flash2, cudnn), or nullopt for the one
  // |framework| runs on each GPU (FusedAttentionPolicy, sim/stage_models.h).
  std::optional<AttentionFamily> fused_attention;
  // Whether concurrent transfers on one rank's NIC or NVLink port share its bandwidth (engine.h):
  // a gradient bucket reduced while the pipeline sends, or while a pass runs its tp collectives,
  // slows both. Off: every transfer takes its time alone.
  bool share_bandwidth = true;
  // Whether the transfers that run beside compute on a GPU (NCCL's data-parallel collectives,
  // the hidden tp collectives: --tp-comm-overlap's userbuffers or the framework's asynchronous
  // ones) hold some of its SMs, so that the compute beside them runs
  // slower (engine.h; the cluster file's nccl_channels keys). Off: compute takes its time alone.
  bool share_sms = true;
  // The training framework whose host thread issues the work (spec/framework.h): its per-op host
  // costs and synchronisation points. nullopt: no host thread, the GPU is always fed.
  std::optional<FrameworkProfile> framework;
  // The share of each GPU's memory kept free for the allocator's fragmentation
  // (--memory-headroom); nullopt: the framework's, else loom's default (sim/memory_reserve.h).
  std::optional<double> memory_headroom;

  // |kernels| as |framework| runs them: with its asynchronous backward collectives, if it has them.
  LayerOpsOptions Kernels() const {
    LayerOpsOptions k = kernels;
    k.tp_backward_overlap = framework && framework->tp_backward_overlap;
    if (framework && framework->layer_kernels) k.modules = *framework->layer_kernels;
    return k;
  }

  // How fused attention is chosen per GPU: |fused_attention|, else |framework|'s.
  FusedAttentionPolicy AttentionPolicy() const {
    return {fused_attention, framework ? &*framework : nullptr};
  }
};

struct StageResult {
  int32_t stage = 0;
  int64_t peak_memory_bytes = 0;
  // The stage's share of StepBreakdown (StepUtilization, sim/step_utilization.h): its compute
  // stream running kernels, and idle within the pipeline's span for no other reason.
  double compute_s = 0;
  double bubble_s = 0;
};

// Where the step's time goes, each term the mean over the first replica's stages of a partition of
// that stage's step (StepUtilization): the five terms sum to the step time.
struct StepBreakdown {
  double compute_s = 0;       // kernels (StageResult::compute_s)
  double exposed_comm_s = 0;  // tp collectives, ring and gather waits, the collectives after the
                              // pipeline, as far as no kernel runs beside them
  double bubble_s = 0;        // idle within the pipeline's span for no other reason
  double optimizer_s = 0;
  double host_s = 0;  // the GPU idle while the host thread issues its next task
  // Of compute_s: what kernels took beyond their time alone because transfers beside them held
  // some of the GPU's SMs (sim/engine.h).
  double compute_slowed_s = 0;
};

// Where the chain of tasks that bounds the step spends its time (it sums to the step time).
struct CriticalPathSummary {
  int64_t tasks = 0;
  double compute_s = 0;
  double tp_comm_s = 0;
  double cp_comm_s = 0;  // ring-attention transfers
  double pp_comm_s = 0;
  double dp_comm_s = 0;
  double optimizer_s = 0;
  double host_s = 0;  // the host thread issuing work while the GPU waits for it
};

struct SimulationResult {
  double step_time_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  double bubble_fraction = 0;
  int64_t peak_memory_bytes = 0;
  int64_t memory_limit_bytes = 0;  // the GPU's memory less |reserve| (MemoryReserve::LimitBytes)
  bool fits_in_memory = false;
  // Whether the peak, over the limit, would fit in the headroom kept for fragmentation: the
  // strategy fits only if the allocator fragments less than |reserve|'s headroom assumes.
  bool inside_headroom = false;
  std::vector<StageResult> stages;
  StepBreakdown breakdown;
  CriticalPathSummary critical_path;
  // Per stage: what holds its memory at its peak (BreakDownMemory); and the stage whose peak is
  // |peak_memory_bytes|. The reserve (|reserve|, of the stage whose limit is memory_limit_bytes) is
  // outside every peak.
  std::vector<MemoryBreakdown> memory_by_stage;
  int32_t peak_stage = 0;
  MemoryReserve reserve;
  // What the transfers beside compute hold of its SMs, in words (PreparedStep::sm_basis).
  std::string sm_basis;
  // The clocks the step's tensor work was costed at, per GPU file (DescribeTensorClocks), and the
  // lowest of them (1: every GPU at the calibration's clock).
  std::string clock_basis;
  double tensor_clock = 1.0;
  // The fused attention kernel each GPU type ran and why (PreparedStep::attention_basis); empty
  // with unfused attention.
  std::string attention_basis;
  // PreparedStep::microbatch_basis.
  std::string microbatch_basis;
  // PreparedStep::sharded_basis.
  std::string sharded_basis;
  // PreparedStep::layer_kernels_basis.
  std::string layer_kernels_basis;
  // PreparedStep::softmax_basis.
  std::string softmax_basis;

  // The simulated step, for traces.
  StepGraph step;
  StepTimeline timeline;
  MemoryReport memory;
};

// Everything one step's simulation is built from, computed before any event runs: the pipeline
// order, what each model chunk costs per micro-batch, the model states each stage keeps on its
// GPU, and the data-parallel, offload and fabric settings of the step graph. The planner bounds a
// strategy from it (step_bounds.h) before paying for the simulation.
struct PreparedStep {
  Strategy strategy;
  PipelineSchedule schedule;
  std::vector<ChunkCost> costs;               // one per virtual stage, in model order
  std::vector<ModelStateBytes> model_states;  // per stage: weights, gradients, optimizer on the GPU
  StepGraphConfig config;
  StepPayloads payloads;
  // Which transfers run beside compute holding SMs, how many, from which cluster key (or which key
  // the file lacks, so that they hold none); empty when no transfer runs beside compute.
  std::string sm_basis;
  // The tensor clock of each GPU type's stages (CostStageChunks): the step's compute is costed at
  // it.
  std::vector<StepTensorClock> tensor_clocks;
  // Per GPU type, its fused attention family and why (CostStageChunks); empty when unfused.
  std::vector<std::string> attention_basis;
  // What the framework's training script does per micro-batch outside the model and what it costs
  // the host (FrameworkProfile::microbatch); empty when it names nothing.
  std::string microbatch_basis;
  // How the framework runs ZeRO-3's gathers and reductions and what they cost
  // (FrameworkProfile::zero3); empty when it names nothing or the step is not ZeRO-3.
  std::string sharded_basis;
  // Which kernels the framework's modules add around each layer (FrameworkProfile::
  // layer_kernels), in words; empty when none applies.
  std::string layer_kernels_basis;
  // With the unfused attention on scores Megatron-LM's fused softmax does not take
  // (FusedSoftmaxTakes): that PyTorch's softmax runs, why and its kernels; empty otherwise.
  std::string softmax_basis;
  // The memory each stage's GPU keeps outside the step's tensors (ReserveOf), one per pipeline
  // stage on a cluster of node groups, else one for every stage.
  std::vector<MemoryReserve> reserves;
};

// The share of |gpu|'s SMs a pass's hidden tp collectives (PassCost::tp_hidden) hold while they
// run beside its kernels, and why: --tp-comm-overlap's userbuffers (Transformer Engine's default
// SM counts), else, with |framework_overlap| (LayerOpsOptions::tp_backward_overlap), NCCL's CTAs
// for the tp group (NcclCtas; none when the cluster file lacks the channel key); 0 when tp < 2 or
// nothing is hidden.
struct TpHiddenHold {
  double share = 0;
  std::string basis;
};
TpHiddenHold TpHiddenSmHold(const ClusterSpec& cluster, const GpuSpec& gpu,
                            const Strategy& strategy, const Placements& placements,
                            bool framework_overlap);

// Prepares one training step of |model| on |cluster| under |strategy|, with the datasheet cost
// models. Errors: every violated strategy rule (ValidateStrategy), and those of the workload.
Result<PreparedStep> PrepareTrainingStep(const ModelSpec& model, const ClusterSpec& cluster,
                                         const Strategy& strategy,
                                         const SimulationOptions& options = {});

// The model states of |prepared| as the baselines of |step|'s pools of weights, gradients and
// optimizer states: every replica's stage holds that stage's states.
// REQUIRES: |step| was built from |prepared|.
std::vector<MemoryBaseline> ModelStateBaselines(const StepGraph& step,
                                                const PreparedStep& prepared);

// Runs |step| through the event engine and reads the result off its timeline.
// REQUIRES: |step| was prepared for |model| and |cluster|.
Result<SimulationResult> SimulatePreparedStep(const ModelSpec& model, const ClusterSpec& cluster,
                                              const PreparedStep& step);

// The time of every op of |blocks| (one BlockTimes per block) under the cost models and group
// placements PrepareTrainingStep costs |strategy| with on |cluster|. A block has one time for
// every stage that runs it, so on a cluster of node groups these are the first group's GPU's
// (cluster.gpu): a plan file's per-op predictions for stages on another GPU are not their own
// (issue 25 times the step per stage; per-stage op predictions remain to do).
std::vector<BlockTimes> PredictOpTimes(const ClusterSpec& cluster, const Strategy& strategy,
                                       const ChunkBlocks& blocks);

// PrepareTrainingStep, then SimulatePreparedStep.
Result<SimulationResult> SimulateTrainingStep(const ModelSpec& model, const ClusterSpec& cluster,
                                              const Strategy& strategy,
                                              const SimulationOptions& options = {});

}  // namespace loom

#endif  // LOOM_SIM_SIMULATOR_H_
