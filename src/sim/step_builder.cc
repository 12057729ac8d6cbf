#include "sim/step_builder.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "sim/step_builder_internal.h"

namespace loom {
namespace step_builder_internal {

StepGraph Builder::Build() {
  TaskGraph& g = step_.graph;
  step_.stages = schedule_.stages;
  step_.replicas = config_.replicas;
  g.AddPool(kWeightsPool);
  g.AddPool(kGradientsPool);
  g.AddPool(kOptimizerStatesPool);
  g.AddPool(kActivationsPool);
  g.AddPool(kLogitsPool);
  g.AddPool(kRecomputePool);
  if (config_.zero3.layer_gathers > 0) g.AddPool(kGatheredWeightsPool);
  NameStepParts(step_);
  ring_name_ = g.Intern("kv ring send");
  param_gather_name_ = g.Intern("param all-gather");
  fetch_name_ = g.Intern("weights to gpu");
  grads_to_host_name_ = g.Intern("grads to host");
  batch_name_ = g.Intern("micro-batch input");
  fetch_issue_name_ = g.Intern("zero-3 fetch issue");
  const int32_t v_count = schedule_.VirtualStages();
  for (Pass pass : {Pass::kF, Pass::kB, Pass::kW, Pass::kBW}) {
    for (int32_t v = 0; v < v_count; ++v) {
      pass_names_.push_back(
          g.Intern(std::string(kPassNames.Name(pass)) + " v" + std::to_string(v)));
    }
  }
  for (int32_t r = 0; r < config_.replicas * schedule_.stages; ++r) AddRank(r);
  for (int32_t r = 0; r < config_.replicas * schedule_.stages; ++r) AddPorts(r);
  bucket_segments_.assign(static_cast<size_t>(config_.replicas) * v_count, {});
  bucket_pass_end_.assign(static_cast<size_t>(config_.replicas) * v_count, {});
  std::vector<PassIds> ids;
  for (int32_t replica = 0; replica < config_.replicas; ++replica) {
    ids.emplace_back(v_count, schedule_.micro_batches);
    for (int32_t s = 0; s < schedule_.stages; ++s) AddPasses(replica, s, ids.back());
  }
  for (int32_t replica = 0; replica < config_.replicas; ++replica) Connect(replica, ids[replica]);
  AddGradientReduction();
  SetSmUse();
  return std::move(step_);
}

// Marks the tasks of the streams whose kernels hold SMs and HBM bandwidth, by the stage's SmHolds,
// and every task of the compute streams as yielding to them, with its memory-bound share. Markers
// of zero duration hold nothing. Not holding: pipeline and ring-attention sends (NCCL's p2p kernels
// hold their channels too, mostly while the compute that would share the GPU waits for them) and
// copy-engine transfers (none).
void Builder::SetSmUse() {
  if (config_.sm_holds.empty()) return;
  TaskGraph& g = step_.graph;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const Task& task = g.task(t);
    const int32_t rank = g.rank_of(t);
    if (task.stream == step_.compute_stream[rank]) {
      const float memory = static_cast<size_t>(t) < memory_share_.size() ? memory_share_[t] : 0.0f;
      g.SetSmUse(t, {.memory = memory, .yields = true});
      continue;
    }
    if (task.duration == SimTime()) continue;
    const SmHolds& holds = config_.sm_holds[rank % schedule_.stages];
    double share = 0, hbm = 0;
    if (task.stream == dp_stream_[rank] || task.stream == gather_stream_[rank]) {
      share = holds.nccl;
      hbm = holds.nccl_hbm;
    } else if (task.stream == tp_stream_[rank] && task.category == step_.tp_hidden_category) {
      share = holds.tp_hidden;
      hbm = holds.tp_hidden_hbm;
    }
    if (share > 0 || hbm > 0) {
      g.SetSmUse(t, {.holds = static_cast<float>(share), .hbm = static_cast<float>(hbm)});
    }
  }
}

void Builder::AddRank(int32_t rank) {
  TaskGraph& g = step_.graph;
  step_.compute_stream.push_back(g.AddStream(rank, "compute"));
  tp_stream_.push_back(g.AddStream(rank, "tp"));
  pending_tp_.push_back(kNone);
  latest_pass_.push_back(kNone);
  pp_stream_.push_back(g.AddStream(rank, "pp"));
  dp_stream_.push_back(g.AddStream(rank, "dp"));
  cp_stream_.push_back(config_.cp_ring ? g.AddStream(rank, "cp") : StreamId{-1});
  gather_stream_.push_back(config_.zero3.layer_gathers > 0 ? g.AddStream(rank, "param gather")
                                                           : StreamId{-1});
  const bool offload =
      !config_.offload.grad_to_host.empty() || config_.zero3.layer_fetch_time > SimTime();
  pcie_stream_.push_back(offload ? g.AddStream(rank, "pcie") : StreamId{-1});
  cpu_stream_.push_back(offload ? g.AddStream(rank, "cpu") : StreamId{-1});
  if (config_.host.enabled) step_.host_stream.push_back(g.AddStream(rank, "host"));
  gather_users_.emplace_back();
  last_issue_.push_back(kNone);
}

// Adds the channels of the rank's ports on the fabrics the config uses, and the routes of its
// collectives.
void Builder::AddPorts(int32_t rank) {
  TaskGraph& g = step_.graph;
  const std::string prefix = "rank " + std::to_string(rank) + " ";
  const auto add_port = [&](Fabric fabric, const char* name, std::vector<Port>& ports) {
    const std::array<Fabric, 4> used = {config_.fabrics.pp, config_.fabrics.dp, config_.fabrics.tp,
                                        config_.fabrics.cp};
    if (std::find(used.begin(), used.end(), fabric) == used.end()) return;
    Port port{g.AddChannel(prefix + name + " tx"), g.AddChannel(prefix + name + " rx")};
    ports.push_back(port);
    const std::array<ChannelId, 2> both = {port.tx, port.rx};
    duplex_routes_[rank][static_cast<size_t>(fabric)] = g.AddRoute(both);
  };
  duplex_routes_.push_back({kNoRoute, kNoRoute, kNoRoute});
  add_port(Fabric::kIntraNode, "intra-node", step_.intra_node_port);
  add_port(Fabric::kInterNode, "nic", step_.inter_node_port);
}

TaskId Builder::Add(const Task& task, TaskWork work) {
  step_.work.push_back(work);
  step_.micro_batch.push_back(micro_batch_);
  return step_.graph.AddTask(task);
}

// Megatron-LM's tensor-parallel collectives block the next kernel, so a pass runs its kernels and
// then its collectives (their total time; the op order inside a pass changes no end time), and the
// next pass on the rank starts after both. The part hidden (PassCost::tp_hidden: by
// --tp-comm-overlap, or by the framework's asynchronous backward collectives) runs on the tp
// stream beside the kernels instead, from a zero-length marker that starts the pass.
// |alloc| and |free| are activation bytes kept across passes; |recompute_bytes| is a buffer that
// lives for this pass only.
PassTasks Builder::AddPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                           KeptBytes alloc, KeptBytes free, int64_t recompute_bytes) {
  const SimTime exposed_tp = cost.tp_comm - cost.tp_hidden;
  const bool has_tp = exposed_tp > SimTime();
  TaskGraph& g = step_.graph;
  PassTasks pass;
  if (cost.tp_hidden > SimTime()) {
    pass.first = Add(
        {.stream = step_.compute_stream[rank], .name = name, .category = step_.compute_category},
        {});
    Task hidden{.stream = tp_stream_[rank],
                .duration = cost.tp_hidden,
                .name = name,
                .category = step_.tp_hidden_category,
                .route = DuplexRoute(rank, config_.fabrics.tp)};
    g.AddDependency(pass.first,
                    Add(hidden, {WorkKind::kTpComm, work.pass, work.index, work.part, work.parts}));
  }
  const PassTasks kernels = AddKernels(rank, name, work, cost, has_tp ? KeptBytes{} : free);
  if (pass.first == kNone) {
    pass.first = kernels.first;
  } else {
    g.AddDependency(pass.first, kernels.first);
  }
  // The previous pass's collectives end before this pass starts.
  if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], pass.first);
  pending_tp_[rank] = kNone;
  pass.last = kernels.last;
  if (has_tp) {
    Task tp{.stream = tp_stream_[rank],
            .duration = exposed_tp,
            .name = name,
            .category = step_.tp_category,
            .free_at_end_bytes = free.activations,
            .pool = step_.activations,
            .route = DuplexRoute(rank, config_.fabrics.tp)};
    pass.last = Add(tp, {WorkKind::kTpComm, work.pass, work.index, work.part, work.parts});
    FreeKept(pass.last, {0, free.logits});
    g.AddDependency(kernels.last, pass.last);
    pending_tp_[rank] = pass.last;
  }
  if (alloc.activations > 0)
    g.AddMemoryEvent(pass.first, MemoryPhase::kAtStart, step_.activations, alloc.activations);
  if (alloc.logits > 0)
    g.AddMemoryEvent(pass.first, MemoryPhase::kAtStart, step_.logits, alloc.logits);
  if (recompute_bytes > 0) {
    g.AddMemoryEvent(pass.first, MemoryPhase::kAtStart, step_.recompute, recompute_bytes);
    g.AddMemoryEvent(pass.last, MemoryPhase::kAtEnd, step_.recompute, -recompute_bytes);
  }
  if (latest_pass_[rank] != kNone) next_pass_[latest_pass_[rank]] = pass.first;
  latest_pass_[rank] = pass.last;
  if (config_.host.enabled) AddHostIssue(rank, name, work, cost, pass.first);
  return pass;
}

