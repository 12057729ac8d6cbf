#include "sim/simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/checked.h"
#include "core/formatted.h"
#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "cost/nccl_model.h"
#include "cost/offload_model.h"
#include "sim/critical_path.h"
#include "sim/stage_models.h"
#include "sim/step_utilization.h"
#include "spec/stage_gpus.h"
#include "workload/data_parallel_plan.h"
#include "workload/layer_dims.h"
#include "workload/layer_ops.h"
#include "workload/model_states.h"

namespace loom {
namespace {

using ChunkLayers = std::vector<int64_t>;

// One data-parallel collective over both groups of |params|, |bytes| each.
SimTime GroupCollective(const CommModel& comm, CollectiveKind kind, const ParamGroups& params,
                        int64_t bytes, const Placements& placements) {
  SimTime t;
  if (params.dense > 0) t += comm.Collective(kind, params.dense * bytes, placements.dp);
  if (params.expert > 0) t += comm.Collective(kind, params.expert * bytes, placements.expert_dp);
  return t;
}

// |plan|'s gradient reduction, optimizer and weight all-gathers timed, with Megatron-LM's overlap
// switches, each on the models of the stage it runs on; its bytes in |payloads|.
StepGraphConfig TimeDataParallel(const Strategy& strategy, const DataParallelPlan& plan,
                                 const StageModels& models, const Placements& placements,
                                 StepPayloads& payloads) {
  StepGraphConfig config;
  const int64_t gradient = plan.bytes.gradient;
  const int64_t weight = plan.bytes.weight;
  config.dp.overlap_grad_reduce = strategy.overlap_grad_reduce;
  config.dp.overlap_param_gather = strategy.overlap_param_gather;
  config.dp.reduce_every_micro_batch = plan.reduce_every_micro_batch;
  config.dp.buckets = plan.buckets;
  payloads.grad_reduce = plan.grad_reduce;
  for (size_t v = 0; v < plan.bucket_params.size(); ++v) {
    const ParamGroups& bucket = plan.bucket_params[v];
    const CommModel& comm = models.StageComm(static_cast<int64_t>(v) % strategy.pp);
    config.dp.bucket_time.push_back(
        GroupCollective(comm, plan.grad_reduce, bucket, gradient, placements));
    payloads.bucket_bytes.push_back(bucket.dense * gradient);
    payloads.expert_bucket_bytes.push_back(bucket.expert * gradient);
  }
  for (size_t stage = 0; stage < plan.optimizer.size(); ++stage) {
    payloads.optimizer.push_back(plan.optimizer[stage]);
    const int64_t pipeline_stage = static_cast<int64_t>(stage);
    config.dp.optimizer_time.push_back(
        models.StageCompute(pipeline_stage).MemoryBound(plan.optimizer[stage]));
    const ParamGroups& gather = plan.param_gather[stage];
    config.dp.param_gather_time.push_back(GroupCollective(
        models.StageComm(pipeline_stage), CollectiveKind::kAllGather, gather, weight, placements));
    payloads.param_gather_bytes.push_back(gather.dense * weight);
    payloads.expert_param_gather_bytes.push_back(gather.expert * weight);
  }
  if (plan.layer_gathers > 0) {
    config.zero3.layer_gathers = plan.layer_gathers;
    // ZeRO-3 runs without pipelining (ValidateStrategy): one stage.
    config.zero3.layer_gather_time = GroupCollective(
        models.StageComm(0), CollectiveKind::kAllGather, plan.layer_params, weight, placements);
    config.zero3.layer_gather_bytes = plan.layer_params.Total() * weight;
  }
  return config;
}

// ZeRO-Offload's copies and CPU step per stage, and with parameter offload each layer's fetch.
// The GPU runs no optimizer step of its own then.
Status AddOffload(const ClusterSpec& cluster, const Strategy& strategy,
                  const DataParallelPlan& plan, StepGraphConfig& config) {
  if (strategy.offload == Offload::kNone) return Status::Ok();
  for (size_t stage = 0; stage < plan.updated_params.size(); ++stage) {
    LOOM_ASSIGN_OR_RETURN(OffloadCost cost,
                          CostOptimizerOffload(cluster, strategy, plan.updated_params[stage]));
    config.offload.grad_to_host.push_back(cost.grad_to_host);
    config.offload.cpu_step.push_back(cost.cpu_step);
    config.offload.params_to_gpu.push_back(cost.params_to_gpu);
    config.dp.optimizer_time[stage] = SimTime();
  }
  if (plan.layer_shard_params > 0) {
    LOOM_ASSIGN_OR_RETURN(config.zero3.layer_fetch_time,
                          CostParameterFetch(cluster, strategy, plan.layer_shard_params));
  }
  return Status::Ok();
}

// The ports each kind of transfer crosses, placed as the communication model times them: a group
// that spans nodes is limited by the NICs (its intra-node hops are many times faster), and a
// group inside a node uses the node's NVLink (or PCIe).
void SetFabrics(const Strategy& strategy, const Placements& placements, StepGraphConfig& config) {
  const auto fabric = [](bool across_nodes) {
    return across_nodes ? Fabric::kInterNode : Fabric::kIntraNode;
  };
  config.fabrics.pp = strategy.pp > 1 ? fabric(placements.pp_across_nodes) : Fabric::kNone;
  config.fabrics.dp = fabric(placements.dp.Nodes() > 1);
  // The tp task of a pass holds its tp, cp and ep collectives together: one that crosses nodes
  // dominates its time.
  config.fabrics.tp =
      fabric(placements.tp.Nodes() > 1 || placements.cp.Nodes() > 1 || placements.ep.Nodes() > 1);
  if (config.cp_ring) config.fabrics.cp = fabric(placements.cp.Nodes() > 1);
}

// The SMs Transformer Engine's userbuffers hold while --tp-comm-overlap hides a pass's tp
// collectives (transformer_engine/pytorch/module/base.py at d0067d0d, initialize_ub's
// get_default_config): the all-gathers beside qkv and fc1 fprop and proj and fc2 dgrad run as
// "ring_exchange" on 1 SM (the copy engines move the data, use_ce), the reduce-scatters as
// "pipeline" (proj and fc2 fprop) or "bulk" (qkv and fc1 dgrad) on 16. A pass hides as many
// all-gather bytes as reduce-scatter bytes (two of each per layer), so it holds 8.5 SMs on average.
constexpr double kTpOverlapSms = (1.0 + 16.0) / 2.0;

}  // namespace

TpHiddenHold TpHiddenSmHold(const ClusterSpec& cluster, const GpuSpec& gpu,
                            const Strategy& strategy, const Placements& placements,
                            bool framework_overlap) {
  if (strategy.tp < 2) return {};
  const double sms = static_cast<double>(gpu.sm_count);
  if (strategy.tp_comm_overlap) {
    return {std::min(0.9, kTpOverlapSms / sms),
            "--tp-comm-overlap's userbuffers hold 8.5 SMs (Transformer Engine's defaults)"};
  }
  if (!framework_overlap) return {};
  // The NCCL kernel of the reduction (the re-gather's has as many channels on these paths).
  const CollectiveKind kind =
      strategy.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const NcclCtaCount ctas = NcclCtas(cluster, kind, placements.tp);
  if (!ctas.ctas) {
    return {0,
            "the framework's asynchronous tp collectives take no SMs from the GEMMs beside "
            "them: the cluster file has no " +
                std::string(ctas.key)};
  }
  return {std::min(0.9, static_cast<double>(*ctas.ctas) / sms),
          "the framework's asynchronous tp collectives hold " + std::to_string(*ctas.ctas) +
              " SMs beside the GEMMs (" + std::string(ctas.key) + ")"};
}

namespace {

// Per stage, the share of its GPU's SMs the data-parallel collectives (NCCL: NcclCtas) and the
// hidden tp collectives (TpHiddenSmHold) hold while they run beside compute, and the share of its
// HBM bandwidth their traffic takes under |comm| (NcclHbmShare), and |basis| saying so.
void SetSmHolds(const ClusterSpec& cluster, const NcclCommModel& comm, const Strategy& strategy,
                const DataParallelPlan& plan, const Placements& placements, bool framework_overlap,
                StepGraphConfig& config, std::string& basis) {
  const bool dp = strategy.dp > 1;
  const NcclCtaCount ctas = NcclCtas(cluster, plan.grad_reduce, placements.dp);
  const bool tp = strategy.tp > 1 && (strategy.tp_comm_overlap || framework_overlap);
  if (!dp && !tp) return;
  const int64_t sms = GpuOfStage(cluster, strategy, 0).sm_count;
  if (dp && ctas.ctas) {
    basis = "data-parallel NCCL kernels hold " + std::to_string(*ctas.ctas) + " of " +
            std::to_string(sms) + " SMs (" + std::string(ctas.key) + ")";
  } else if (dp) {
    basis =
        "data-parallel collectives take no SMs from the compute beside them: the cluster "
        "file has no " +
        std::string(ctas.key) + " (add NCCL's channel count, NCCL_DEBUG=INFO's \"coll channels\")";
  }
  if (tp) {
    const TpHiddenHold hold = TpHiddenSmHold(cluster, GpuOfStage(cluster, strategy, 0), strategy,
                                             placements, framework_overlap);
    basis += std::string(basis.empty() ? "" : "; ") + hold.basis;
  }
  // The HBM bandwidth their traffic takes from memory-bound kernels (NcclHbmShare): the tp
  // collective hidden is the sequence-parallel reduce-scatter (or the all-reduce without sp).
  const CollectiveKind tp_kind =
      strategy.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  std::optional<double> basis_hbm_dp, basis_hbm_tp;
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    const GpuSpec& gpu = GpuOfStage(cluster, strategy, stage);
    const double stage_sms = static_cast<double>(gpu.sm_count);
    SmHolds holds;
    if (dp && ctas.ctas) holds.nccl = std::min(0.9, static_cast<double>(*ctas.ctas) / stage_sms);
    if (dp) holds.nccl_hbm = NcclHbmShare(comm, gpu, plan.grad_reduce, placements.dp);
    if (tp) {
      holds.tp_hidden = TpHiddenSmHold(cluster, gpu, strategy, placements, framework_overlap).share;
      holds.tp_hidden_hbm = NcclHbmShare(comm, gpu, tp_kind, placements.tp);
    }
    if (stage == 0) {
      if (dp) basis_hbm_dp = holds.nccl_hbm;
      if (tp) basis_hbm_tp = holds.tp_hidden_hbm;
    }
    config.sm_holds.push_back(holds);
  }
  const auto percent = [](double share) { return std::to_string(std::lround(share * 100)) + " %"; };
  if (basis_hbm_dp || basis_hbm_tp) {
    basis += "; their traffic takes ";
    if (basis_hbm_dp) basis += percent(*basis_hbm_dp) + " (data-parallel)";
    if (basis_hbm_dp && basis_hbm_tp) basis += " and ";
    if (basis_hbm_tp) basis += percent(*basis_hbm_tp) + " (tensor-parallel)";
    basis += " of the HBM bandwidth from memory-bound kernels";
  }
}

// Activation (or gradient) bytes each rank sends to its neighbouring stage per micro-batch:
// b x s/cp x h elements of the activation dtype (ActivationDtype: 4 bytes in fp32 and tf32, 2 in
// bf16, fp16 and fp8), split over tp. With sequence parallelism the tensor is already scattered;
// without it Megatron-LM's scatter/gather optimisation sends each tp rank's 1/tp slice over its own
// link and all-gathers it over NVLink at the receiver (Narayanan et al. 2021, Section 4.1; on
// unless
// --no-scatter-gather-tensors-in-pipeline). That all-gather is not timed: 1/tp of the transfer
// over a link many times faster.
int64_t P2pBytes(const ModelSpec& model, const Strategy& s) {
  const int64_t tokens = s.micro_batch * s.seq_len / s.cp;
  return CeilDiv(tokens * model.hidden_size * BytesPerElement(ActivationDtype(s.dtype)), s.tp);
}

// |t| in milliseconds, for the basis lines of the output.
std::string Milliseconds(SimTime t) { return Fixed(t.ToSeconds() * 1e3, 3) + " ms"; }

// The host thread of |framework|: its synchronisation points and each stage's optimizer lead: the
// fixed host time (gradient norm, found-inf, Python) before any optimizer kernel, then as much of
// the per-layer issue as the GPU's optimizer kernels do not cover; and per virtual stage the
// training script's host work before each micro-batch's forward (|microbatch_basis| says what and
// how much; the mask only with |kernels|' unfused attention, which takes one).
void SetHost(const FrameworkProfile& framework, const ChunkLayers& layers,
             const PipelineSchedule& schedule, const Strategy& strategy,
             const LayerOpsOptions& kernels, StepGraphConfig& config,
             std::string& microbatch_basis) {
  config.host.enabled = true;
  config.host.sync_after_p2p = framework.sync_after_p2p;
  config.host.sync_before_optimizer = framework.sync_before_optimizer;
  if (const std::optional<MicroBatchHost>& mb = framework.microbatch) {
    config.host.sync_per_micro_batch = mb->sync;
    // The mask is built for attention that takes one: loom's unfused attention.
    const double mask_us =
        kernels.attention == AttentionKernel::kUnfused ? mb->MaskUs(strategy.seq_len) : 0;
    const int32_t head = schedule.VirtualStages() - 1;
    for (int32_t v = 0; v < schedule.VirtualStages(); ++v) {
      const int32_t ops = mb->batch_ops + (v == head ? mb->loss_ops : 0);
      config.host.microbatch_lead.push_back(ScaledHostTime(
          framework, framework.forward_us_per_op * static_cast<double>(ops) + mask_us));
    }
    microbatch_basis = framework.file + ": before each micro-batch's forward of a chunk the host " +
                       (mb->sync ? "waits for the GPU, then " : "") + "issues " +
                       std::to_string(mb->batch_ops) + " ops of the batch's input (" +
                       std::to_string(mb->loss_ops) + " more for the loss on the last stage)";
    if (mask_us > 0) {
      microbatch_basis += " and builds the causal mask on the CPU (" +
                          Milliseconds(ScaledHostTime(framework, mask_us)) + " at seq " +
                          std::to_string(strategy.seq_len) + ")";
    }
    microbatch_basis += ": " + Milliseconds(config.host.microbatch_lead.front()) + " a micro-batch";
    if (schedule.VirtualStages() > 1) {
      microbatch_basis += " on the first stage, " +
                          Milliseconds(config.host.microbatch_lead.back()) + " on the last";
    }
  }
  for (int32_t stage = 0; stage < schedule.stages; ++stage) {
    int64_t stage_layers = 0;
    for (int32_t chunk = 0; chunk < schedule.chunks; ++chunk)
      stage_layers += layers[schedule.VirtualStage(stage, chunk)];
    const SimTime issue = ScaledHostTime(
        framework, framework.optimizer_us_per_layer * static_cast<double>(stage_layers));
    const SimTime gpu = config.dp.optimizer_time[stage];
    config.host.optimizer_lead.push_back(ScaledHostTime(framework, framework.optimizer_us_fixed) +
                                         std::max(SimTime(), issue - gpu));
  }
}

// The linear weights of one layer on a rank, in parameters, in the order its forward uses them:
// Megatron's four (QKV, the attention's projection, the MLP's up projection with its gate when
// gated, and its down projection), each a module of its own that DeepSpeed's ZeRO-3 fetches by
// itself. Models with multi-head latent attention or experts: their layer's weights in four equal
// parts.
std::array<double, 4> LayerLinearWeights(const ModelSpec& model, const Strategy& strategy) {
  if (model.mla.has_value() || model.moe.has_value()) return {1, 1, 1, 1};
  const double h = static_cast<double>(model.hidden_size);
  const double q = static_cast<double>(model.num_heads * model.head_dim);
  const double kv = static_cast<double>(model.num_kv_heads * model.head_dim);
  const double ffn = static_cast<double>(model.intermediate_size);
  const double tp = static_cast<double>(strategy.tp);
  return {h * (q + 2 * kv) / tp, q * h / tp, h * ffn * (model.mlp == MlpKind::kGated ? 2 : 1) / tp,
          ffn * h / tp};
}

// The model's norm weights and biases as (parameters, tensors in the model) on a rank: per layer
// its norms' weights (and LayerNorm's biases), the q and k norms and the linear layers' biases, and
// the final norm. The candidates for DeepSpeed's persistent weights.
std::vector<std::pair<int64_t, int64_t>> SmallWeights(const ModelSpec& model,
                                                      const Strategy& strategy) {
  const int64_t h = model.hidden_size, layers = model.num_layers, tp = strategy.tp;
  const int64_t norm_tensors =
      model.norm_weights ? (model.norm == NormKind::kLayerNorm ? 2 : 1) : 0;
  std::vector<std::pair<int64_t, int64_t>> w;
  w.push_back({h, norm_tensors * (model.norms_per_layer * layers + 1)});
  if (model.q_norm_width > 0) w.push_back({model.q_norm_width, layers});
  if (model.k_norm_width > 0) w.push_back({model.k_norm_width, layers});
  const int64_t q = model.num_heads * model.head_dim, kv = model.num_kv_heads * model.head_dim;
  if (model.attention_bias) w.push_back({CeilDiv(q + 2 * kv, tp), layers});
  if (model.attention_output_bias) w.push_back({h, layers});
  if (model.mlp_bias) {
    w.push_back(
        {CeilDiv(model.intermediate_size * (model.mlp == MlpKind::kGated ? 2 : 1), tp), layers});
    w.push_back({h, layers});
  }
  return w;
}

// ZeRO-3 as |framework| runs it (ShardedFetch), in place of the per-layer gathers and
// reductions of TimeDataParallel: a gather and a gradient reduction per linear weight, each
// timed as the mean of the four weights' collectives (the passes are cut into equal segments), the
// host's issue of each (the list collectives' per-rank cost), and the backward's second gather of
// the weights the recomputed forward released (|sharded_basis| says how much).
void SetShardedFetch(const FrameworkProfile& framework, const ModelSpec& model,
                     const Strategy& strategy, const DataParallelPlan& plan,
                     const StageModels& models, const Placements& placements,
                     StepGraphConfig& config, std::string& sharded_basis) {
  const ShardedFetch& z = *framework.zero3;
  const std::array<double, 4> w = LayerLinearWeights(model, strategy);
  const double sum = w[0] + w[1] + w[2] + w[3];
  const CommModel& comm = models.StageComm(0);
  const double layer = static_cast<double>(plan.layer_params.Total());
  const CollectiveKind reduction = z.gradient_reduction == ShardedFetch::Reduction::kAllReduce
                                       ? CollectiveKind::kAllReduce
                                       : CollectiveKind::kReduceScatter;
  std::array<SimTime, 4> gather{};
  SimTime gather_sum, reduce_sum;
  const ComputeModel& compute = models.StageCompute(0);
  for (size_t i = 0; i < w.size(); ++i) {
    const ParamGroups part{static_cast<int64_t>(layer * w[i] / sum), 0};
    // Beside each NCCL call, on its stream, the copies of the code around it: a gather zeroes the
    // weight's buffer (torch.zeros in _allgather_param) and ProcessGroupNCCL copies its flat
    // result out to the list's views; the list reduce-scatter divides the gradient (average_tensor)
    // and copies it in; the all-reduce fallback flattens the bucket (torch.cat), divides it and
    // copies the result back (allreduce_and_copy).
    const int64_t weight_bytes = part.dense * plan.bytes.weight;
    const int64_t grad_bytes = part.dense * plan.bytes.gradient;
    gather[i] =
        GroupCollective(comm, CollectiveKind::kAllGather, part, plan.bytes.weight, placements) +
        compute.MemoryBound({weight_bytes, 2 * weight_bytes});
    gather_sum += gather[i];
    const int64_t passes = reduction == CollectiveKind::kAllReduce ? 3 : 2;
    reduce_sum += GroupCollective(comm, reduction, part, plan.bytes.gradient, placements) +
                  compute.MemoryBound({passes * grad_bytes, passes * grad_bytes});
  }
  const int32_t weights = static_cast<int32_t>(w.size());
  config.zero3.layer_gathers = plan.layer_gathers * weights;
  config.zero3.layer_gather_time = SimTime::FromNanos(gather_sum.nanos() / weights);
  config.zero3.layer_gather_bytes = CeilDiv(plan.layer_params.Total(), weights) * plan.bytes.weight;
  config.dp.buckets.assign(config.dp.buckets.size(), config.zero3.layer_gathers);
  config.dp.bucket_time.assign(config.dp.bucket_time.size(),
                               SimTime::FromNanos(reduce_sum.nanos() / weights));
  config.zero3.synchronous_fetch = z.synchronous;
  const double list_us = z.list_collective_us_per_rank * static_cast<double>(placements.dp.ranks);
  config.zero3.gather_issue_time =
      z.list_all_gather ? ScaledHostTime(framework, list_us) : SimTime();
  config.zero3.reduce_issue_time =
      z.list_reduce_scatter ? ScaledHostTime(framework, list_us) : SimTime();
  // After the recomputed forward of a layer, each weight stays gathered if its backward comes
  // within max_reuse_distance parameters: the distance counts every module's weights on the trace
  // between the two uses (PrefetchCoordinator._distance_in_numel), the layer's weights after it
  // twice, in their recomputed forward and in their backward, which comes first.
  double regathered = 0;
  if (strategy.recompute == Recompute::kFull && z.max_reuse_distance > 0) {
    double after = 0;
    for (size_t i = w.size(); i-- > 0;) {
      if (2 * layer * after / sum > static_cast<double>(z.max_reuse_distance))
        regathered += static_cast<double>(gather[i].nanos());
      after += w[i];
    }
  }
  config.zero3.backward_gathers = 1.0 + regathered / static_cast<double>(gather_sum.nanos());
  // A weight is prefetched while the one before it (the last of the layer before, for the first)
  // is the only one gathered, if that one is under max_live_parameters.
  double unprefetched = 0;
  if (z.max_live_parameters > 0) {
    for (size_t i = 0; i < w.size(); ++i) {
      const double before = w[(i + w.size() - 1) % w.size()];
      if (layer * before / sum >= static_cast<double>(z.max_live_parameters))
        unprefetched += static_cast<double>(gather[i].nanos());
    }
  }
  config.zero3.unprefetched_share = unprefetched / static_cast<double>(gather_sum.nanos());
  // The persistent weights' gather after the step: a copy per weight and rank that holds a slice.
  double copies = 0;
  if (z.persistence_threshold > 0) {
    const int64_t ranks = placements.dp.ranks;
    for (const auto& [numel, count] : SmallWeights(model, strategy)) {
      if (numel >= z.persistence_threshold) continue;
      const int64_t slice = CeilDiv(numel, ranks);
      copies += static_cast<double>(count * CeilDiv(numel, slice));
    }
  }
  config.zero3.post_step_host_time =
      ScaledHostTime(framework, copies * z.persistent_gather_us_per_rank);
  sharded_basis =
      framework.file + ": ZeRO-3 gathers each of a layer's 4 linear weights by itself (" +
      Milliseconds(config.zero3.layer_gather_time) + " on average)" +
      (z.synchronous ? ", the host waiting for the GPU around each fetch" : "") +
      (z.list_all_gather ? ", issuing each in " + Milliseconds(config.zero3.gather_issue_time) +
                               " (" + Fixed(z.list_collective_us_per_rank, 1) + " us for each of " +
                               std::to_string(placements.dp.ranks) + " ranks)"
                         : "") +
      "; " + (reduction == CollectiveKind::kAllReduce ? "all-reduces" : "reduce-scatters") +
      " each weight's gradient (" + Milliseconds(config.dp.bucket_time.front()) +
      (z.list_reduce_scatter ? ", issued in " + Milliseconds(config.zero3.reduce_issue_time) : "") +
      ")" +
      (config.zero3.backward_gathers > 1.0
           ? "; the backward gathers " + Fixed(config.zero3.backward_gathers, 2) +
                 " times the weights (stage3_max_reuse_distance " +
                 std::to_string(z.max_reuse_distance) + " releases them after the recompute)"
           : "") +
      (config.zero3.unprefetched_share > 0
           ? "; " + Fixed(100 * config.zero3.unprefetched_share, 0) +
                 " % of the gathers cannot be prefetched (a weight of stage3_max_live_parameters " +
                 std::to_string(z.max_live_parameters) + " or more is gathered before them)"
           : "") +
      (config.zero3.post_step_host_time > SimTime()
           ? "; after the step the host gathers the persistent weights (under " +
                 std::to_string(z.persistence_threshold) +
                 " parameters) slice by slice: " + Milliseconds(config.zero3.post_step_host_time)
           : "");
}

// Which of the kernels that |framework|'s modules launch around the layer (its "layer_kernels")
// this model and attention kernel have, in words; empty when none.
std::string DescribeModuleKernels(const FrameworkProfile& framework, const ModelSpec& model,
                                  const Strategy& strategy, AttentionKernel attention) {
  if (!framework.layer_kernels) return "";
  const ModuleKernels& k = *framework.layer_kernels;
  std::vector<std::string> parts;
  if (k.linear_bias_grads &&
      (model.attention_bias || model.attention_output_bias || model.mlp_bias))
    parts.push_back("a reduction kernel for each linear's bias gradient");
  if (k.qkv_split_grad_copy) parts.push_back("a copy of the QKV split's gradients");
  if (k.attention_unpad && attention == AttentionKernel::kFused)
    parts.push_back("q, k and v unpadded and the output padded around the attention");
  if (k.fp8_weight_cast_every_microbatch && strategy.dtype == Dtype::kFp8)
    parts.push_back("each linear's weight cast to fp8 in every micro-batch");
  if (parts.empty()) return "";
  std::string text = framework.file + ": its modules add ";
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return text + " (in compute above)";
}

// The mean peak FLOP/s of the step's GPUs in |strategy.dtype|: the one GPU's peak, or with node
// groups every stage's GPU's peak weighted by its ranks (the same count a stage). MFU and HFU
// divide by world * this, the sum of every GPU's own peak: a mixed fleet's utilisation is of what
// all its GPUs together could do.
double PeakFlopsPerGpu(const ClusterSpec& cluster, const Strategy& strategy) {
  if (cluster.node_groups.empty()) return cluster.gpu.PeakTflops(strategy.dtype).value_or(0) * 1e12;
  double sum = 0;
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    sum += GpuOfStage(cluster, strategy, stage).PeakTflops(strategy.dtype).value_or(0) * 1e12;
  }
  return sum / static_cast<double>(strategy.pp);
}

