#include "sim/simulator.h"

#include <algorithm>

#include "core/checked.h"
#include "cost/comm_model.h"
#include "cost/compute_model.h"
#include "cost/nccl_model.h"
#include "cost/offload_model.h"
#include "sim/critical_path.h"
#include "sim/step_utilization.h"
#include "workload/layer_dims.h"
#include "workload/model_states.h"

namespace loom {
namespace {

// Megatron-core's default gradient bucket: max(40M, 1M * dp) parameters
// (megatron/core/distributed/distributed_data_parallel.py, bucket_size).
int64_t BucketParams(int64_t dp_ranks) {
  return std::max<int64_t>(40'000'000, 1'000'000 * dp_ranks);
}

using ChunkLayers = std::vector<int64_t>;

struct StageStates {
  std::vector<RankModelStates> per_stage;
};

Result<StageStates> StatesPerStage(const ModelSpec& model, const Strategy& strategy) {
  StageStates states;
  for (int64_t stage = 0; stage < strategy.pp; ++stage) {
    Result<RankModelStates> s = ModelStatesPerRank(model, strategy, stage);
    if (!s.ok()) return s.status();
    states.per_stage.push_back(*s);
  }
  return states;
}

// The parameters of one stage (or chunk) by the group that reduces their gradients: dense ones
// over the dp * cp ranks, routed experts over the expert-data-parallel ranks.
struct ParamGroups {
  int64_t dense = 0;
  int64_t expert = 0;
};

// The parameters a rank updates under ZeRO >= 1: its shard of each group.
int64_t ShardParams(const RankParameters& p, const Strategy& strategy) {
  return CeilDiv(p.dense, strategy.dp * strategy.cp) + CeilDiv(p.expert, strategy.ExpertDp());
}

// One data-parallel collective over both groups of |params|, |bytes| each.
SimTime GroupCollective(const CommModel& comm, CollectiveKind kind, const ParamGroups& params,
                        int64_t bytes, const Placements& placements) {
  SimTime t;
  if (params.dense > 0) t += comm.Collective(kind, params.dense * bytes, placements.dp);
  if (params.expert > 0) t += comm.Collective(kind, params.expert * bytes, placements.expert_dp);
  return t;
}

// Gradient reduction, optimizer and weight all-gather of every stage, with Megatron-LM's overlap
// switches and ZeRO's stages (Rajbhandari et al. 2020, Section 5): stage 1 reduce-scatters the
// gradients once per step and all-gathers the updated weights; stage 2 reduce-scatters after every
// micro-batch, keeping only its shard; stage 3 also gathers every layer's weights before its
// forward and backward, and reduce-scatters layer by layer.
StepGraphConfig DataParallelConfig(const Strategy& strategy, const StageStates& states,
                                   const ChunkLayers& layers, const PipelineSchedule& schedule,
                                   const ComputeModel& compute, const CommModel& comm,
                                   const Placements& placements, StepPayloads& payloads) {
  StepGraphConfig config;
  const int64_t dp_ranks = strategy.dp * strategy.cp;
  const StateBytesPerParam bytes = BytesPerParameter(strategy);
  const int32_t v_count = schedule.VirtualStages();
  const int32_t chunks = schedule.chunks;
  const int64_t zero = strategy.zero_stage;
  config.overlap_grad_reduce = strategy.overlap_grad_reduce;
  config.overlap_param_gather = strategy.overlap_param_gather;
  config.reduce_every_micro_batch = zero >= 2;
  config.buckets.assign(static_cast<size_t>(v_count), 1);
  config.bucket_time.assign(static_cast<size_t>(v_count), SimTime());
  // Megatron's distributed optimizer (ZeRO >= 1) reduce-scatters gradients and all-gathers the
  // updated weights; plain data parallelism all-reduces gradients.
  const CollectiveKind reduce =
      zero >= 1 ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  payloads.grad_reduce = reduce;
  payloads.bucket_bytes.assign(static_cast<size_t>(v_count), 0);
  payloads.expert_bucket_bytes.assign(static_cast<size_t>(v_count), 0);
  for (int32_t stage = 0; stage < schedule.stages; ++stage) {
    const RankParameters& p = states.per_stage[stage].parameters;
    // A chunk's share of the stage's parameters: an equal one when the chunks hold equal layers;
    // else in proportion to its layers, the embedding and the output layer counting as one each
    // (unequal chunks, as Llama 3's first chunk with the embedding alone).
    int64_t stage_weight = 0;
    bool equal = true;
    for (int32_t chunk = 0; chunk < chunks; ++chunk) {
      const int32_t v = schedule.VirtualStage(stage, chunk);
      stage_weight += layers[v] + (v == 0) + (v + 1 == v_count);
      equal = equal && layers[v] == layers[schedule.VirtualStage(stage, 0)];
    }
    for (int32_t chunk = 0; chunk < chunks; ++chunk) {
      const int32_t v = schedule.VirtualStage(stage, chunk);
      const int64_t weight = layers[v] + (v == 0) + (v + 1 == v_count);
      const ParamGroups chunk_params =
          equal || stage_weight == 0
              ? ParamGroups{CeilDiv(p.dense, chunks), CeilDiv(p.expert, chunks)}
              : ParamGroups{CeilDiv(p.dense * weight, stage_weight),
                            CeilDiv(p.expert * weight, stage_weight)};
      const int64_t buckets =
          zero == 3 ? std::max<int64_t>(1, layers[v])
                    : CeilDiv(chunk_params.dense + chunk_params.expert, BucketParams(dp_ranks));
      const ParamGroups bucket{CeilDiv(chunk_params.dense, buckets),
                               CeilDiv(chunk_params.expert, buckets)};
      config.buckets[v] = static_cast<int32_t>(buckets);
      config.bucket_time[v] = GroupCollective(comm, reduce, bucket, bytes.gradient, placements);
      payloads.bucket_bytes[v] = bucket.dense * bytes.gradient;
      payloads.expert_bucket_bytes[v] = bucket.expert * bytes.gradient;
    }
    // Megatron's optimizer passes over the parameters this rank updates (its ZeRO shard).
    const int64_t updated = zero >= 1 ? ShardParams(p, strategy) : p.Total();
    payloads.optimizer.push_back(OptimizerStepTraffic(updated, strategy.dtype, strategy.optimizer,
                                                      strategy.grad_reduce_in_bf16));
    config.optimizer_time.push_back(compute.MemoryBound(payloads.optimizer.back()));
    const ParamGroups stage_params{p.dense, p.expert};
    const bool gathers = zero == 1 || zero == 2;
    config.param_gather_time.push_back(gathers
                                           ? GroupCollective(comm, CollectiveKind::kAllGather,
                                                             stage_params, bytes.weight, placements)
                                           : SimTime());
    payloads.param_gather_bytes.push_back(gathers ? p.dense * bytes.weight : 0);
    payloads.expert_param_gather_bytes.push_back(gathers ? p.expert * bytes.weight : 0);
  }
  if (zero == 3) {
    // ZeRO-3 is refused with pp > 1, so the one stage's one chunk holds every layer.
    const RankParameters& p = states.per_stage[0].parameters;
    const int64_t layer_count = std::max<int64_t>(1, layers[0]);
    const ParamGroups layer{CeilDiv(p.dense, layer_count), CeilDiv(p.expert, layer_count)};
    config.layer_gathers = static_cast<int32_t>(layer_count);
    config.layer_gather_time =
        GroupCollective(comm, CollectiveKind::kAllGather, layer, bytes.weight, placements);
    config.layer_gather_bytes = (layer.dense + layer.expert) * bytes.weight;
  }
  return config;
}

// ZeRO-Offload's copies and CPU step per stage, and with parameter offload each layer's fetch.
// The GPU runs no optimizer step of its own then.
Status AddOffload(const ClusterSpec& cluster, const Strategy& strategy, const StageStates& states,
                  StepGraphConfig& config) {
  if (strategy.offload == Offload::kNone) return Status::Ok();
  for (size_t stage = 0; stage < states.per_stage.size(); ++stage) {
    Result<OffloadCost> cost = CostOptimizerOffload(
        cluster, strategy, ShardParams(states.per_stage[stage].parameters, strategy));
    if (!cost.ok()) return cost.status();
    config.grad_to_host.push_back(cost->grad_to_host);
    config.cpu_step.push_back(cost->cpu_step);
    config.params_to_gpu.push_back(cost->params_to_gpu);
    config.optimizer_time[stage] = SimTime();
  }
  if (strategy.offload == Offload::kOptimizerAndParams && config.layer_gathers > 0) {
    const int64_t layer_shard = CeilDiv(ShardParams(states.per_stage[0].parameters, strategy),
                                        int64_t{config.layer_gathers});
    Result<SimTime> fetch = CostParameterFetch(cluster, strategy, layer_shard);
    if (!fetch.ok()) return fetch.status();
    config.layer_fetch_time = *fetch;
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
  config.pp_fabric = strategy.pp > 1 ? fabric(placements.pp_across_nodes) : Fabric::kNone;
  config.dp_fabric = fabric(placements.dp.Nodes() > 1);
  // The tp task of a pass holds its tp, cp and ep collectives together: one that crosses nodes
  // dominates its time.
  config.tp_fabric =
      fabric(placements.tp.Nodes() > 1 || placements.cp.Nodes() > 1 || placements.ep.Nodes() > 1);
  if (config.cp_ring) config.cp_fabric = fabric(placements.cp.Nodes() > 1);
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

// The host thread of |framework|: its synchronisation points and each stage's optimizer lead: the
// fixed host time (gradient norm, found-inf, Python) before any optimizer kernel, then as much of
// the per-layer issue as the GPU's optimizer kernels do not cover.
void SetHost(const FrameworkProfile& framework, const ChunkLayers& layers,
             const PipelineSchedule& schedule, StepGraphConfig& config) {
  config.host = true;
  config.host_sync_after_p2p = framework.sync_after_p2p;
  config.host_sync_before_optimizer = framework.sync_before_optimizer;
  for (int32_t stage = 0; stage < schedule.stages; ++stage) {
    int64_t stage_layers = 0;
    for (int32_t chunk = 0; chunk < schedule.chunks; ++chunk)
      stage_layers += layers[schedule.VirtualStage(stage, chunk)];
    const SimTime issue = ScaledHostTime(
        framework, framework.optimizer_us_per_layer * static_cast<double>(stage_layers));
    const SimTime gpu = config.optimizer_time[stage];
    config.optimizer_host_lead.push_back(ScaledHostTime(framework, framework.optimizer_us_fixed) +
                                         std::max(SimTime(), issue - gpu));
  }
}

void Summarize(const ModelSpec& model, const ClusterSpec& cluster, const Strategy& strategy,
               const std::vector<ChunkCost>& costs, SimulationResult& r) {
  const StepGraph& step = r.step;
  r.step_time_s = r.timeline.makespan.ToSeconds();
  const StepUtilization u = MeasureUtilization(step, r.timeline);
  for (int32_t s = 0; s < step.stages; ++s) {
    StageResult stage{s, r.memory.ranks[s].peak_bytes, u.busy_s[s], u.bubble_s[s]};
    r.stages.push_back(stage);
    r.breakdown.compute_s += (u.busy_s[s] - u.tp_s[s]) / step.stages;
    r.breakdown.bubble_s += stage.bubble_s / step.stages;
    r.breakdown.optimizer_s += u.optimizer_s[s] / step.stages;
    r.breakdown.exposed_comm_s += (u.tp_s[s] + u.comm_wait_s[s] + r.step_time_s - u.span_s -
                                   u.optimizer_s[s] - u.host_wait_after_s[s]) /
                                  step.stages;
    r.breakdown.host_s += (u.host_wait_s[s] + u.host_wait_after_s[s]) / step.stages;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, r.memory.ranks[s].peak_bytes);
  }
  r.bubble_fraction = u.bubble_fraction;
  const double world = static_cast<double>(strategy.WorldSize());
  const double tokens = static_cast<double>(strategy.global_batch * strategy.seq_len);
  const double peak = cluster.gpu.PeakTflops(strategy.dtype).value_or(0) * 1e12;
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
  r.memory_limit_bytes = cluster.gpu.memory_bytes - kReservedBytesPerGpu;
  r.fits_in_memory = r.peak_memory_bytes <= r.memory_limit_bytes;
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
  Result<PipelineSchedule> schedule =
      BuildSchedule(strategy.schedule, static_cast<int32_t>(strategy.pp),
                    static_cast<int32_t>(strategy.NumMicroBatches()), chunks,
                    static_cast<int32_t>(strategy.microbatch_group));
  if (!schedule.ok()) return schedule.status();
  RooflineComputeModel compute(cluster.gpu);
  NcclCommModel comm(cluster);
  const Placements placements = PlaceStrategy(strategy, cluster);
  const std::optional<HostCosts> host =
      options.framework ? std::optional<HostCosts>(HostCostsOf(*options.framework)) : std::nullopt;
  Result<std::vector<ChunkCost>> costs = CostChunks(model, strategy, compute, comm, placements,
                                                    options.kernels, host ? &*host : nullptr);
  if (!costs.ok()) return costs.status();
  Result<StageStates> states = StatesPerStage(model, strategy);
  if (!states.ok()) return states.status();
  const ChunkLayers layers = LayersPerVirtualStage(strategy, model.num_layers);
  PreparedStep step;
  step.config = DataParallelConfig(strategy, *states, layers, *schedule, compute, comm, placements,
                                   step.payloads);
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
  step.payloads.p2p_bytes = P2pBytes(model, strategy);
  step.config.p2p_time = comm.PointToPoint(step.payloads.p2p_bytes, placements.pp_across_nodes);
  step.config.cp_ring = strategy.cp > 1 && strategy.cp_comm == CpComm::kP2p;
  LOOM_RETURN_IF_ERROR(AddOffload(cluster, strategy, *states, step.config));
  if (options.share_bandwidth) SetFabrics(strategy, placements, step.config);
  if (options.framework) SetHost(*options.framework, layers, *schedule, step.config);
  for (const RankModelStates& s : states->per_stage) step.model_states.push_back(s.gpu);
  step.strategy = strategy;
  step.schedule = std::move(schedule).value();
  step.costs = std::move(costs).value();
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
  Result<StepTimeline> timeline = Simulate(result.step.graph);
  if (!timeline.ok()) return timeline.status();
  result.timeline = std::move(timeline).value();
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
  Result<MemoryReport> memory = TrackMemory(result.step.graph, result.timeline, baselines);
  if (!memory.ok()) return memory.status();
  result.memory = std::move(memory).value();
  Summarize(model, cluster, step.strategy, step.costs, result);
  result.memory_by_stage =
      BreakDownMemory(result.step, result.timeline, result.memory, step.schedule);
  result.peak_stage = PeakStage(result.memory_by_stage);
  result.reserved_bytes = kReservedBytesPerGpu;
  result.critical_path = SummarizeCriticalPath(result.step, result.timeline);
  return result;
}

std::vector<BlockTimes> PredictOpTimes(const ClusterSpec& cluster, const Strategy& strategy,
                                       const ChunkBlocks& blocks) {
  RooflineComputeModel compute(cluster.gpu);
  NcclCommModel comm(cluster);
  const Placements placements = PlaceStrategy(strategy, cluster);
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
  Result<PreparedStep> step = PrepareTrainingStep(model, cluster, strategy, options);
  if (!step.ok()) return step.status();
  return SimulatePreparedStep(model, cluster, *step);
}

}  // namespace loom