// The host issues the pass: its lead, which the pass's first GPU task waits for, then the rest of
// its host time, which the next pass's issue follows on the host stream.
void Builder::AddHostIssue(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                           TaskId gpu_first) {
  TaskGraph& g = step_.graph;
  const TaskWork issue{WorkKind::kHost, work.pass, work.index, work.part, work.parts};
  const TaskId lead = Add({.stream = step_.host_stream[rank],
                           .duration = cost.host_lead,
                           .name = name,
                           .category = step_.host_category},
                          issue);
  g.AddDependency(lead, gpu_first);
  host_lead_of_[gpu_first] = lead;
  const SimTime rest = cost.host - cost.host_lead;
  if (rest > SimTime()) {
    Add({.stream = step_.host_stream[rank],
         .duration = rest,
         .name = name,
         .category = step_.host_category},
        issue);
  }
}

// The host waits for |gpu_task| to end before it issues the pass that starts with |pass_first|.
void Builder::HostWaitsFor(TaskId gpu_task, TaskId pass_first) {
  if (auto lead = host_lead_of_.find(pass_first); lead != host_lead_of_.end()) {
    step_.graph.AddDependency(gpu_task, lead->second);
  }
}

// The kernels of a pass on the compute stream: one task, or with ring attention the kernels
// before the attention and then its blocks, each ring transfer on the cp stream beside the block
// before it (Liu et al. 2023, "Ring Attention", Section 3: the send of the next K/V block
// overlaps the attention of the current one; Megatron-core's AttnFuncWithCPAndKVP2P). A block
// starts once its K/V have arrived.
PassTasks Builder::AddKernels(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                              KeptBytes free) {
  TaskGraph& g = step_.graph;
  const SimTime kernels = cost.time - cost.tp_comm;
  // The memory-bound kernels are outside ring attention's blocks.
  const SimTime outside_blocks = cost.ring_steps == 0 ? kernels : kernels - cost.attention;
  const float memory =
      outside_blocks > SimTime()
          ? static_cast<float>(std::min(1.0, cost.memory.ToSeconds() / outside_blocks.ToSeconds()))
          : 0.0f;
  const auto compute = [&](SimTime duration, float memory_share) {
    const TaskId id = Add({.stream = step_.compute_stream[rank],
                           .duration = duration,
                           .name = name,
                           .category = step_.compute_category},
                          work);
    if (memory_share > 0) {
      if (memory_share_.size() <= static_cast<size_t>(id)) memory_share_.resize(id + 1, 0.0f);
      memory_share_[id] = memory_share;
    }
    return id;
  };
  PassTasks out;
  if (cost.ring_steps == 0) {
    out.first = out.last = compute(kernels, memory);
  } else {
    const int32_t blocks = cost.ring_steps + 1;
    const SimTime block = SimTime::FromNanos(cost.attention.nanos() / blocks);
    out.first = out.last = compute(kernels - SimTime::FromNanos(block.nanos() * blocks), memory);
    TaskId arrived = kNone;  // the transfer the next block waits for
    for (int32_t i = 0; i < blocks; ++i) {
      TaskId send = kNone;
      if (i + 1 < blocks) {
        Task transfer{.stream = cp_stream_[rank],
                      .duration = cost.ring_step,
                      .name = ring_name_,
                      .category = step_.cp_category,
                      .route = DuplexRoute(rank, config_.fabrics.cp)};
        send = Add(transfer, {WorkKind::kRingSend, work.pass, work.index, work.part, work.parts});
        g.AddDependency(out.last, send);
      }
      const TaskId attention = compute(block, 0.0f);
      if (arrived != kNone) {
        g.AddDependency(arrived, attention);
        step_.ring_transfers.push_back({arrived, out.last});
      }
      out.last = attention;
      arrived = send;
    }
  }
  FreeKept(out.last, free);
  return out;
}