// With node groups each stage has its own GPU's memory: the peak and the limit |r| reports are
// those of the stage with the least headroom (the highest peak over its usable memory), so that
// peak <= limit says whether every stage fits. With one GPU type that is the highest peak.
void TightestStage(const Strategy& strategy, const std::vector<MemoryReserve>& reserves,
                   SimulationResult& r) {
  double tightest = -1;
  for (size_t s = 0; s < r.stages.size(); ++s) {
    const int64_t stage = static_cast<int64_t>(s) % strategy.pp;
    const MemoryReserve& reserve = reserves[static_cast<size_t>(stage) % reserves.size()];
    const int64_t limit = reserve.LimitBytes();
    const double ratio = static_cast<double>(r.stages[s].peak_memory_bytes) /
                         static_cast<double>(std::max<int64_t>(1, limit));
    if (ratio <= tightest) continue;
    tightest = ratio;
    r.peak_memory_bytes = r.stages[s].peak_memory_bytes;
    r.memory_limit_bytes = limit;
    r.reserve = reserve;
  }
}

void Summarize(const ModelSpec& model, const ClusterSpec& cluster, const Strategy& strategy,
               const std::vector<ChunkCost>& costs, const std::vector<MemoryReserve>& reserves,
               SimulationResult& r) {
  const StepGraph& step = r.step;
  r.step_time_s = r.timeline.makespan.ToSeconds();
  const StepUtilization u = MeasureUtilization(step, r.timeline);
  for (int32_t s = 0; s < step.stages; ++s) {
    StageResult stage{s, r.memory.ranks[s].peak_bytes, u.compute_s[s], u.bubble_s[s]};
    r.stages.push_back(stage);
    r.breakdown.compute_s += u.compute_s[s] / step.stages;
    r.breakdown.bubble_s += u.bubble_s[s] / step.stages;
    r.breakdown.optimizer_s += u.optimizer_s[s] / step.stages;
    r.breakdown.exposed_comm_s += (u.tp_s[s] + u.comm_wait_s[s] + u.tail_s[s]) / step.stages;
    r.breakdown.host_s += (u.host_wait_s[s] + u.host_wait_after_s[s]) / step.stages;
    r.breakdown.compute_slowed_s += r.timeline.sm_lost[s].ToSeconds() / step.stages;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, r.memory.ranks[s].peak_bytes);
  }
  r.bubble_fraction = u.bubble_fraction;
  const double world = static_cast<double>(strategy.WorldSize());
  const double tokens = static_cast<double>(strategy.global_batch * strategy.seq_len);
  const double peak = PeakFlopsPerGpu(cluster, strategy);
  const double model_flops = ModelFlopsPerToken(model, strategy.seq_len).training * tokens;
  // Hardware FLOPs: every pass's ops on every tp and cp rank of every replica, recompute included.
  double pass_flops = 0;
  for (const ChunkCost& c : costs) {
    pass_flops += c.forward.flops + c.backward_input.flops + c.backward_weight.flops;
  }
  const double hardware_flops = pass_flops * static_cast<double>(strategy.NumMicroBatches()) *
                                static_cast<double>(strategy.tp * strategy.cp * strategy.dp);
  r.tokens_per_s = tokens / r.step_time_s;
  r.model_tflops_per_gpu = model_flops / r.step_time_s / world / 1e12;
  r.mfu = model_flops / (r.step_time_s * world * peak);
  r.hfu = hardware_flops / (r.step_time_s * world * peak);
  r.reserve = reserves.front();
  r.memory_limit_bytes = r.reserve.LimitBytes();
  if (!cluster.node_groups.empty()) TightestStage(strategy, reserves, r);
  r.fits_in_memory = r.peak_memory_bytes <= r.memory_limit_bytes;
  r.inside_headroom =
      !r.fits_in_memory && r.peak_memory_bytes <= r.memory_limit_bytes + r.reserve.headroom_bytes;
}