// |task| frees what a forward kept when it ends.
void Builder::FreeKept(TaskId task, KeptBytes free) {
  TaskGraph& g = step_.graph;
  if (free.activations > 0)
    g.AddMemoryEvent(task, MemoryPhase::kAtEnd, step_.activations, -free.activations);
  if (free.logits > 0) g.AddMemoryEvent(task, MemoryPhase::kAtEnd, step_.logits, -free.logits);
}

// |cost| as |segments| equal passes in a row (one when 1); with ZeRO-3 layer gathers and
// |reads_weights|, each waits for its layer's gather, and segment i for (*waits)[i] if given.
// |alloc| is taken at the first segment's start, |free| and the recompute buffer at the last one's
// end (an approximation: the buffer is per layer). Appends the last task of each segment to
// |segment_ends| when given.
PassTasks Builder::AddSegmentedPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                                    int32_t segments, bool reads_weights, KeptBytes alloc,
                                    KeptBytes free, int64_t recompute_bytes,
                                    std::vector<TaskId>* segment_ends,
                                    const std::vector<TaskId>* waits) {
  PassTasks whole;
  for (int32_t seg = 0; seg < segments; ++seg) {
    const bool is_last = seg + 1 == segments;
    TaskId gather = kNone;
    if (config_.zero3.layer_gathers > 0 && reads_weights) {
      gather = config_.zero3.synchronous_fetch && config_.host.enabled
                   ? AddSynchronousFetch(rank, work.pass)
                   : AddLayerGather(rank, work.pass);
    }
    work.part = seg;
    work.parts = segments;
    const PassTasks part =
        AddPass(rank, name, work, segments == 1 ? cost : SlicePass(cost, segments, seg),
                seg == 0 ? alloc : KeptBytes{}, is_last ? free : KeptBytes{},
                seg == 0 ? recompute_bytes : 0);
    if (waits != nullptr && static_cast<size_t>(seg) < waits->size()) {
      step_.graph.AddDependency((*waits)[seg], part.first);
    }
    if (gather != kNone) {
      step_.graph.AddDependency(gather, part.first);
      step_.graph.AddMemoryEvent(part.last, MemoryPhase::kAtEnd, step_.gathered_weights,
                                 -config_.zero3.layer_gather_bytes);
      gather_users_[rank].push_back(part.last);
    }
    if (whole.first == kNone) whole.first = part.first;
    whole.last = part.last;
    if (segment_ends != nullptr) segment_ends->push_back(part.last);
  }
  return whole;
}

}  // namespace step_builder_internal

StepGraph BuildStepGraph(const PipelineSchedule& schedule,
                         const std::vector<ChunkCost>& chunk_costs, const StepGraphConfig& config) {
  return step_builder_internal::Builder(schedule, chunk_costs, config).Build();
}

}  // namespace loom