CriticalPathSummary SummarizeCriticalPath(const StepGraph& step, const StepTimeline& timeline) {
  CriticalPathSummary summary;
  for (const CriticalStep& critical : CriticalPath(step.graph, timeline)) {
    const Task& t = step.graph.task(critical.task);
    const double s = (timeline.end[critical.task] - timeline.start[critical.task]).ToSeconds();
    ++summary.tasks;
    if (t.category == step.compute_category) summary.compute_s += s;
    if (t.category == step.tp_category || t.category == step.tp_hidden_category)
      summary.tp_comm_s += s;
    if (t.category == step.cp_category) summary.cp_comm_s += s;
    if (t.category == step.pp_category) summary.pp_comm_s += s;
    if (t.category == step.dp_category) summary.dp_comm_s += s;
    if (t.category == step.optimizer_category) summary.optimizer_s += s;
    if (t.category == step.host_category) summary.host_s += s;
  }
  return summary;
}

// The pass times a schedule built from profiled times (ZB-V, BuildSchedule) gets: what the
// zero-bubble repository measures over its first iterations and builds from (update_schedule in
// megatron/core/pipeline_parallel/zb_schedules.py at sail-sg/zero-bubble-pipeline-parallelism
// 425b42e5): each stage's mean forward, input-backward and weight-backward over its chunks, the
// median of those over the stages, and the time of one pipeline transfer; in nanoseconds.
PassTimes ProfiledPassTimes(const Strategy& strategy, const std::vector<ChunkCost>& costs,
                            SimTime p2p_time) {
  if (strategy.schedule != ScheduleKind::kZbV) return {};
  std::vector<int64_t> f, b, w;
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    int64_t sum_f = 0, sum_b = 0, sum_w = 0;
    for (int64_t chunk = 0; chunk < strategy.vpp; ++chunk) {
      const ChunkCost& c =
          costs[static_cast<size_t>(VirtualStageOf(strategy.pp, strategy.schedule, stage, chunk))];
      sum_f += c.forward.time.nanos();
      sum_b += c.backward_input.time.nanos();
      sum_w += c.backward_weight.time.nanos();
    }
    f.push_back(sum_f / strategy.vpp);
    b.push_back(sum_b / strategy.vpp);
    w.push_back(sum_w / strategy.vpp);
  }
  const auto median = [](std::vector<int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return {median(f), median(b), median(w), p2p_time.nanos()};
}

}  // namespace

// The longest step loom reports: 10^6 s, some eleven days.
constexpr double kMaxStepSeconds = 1e6;
// The forward passes of all replicas --full simulates at most (a graph of some 10^8 tasks).
constexpr int64_t kMaxFullPasses = int64_t{1} << 22;

Result<PreparedStep> PrepareTrainingStep(const ModelSpec& model, const ClusterSpec& cluster,
                                         const Strategy& strategy,
                                         const SimulationOptions& options) {
  LOOM_RETURN_IF_ERROR(ValidateStrategy(strategy, model, cluster));
  const int32_t chunks = static_cast<int32_t>(strategy.vpp);
  PreparedStep step;
  // Each stage is costed on its own GPU (StageModels); the sends between stages cross the
  // cluster's network.
  const StageModels models(cluster, strategy);
  NcclCommModel comm(cluster);
  const Placements placements = PlaceStrategy(strategy, cluster);
  const std::optional<HostCosts> host =
      options.framework ? std::optional<HostCosts>(HostCostsOf(*options.framework)) : std::nullopt;
  LOOM_ASSIGN_OR_RETURN(step.costs,
                        CostStageChunks(model, strategy, models, placements, options.Kernels(),
                                        host ? &*host : nullptr, &step.tensor_clocks,
                                        options.AttentionPolicy(), &step.attention_basis));
  step.payloads.p2p_bytes = P2pBytes(model, strategy);
  const SimTime p2p_time = comm.PointToPoint(step.payloads.p2p_bytes, placements.pp_across_nodes);
  LOOM_ASSIGN_OR_RETURN(step.schedule,
                        BuildSchedule(strategy.schedule, static_cast<int32_t>(strategy.pp),
                                      static_cast<int32_t>(strategy.NumMicroBatches()), chunks,
                                      static_cast<int32_t>(strategy.microbatch_group),
                                      ProfiledPassTimes(strategy, step.costs, p2p_time)));
  const ChunkLayers layers = LayersPerVirtualStage(strategy, model.num_layers);
  LOOM_ASSIGN_OR_RETURN(const DataParallelPlan plan,
                        PlanDataParallel(model, strategy, layers, step.schedule));
  step.config = TimeDataParallel(strategy, plan, models, placements, step.payloads);
  if (options.full) {
    // Every replica is a copy of the pipeline's graph: bound the whole, as ValidateStrategy bounds
    // one.
    const CheckedInt passes =
        CheckedInt(strategy.dp) * strategy.pp * strategy.vpp * strategy.NumMicroBatches();
    if (!passes.get() || *passes.get() > kMaxFullPasses) {
      return Status::InvalidArgument(
          "--full with --dp " + std::to_string(strategy.dp) +
          ": every replica's passes (dp * pp * vpp * micro-batches) must be at most " +
          std::to_string(kMaxFullPasses) + "; drop --full (replicas are identical)");
    }
  }
  step.config.replicas = options.full ? static_cast<int32_t>(strategy.dp) : 1;
  step.config.pipeline.p2p_time = p2p_time;
  step.config.cp_ring = strategy.cp > 1 && strategy.cp_comm == CpComm::kP2p;
  LOOM_RETURN_IF_ERROR(AddOffload(cluster, strategy, plan, step.config));
  if (options.share_bandwidth) SetFabrics(strategy, placements, step.config);
  if (options.share_sms)
    SetSmHolds(cluster, comm, strategy, plan, placements, options.Kernels().tp_backward_overlap,
               step.config, step.sm_basis);
  if (options.framework)
    SetHost(*options.framework, layers, step.schedule, strategy, options.Kernels(), step.config,
            step.microbatch_basis);
  if (options.framework && options.framework->zero3 && plan.layer_gathers > 0) {
    SetShardedFetch(*options.framework, model, strategy, plan, models, placements, step.config,
                    step.sharded_basis);
  }
  const LayerOpsOptions kernels = options.Kernels();
  if (options.framework) {
    step.layer_kernels_basis =
        DescribeModuleKernels(*options.framework, model, strategy, kernels.attention);
  }
  if (kernels.attention == AttentionKernel::kUnfused && !FusedSoftmaxTakes(model, strategy)) {
    // The kernels workload/attention_ops.cc builds for it (TorchSoftmaxForward), in words.
    const Dtype scores = ActivationDtype(strategy.dtype);
    const bool casts = BytesPerElement(scores) != 4;
    step.softmax_basis =
        "Megatron-LM's fused softmax does not take these scores (it needs 16-bit scores, 16 < "
        "--seq <= 4096 with --seq a multiple of 4, and --micro-batch * heads per tp rank a "
        "multiple of 4, of 8 at 128 keys or fewer; here --dtype " +
        std::string(kDtypeNames.Name(strategy.dtype)) + ", --seq " +
        std::to_string(strategy.seq_len) + ", " + std::to_string(strategy.micro_batch) + " x " +
        std::to_string(model.num_heads / strategy.tp) +
        "), so PyTorch's runs: " + (casts ? "the scores cast to fp32, " : "") +
        (kernels.modules.query_key_layer_scaling
             ? "scaled by the layer number (query-key layer scaling), "
             : "") +
        (kernels.causal ? "the causal mask filled in, " : "") + "the softmax" +
        (casts ? " and the cast back" : "") +
        ", each a kernel reading and writing every score, the fp32 probabilities kept for "
        "backward (in compute above)";
  }
  for (const RankModelStates& s : plan.stage_states) step.model_states.push_back(s.gpu);
  const FrameworkProfile* framework = options.framework ? &*options.framework : nullptr;
  const int64_t reserve_stages = cluster.node_groups.empty() ? 1 : strategy.pp;
  for (int64_t stage = 0; stage < reserve_stages; ++stage) {
    const GpuSpec& gpu = GpuOfStage(cluster, strategy, stage);
    step.reserves.push_back(
        ReserveOf(gpu, cluster, strategy, placements, framework, options.memory_headroom));
    LOOM_RETURN_IF_ERROR(CheckRoomBesideReserve(gpu, step.reserves.back()));
  }
  step.strategy = strategy;
  return step;
}

std::vector<MemoryBaseline> ModelStateBaselines(const StepGraph& step,
                                                const PreparedStep& prepared) {
  std::vector<MemoryBaseline> baselines;
  for (int32_t rank = 0; rank < step.graph.num_ranks(); ++rank) {
    const ModelStateBytes& states = prepared.model_states[rank % step.stages];
    baselines.push_back({rank, step.weights, states.weights});
    baselines.push_back({rank, step.gradients, states.gradients});
    baselines.push_back({rank, step.optimizer_states, states.optimizer});
  }
  return baselines;
}

Result<SimulationResult> SimulatePreparedStep(const ModelSpec& model, const ClusterSpec& cluster,
                                              const PreparedStep& step) {
  SimulationResult result;
  result.step = BuildStepGraph(step.schedule, step.costs, step.config);
  LOOM_ASSIGN_OR_RETURN(result.timeline, Simulate(result.step.graph));
  // A step of weeks is no training run: a rate in the hardware files is off by orders of magnitude
  // (a bandwidth of 1e-9 GB/s). Times beyond 146 years have saturated (SimTime::Forever) and mean
  // nothing.
  if (result.timeline.makespan > SimTime::FromSeconds(kMaxStepSeconds)) {
    return Status::InvalidArgument(
        "the step would take " + std::to_string(result.timeline.makespan.ToSeconds()) +
        " s, more than " + std::to_string(static_cast<int64_t>(kMaxStepSeconds)) +
        " s: a rate in " +
        (cluster.gpu.file.empty() ? std::string("the GPU file") : cluster.gpu.file) + " or " +
        (cluster.file.empty() ? std::string("the cluster file") : cluster.file) +
        " is far too low; check hbm_bandwidth_GBps, the peak TFLOP/s, bandwidth_GBps and "
        "nic_bandwidth_Gbps");
  }
  const std::vector<MemoryBaseline> baselines = ModelStateBaselines(result.step, step);
  LOOM_ASSIGN_OR_RETURN(result.memory, TrackMemory(result.step.graph, result.timeline, baselines));
  Summarize(model, cluster, step.strategy, step.costs, step.reserves, result);
  result.memory_by_stage =
      BreakDownMemory(result.step, result.timeline, result.memory, step.schedule);
  result.peak_stage = PeakStage(result.memory_by_stage);
  result.critical_path = SummarizeCriticalPath(result.step, result.timeline);
  result.sm_basis = step.sm_basis;
  result.clock_basis = DescribeTensorClocks(step.tensor_clocks);
  for (const std::string& line : step.attention_basis)
    result.attention_basis += (result.attention_basis.empty() ? "" : "; ") + line;
  for (const StepTensorClock& c : step.tensor_clocks)
    result.tensor_clock = std::min(result.tensor_clock, c.clock);
  result.microbatch_basis = step.microbatch_basis;
  result.sharded_basis = step.sharded_basis;
  result.layer_kernels_basis = step.layer_kernels_basis;
  result.softmax_basis = step.softmax_basis;
  return result;
}

std::vector<BlockTimes> PredictOpTimes(const ClusterSpec& cluster, const Strategy& strategy,
                                       const ChunkBlocks& blocks) {
  NcclCommModel comm(cluster);
  const Placements placements = PlaceStrategy(strategy, cluster);
  // The tensor clock of the blocks' compute, as CostStageChunks finds a step's (each block once).
  double flops = 0, seconds = 0;
  const RooflineComputeModel burst(cluster.gpu);
  for (const LayerOps& ops : blocks.blocks) {
    for (const std::vector<Op>* pass :
         {&ops.forward, &ops.backward_input, &ops.backward_weight, &ops.recompute}) {
      for (const Op& op : *pass) {
        if (op.kind == OpKind::kCollective) continue;
        flops += static_cast<double>(OpFlops(op));
        seconds += OpTime(op, burst, comm, placements).ToSeconds();
      }
    }
  }
  const RooflineComputeModel compute(
      cluster.gpu, ClockRegime::kBurst,
      TensorClock(cluster.gpu, strategy.dtype, seconds > 0 ? flops / seconds : 0.0));
  const auto times = [&](const std::vector<Op>& ops) {
    std::vector<SimTime> out;
    for (const Op& op : ops) out.push_back(OpTime(op, compute, comm, placements));
    return out;
  };
  std::vector<BlockTimes> out;
  for (const LayerOps& ops : blocks.blocks) {
    out.push_back({times(ops.forward), times(ops.backward_input), times(ops.backward_weight),
                   times(ops.recompute)});
  }
  return out;
}

Result<SimulationResult> SimulateTrainingStep(const ModelSpec& model, const ClusterSpec& cluster,
                                              const Strategy& strategy,
                                              const SimulationOptions& options) {
  LOOM_ASSIGN_OR_RETURN(const PreparedStep step,
                        PrepareTrainingStep(model, cluster, strategy, options));
  return SimulatePreparedStep(model, cluster, step);
}

}  // namespace loom
