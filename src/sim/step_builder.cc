#include "sim/step_builder.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace loom {
namespace {

constexpr TaskId kNone = -1;

// Bytes a forward keeps for its backward, by pool.
struct KeptBytes {
  int64_t activations = 0;
  int64_t logits = 0;
};

KeptBytes KeptBy(const ChunkCost& cost) {
  return {cost.kept_activation_bytes - cost.logits_bytes, cost.logits_bytes};
}

// The tasks of one pass: its compute and, when it has tensor-parallel collectives, the task on the
// tp stream that ends it. Incoming dependencies go to |first|, outgoing ones leave from |last|.
struct PassTasks {
  TaskId first = kNone;
  TaskId last = kNone;
};

// Task ids of one replica's passes, by (virtual stage, micro-batch).
struct PassIds {
  explicit PassIds(int32_t virtual_stages, int32_t micro_batches)
      : micro_batches_(micro_batches),
        f_(Size(virtual_stages, micro_batches)),
        b_(Size(virtual_stages, micro_batches)) {}

  static size_t Size(int32_t v, int32_t m) {
    return static_cast<size_t>(v) * static_cast<size_t>(m);
  }
  size_t At(int32_t v, int32_t mb) const { return static_cast<size_t>(v) * micro_batches_ + mb; }

  PassTasks& f(int32_t v, int32_t mb) { return f_[At(v, mb)]; }
  // The input-gradient pass: B, or BW when the schedule does not split W.
  PassTasks& b(int32_t v, int32_t mb) { return b_[At(v, mb)]; }

 private:
  size_t micro_batches_;
  std::vector<PassTasks> f_, b_;
};

class Builder {
 public:
  Builder(const PipelineSchedule& schedule, const std::vector<ChunkCost>& costs,
          const StepGraphConfig& config)
      : schedule_(schedule), costs_(costs), config_(config) {}

  StepGraph Build();

 private:
  void AddRank(int32_t rank);
  void AddPorts(int32_t rank);
  RouteId SendRoute(int32_t from_rank, int32_t to_rank);
  RouteId DuplexRoute(int32_t rank, Fabric fabric) const {
    return duplex_routes_[rank][static_cast<size_t>(fabric)];
  }
  void AddPasses(int32_t replica, int32_t stage, PassIds& ids);
  // Adds |task| and records what it runs.
  TaskId Add(const Task& task, TaskWork work);
  PassTasks AddPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost, KeptBytes alloc,
                    KeptBytes free, int64_t recompute_bytes = 0);
  PassTasks AddKernels(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                       KeptBytes free);
  void FreeKept(TaskId task, KeptBytes free);
  void AddBackward(int32_t replica, int32_t stage, const PipelineItem& item, bool last_of_chunk,
                   PassIds& ids);
  PassTasks AddSegmentedPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                             int32_t segments, bool reads_weights, KeptBytes alloc, KeptBytes free,
                             int64_t recompute_bytes, std::vector<TaskId>* segment_ends,
                             const std::vector<TaskId>* waits = nullptr);
  TaskId AddLayerGather(int32_t rank);
  void AddParamGathersAtStart(int32_t rank, int32_t stage);
  void Connect(int32_t replica, PassIds& ids);
  TaskId Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before,
                  TaskId after);
  void AddGradientReduction();
  void AddOptimizer(int32_t stage, NameId name, const std::vector<std::vector<TaskId>>& reductions);
  TaskId OffloadBucket(int32_t rank, SimTime slice, TaskId reduction);
  TaskId AddCpuStep(int32_t stage, int32_t rank, TaskId after);
  int32_t Rank(int32_t replica, int32_t stage) const { return replica * schedule_.stages + stage; }
  // The micro-batch of the pass being added (-1 between passes), which Add() records per task.
  int32_t micro_batch_ = -1;

  const PipelineSchedule& schedule_;
  const std::vector<ChunkCost>& costs_;
  const StepGraphConfig& config_;
  StepGraph step_;
  std::vector<StreamId> tp_stream_, pp_stream_, dp_stream_, cp_stream_, gather_stream_,
      pcie_stream_, cpu_stream_;
  // The host thread (config_.host): per pass's first task, the host task its GPU work waits for.
  std::unordered_map<TaskId, TaskId> host_lead_of_;
  void AddHostIssue(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                    TaskId gpu_first);
  void HostWaitsFor(TaskId gpu_task, TaskId pass_first);
  // Per rank: the segments that used each gathered layer so far (ZeRO-3), and the all-gather of
  // each chunk's weights at the start of the step (--overlap-param-gather).
  std::vector<std::vector<TaskId>> gather_users_;
  std::vector<std::vector<std::vector<TaskId>>> start_gathers_;  // per rank, chunk, bucket
  NameId ring_name_ = kEmptyName, param_gather_name_ = kEmptyName, fetch_name_ = kEmptyName,
         grads_to_host_name_ = kEmptyName;
  // Per rank: the tp task that ended the previous pass, which the next compute task waits for.
  std::vector<TaskId> pending_tp_;
  // Per rank: the last task of its latest pass; and per pass's last task, the first task of the
  // pass after it on the same rank (what a blocking send holds back).
  std::vector<TaskId> latest_pass_;
  std::unordered_map<TaskId, TaskId> next_pass_;
  // Per (sender, receiver) rank: the channels of a send, made on first use.
  std::map<std::pair<int32_t, int32_t>, RouteId> send_routes_;
  // Per rank and Fabric: both channels of the rank's port, for a collective (kNoRoute: kNone).
  std::vector<std::array<RouteId, 3>> duplex_routes_;
  std::vector<NameId> pass_names_;  // per (pass kind, virtual stage)
  // Per replica and virtual stage: the bucket segments of the chunk's last backward.
  std::vector<std::vector<TaskId>> bucket_segments_;
  // Parallel to |bucket_segments_|: the end of the pass each segment belongs to.
  std::vector<std::vector<TaskId>> bucket_pass_end_;
};

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
  if (config_.layer_gathers > 0) g.AddPool(kGatheredWeightsPool);
  NameStepParts(step_);
  ring_name_ = g.Intern("kv ring send");
  param_gather_name_ = g.Intern("param all-gather");
  fetch_name_ = g.Intern("weights to gpu");
  grads_to_host_name_ = g.Intern("grads to host");
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
  return std::move(step_);
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
  gather_stream_.push_back(config_.layer_gathers > 0 ? g.AddStream(rank, "param gather")
                                                     : StreamId{-1});
  const bool offload = !config_.grad_to_host.empty() || config_.layer_fetch_time > SimTime();
  pcie_stream_.push_back(offload ? g.AddStream(rank, "pcie") : StreamId{-1});
  cpu_stream_.push_back(offload ? g.AddStream(rank, "cpu") : StreamId{-1});
  if (config_.host) step_.host_stream.push_back(g.AddStream(rank, "host"));
  gather_users_.emplace_back();
}

// Adds the channels of the rank's ports on the fabrics the config uses, and the routes of its
// collectives.
void Builder::AddPorts(int32_t rank) {
  TaskGraph& g = step_.graph;
  const std::string prefix = "rank " + std::to_string(rank) + " ";
  const auto add_port = [&](Fabric fabric, const char* name, std::vector<Port>& ports) {
    const std::array<Fabric, 4> used = {config_.pp_fabric, config_.dp_fabric, config_.tp_fabric,
                                        config_.cp_fabric};
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

RouteId Builder::SendRoute(int32_t from_rank, int32_t to_rank) {
  if (config_.pp_fabric == Fabric::kNone) return kNoRoute;
  const auto [it, added] = send_routes_.try_emplace({from_rank, to_rank}, kNoRoute);
  if (added) {
    const std::vector<Port>& ports =
        config_.pp_fabric == Fabric::kIntraNode ? step_.intra_node_port : step_.inter_node_port;
    const std::array<ChannelId, 2> channels = {ports[from_rank].tx, ports[to_rank].rx};
    it->second = step_.graph.AddRoute(channels);
  }
  return it->second;
}

// Megatron-LM's tensor-parallel collectives block the next kernel, so a pass runs its kernels and
// then its collectives (their total time; the op order inside a pass changes no end time), and the
// next pass on the rank starts after both. The part hidden by --tp-comm-overlap runs on the tp
// stream beside the kernels instead, from a zero-length marker that starts the pass.
// |alloc| and |free| are activation bytes kept across passes; |recompute_bytes| is a buffer that
// lives for this pass only.
TaskId Builder::Add(const Task& task, TaskWork work) {
  step_.work.push_back(work);
  step_.micro_batch.push_back(micro_batch_);
  return step_.graph.AddTask(task);
}

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
                .route = DuplexRoute(rank, config_.tp_fabric)};
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
            .route = DuplexRoute(rank, config_.tp_fabric)};
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
  if (config_.host) AddHostIssue(rank, name, work, cost, pass.first);
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
  const auto compute = [&](SimTime duration) {
    return Add({.stream = step_.compute_stream[rank],
                .duration = duration,
                .name = name,
                .category = step_.compute_category},
               work);
  };
  const SimTime kernels = cost.time - cost.tp_comm;
  PassTasks out;
  if (cost.ring_steps == 0) {
    out.first = out.last = compute(kernels);
  } else {
    const int32_t blocks = cost.ring_steps + 1;
    const SimTime block = SimTime::FromNanos(cost.attention.nanos() / blocks);
    out.first = out.last = compute(kernels - SimTime::FromNanos(block.nanos() * blocks));
    TaskId arrived = kNone;  // the transfer the next block waits for
    for (int32_t i = 0; i < blocks; ++i) {
      TaskId send = kNone;
      if (i + 1 < blocks) {
        Task transfer{.stream = cp_stream_[rank],
                      .duration = cost.ring_step,
                      .name = ring_name_,
                      .category = step_.cp_category,
                      .route = DuplexRoute(rank, config_.cp_fabric)};
        send = Add(transfer, {WorkKind::kRingSend, work.pass, work.index, work.part, work.parts});
        g.AddDependency(out.last, send);
      }
      const TaskId attention = compute(block);
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

// --overlap-param-gather: the all-gathers of the stage's chunks, bucket by bucket, first on its dp
// stream (Megatron-LM dispatches them all at once and each module's forward pre-hook waits for its
// bucket: megatron/core/distributed/param_and_grad_buffer.py).
void Builder::AddParamGathersAtStart(int32_t rank, int32_t stage) {
  start_gathers_.emplace_back(static_cast<size_t>(schedule_.chunks));
  if (!config_.overlap_param_gather || config_.param_gather_time[stage] <= SimTime()) return;
  const int64_t per_chunk = config_.param_gather_time[stage].nanos() / schedule_.chunks;
  int32_t parts = 0;
  for (int32_t chunk = 0; chunk < schedule_.chunks; ++chunk) {
    parts += config_.buckets.empty()
                 ? 1
                 : std::max(1, config_.buckets[schedule_.VirtualStage(stage, chunk)]);
  }
  int32_t part = 0;
  for (int32_t chunk = 0; chunk < schedule_.chunks; ++chunk) {
    const int32_t v = schedule_.VirtualStage(stage, chunk);
    const int32_t buckets = config_.buckets.empty() ? 1 : std::max(1, config_.buckets[v]);
    for (int32_t bucket = 0; bucket < buckets; ++bucket) {
      Task gather{.stream = dp_stream_[rank],
                  .duration = SimTime::FromNanos(per_chunk / buckets),
                  .name = param_gather_name_,
                  .category = step_.dp_category,
                  .route = DuplexRoute(rank, config_.dp_fabric)};
      start_gathers_.back()[chunk].push_back(
          Add(gather, {WorkKind::kParamGather, Pass::kF, stage, part++, parts}));
    }
  }
}

void Builder::AddPasses(int32_t replica, int32_t stage, PassIds& ids) {
  const int32_t rank = Rank(replica, stage);
  AddParamGathersAtStart(rank, stage);
  // The last backward item of each chunk on this stage carries the gradient buckets.
  std::vector<size_t> last_backward(static_cast<size_t>(schedule_.chunks), 0);
  std::vector<bool> forwarded(static_cast<size_t>(schedule_.chunks), false);
  const std::vector<PipelineItem>& order = schedule_.order[stage];
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i].pass == Pass::kW || order[i].pass == Pass::kBW) last_backward[order[i].chunk] = i;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const PipelineItem& item = order[i];
    const int32_t v = schedule_.VirtualStage(stage, item.chunk);
    const ChunkCost& cost = costs_[v];
    micro_batch_ = item.micro_batch;
    if (item.pass == Pass::kF) {
      // The chunk's first forward runs bucket by bucket behind its weights' all-gathers.
      const std::vector<TaskId>* waits =
          forwarded[item.chunk] ? nullptr : &start_gathers_[rank][item.chunk];
      const int32_t segments =
          std::max({1, config_.layer_gathers, waits ? static_cast<int32_t>(waits->size()) : 1});
      ids.f(v, item.micro_batch) =
          AddSegmentedPass(rank, pass_names_[v], {WorkKind::kPass, Pass::kF, v}, cost.forward,
                           segments, true, KeptBy(cost), {}, 0, nullptr, waits);
      forwarded[item.chunk] = true;
    } else {
      AddBackward(replica, stage, item, last_backward[item.chunk] == i, ids);
    }
    micro_batch_ = -1;
  }
}

// A ZeRO-3 layer gather on the rank's gather stream; it holds the layer's weights from its start
// until the segment that uses it ends.
TaskId Builder::AddLayerGather(int32_t rank) {
  Task gather{.stream = gather_stream_[rank],
              .duration = config_.layer_gather_time,
              .name = param_gather_name_,
              .category = step_.dp_category,
              .alloc_at_start_bytes = config_.layer_gather_bytes,
              .pool = step_.gathered_weights,
              .route = DuplexRoute(rank, config_.dp_fabric)};
  const TaskId id = Add(gather, {WorkKind::kLayerGather});
  const std::vector<TaskId>& users = gather_users_[rank];
  if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], id);
  if (config_.layer_fetch_time > SimTime()) {
    Task fetch{.stream = pcie_stream_[rank],
               .duration = config_.layer_fetch_time,
               .name = fetch_name_,
               .category = step_.offload_category};
    const TaskId fetched = Add(fetch, {WorkKind::kOffload});
    if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], fetched);
    step_.graph.AddDependency(fetched, id);
  }
  return id;
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
    const TaskId gather = config_.layer_gathers > 0 && reads_weights ? AddLayerGather(rank) : kNone;
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
                                 -config_.layer_gather_bytes);
      gather_users_[rank].push_back(part.last);
    }
    if (whole.first == kNone) whole.first = part.first;
    whole.last = part.last;
    if (segment_ends != nullptr) segment_ends->push_back(part.last);
  }
  return whole;
}

// B, W or BW of one micro-batch. The chunk's final W or BW (with reduce_every_micro_batch, every
// one) is cut into one segment per gradient bucket, each a slice of the pass's time; with ZeRO-3
// the B and BW passes are cut into layers, each waiting for its gather.
void Builder::AddBackward(int32_t replica, int32_t stage, const PipelineItem& item,
                          bool last_of_chunk, PassIds& ids) {
  const int32_t rank = Rank(replica, stage);
  const int32_t v = schedule_.VirtualStage(stage, item.chunk);
  const int32_t v_count = schedule_.VirtualStages();
  const ChunkCost& cost = costs_[v];
  const int32_t mb = item.micro_batch;
  const int32_t layer_segments = std::max(1, config_.layer_gathers);
  if (item.pass == Pass::kB) {
    ids.b(v, mb) = AddSegmentedPass(rank, pass_names_[v_count + v], {WorkKind::kPass, Pass::kB, v},
                                    cost.backward_input, layer_segments, true, {}, {},
                                    cost.recompute_activation_bytes, nullptr);
    return;
  }
  PassCost pass = cost.backward_weight;
  if (item.pass == Pass::kBW) pass = CombinePasses(cost.backward_input, cost.backward_weight);
  const NameId name = pass_names_[(item.pass == Pass::kW ? 2 : 3) * v_count + v];
  const int64_t recompute = item.pass == Pass::kBW ? cost.recompute_activation_bytes : 0;
  const bool reduces =
      !config_.buckets.empty() && (last_of_chunk || config_.reduce_every_micro_batch);
  int32_t segments = reduces ? std::max(1, config_.buckets[v]) : 1;
  if (item.pass == Pass::kBW) segments = std::max(segments, layer_segments);
  std::vector<TaskId>* bucket_tasks =
      reduces ? &bucket_segments_[static_cast<size_t>(replica) * v_count + v] : nullptr;
  // A W pass reads no weights, so it gathers none.
  const PassTasks whole =
      AddSegmentedPass(rank, name, {WorkKind::kPass, item.pass, v}, pass, segments,
                       item.pass == Pass::kBW, {}, KeptBy(cost), recompute, bucket_tasks);
  if (reduces) {
    std::vector<TaskId>& ends = bucket_pass_end_[static_cast<size_t>(replica) * v_count + v];
    ends.resize(bucket_tasks->size(), whole.last);
  }
  if (item.pass == Pass::kBW) ids.b(v, mb) = whole;
  if (item.pass == Pass::kW) step_.graph.AddDependency(ids.b(v, mb).last, whole.first);
}

TaskId Builder::Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before,
                         TaskId after) {
  Task task;
  task.stream = pp_stream_[Rank(replica, from_stage)];
  // No link orders the sends: the sender's pp stream sends one at a time already.
  task.route = SendRoute(Rank(replica, from_stage), Rank(replica, to_stage));
  task.duration = config_.p2p_time;
  task.name = step_.pp_category;
  task.category = step_.pp_category;
  // What is sent is what |before|'s pass produced: activations after F, input gradients after B.
  const TaskWork sent = step_.work[before];
  micro_batch_ = step_.micro_batch[before];
  TaskId id = Add(task, {WorkKind::kTransfer, sent.pass, sent.index});
  micro_batch_ = -1;
  step_.graph.AddDependency(before, id);
  step_.graph.AddDependency(id, after);
  // The send only waits for |before|, never for the receiver, so holding back the sender's next
  // pass adds no wait cycle.
  if (auto next = next_pass_.find(before); config_.blocking_sends && next != next_pass_.end()) {
    step_.graph.AddDependency(id, next->second);
    // The host synchronises after the send before it issues the sender's next pass.
    if (config_.host_sync_after_p2p) HostWaitsFor(id, next->second);
  }
  // And after the receive before it issues the pass that reads it.
  if (config_.host_sync_after_p2p && config_.blocking_sends) HostWaitsFor(id, after);
  return id;
}

// The true dependencies of schedule.h, through a transfer where two virtual stages sit on
// different stages. Transfers are issued on the sender's pp stream in the order its compute stream
// produces them (compute task ids grow with a stage's order), as a real sender would.
void Builder::Connect(int32_t replica, PassIds& ids) {
  struct PendingTransfer {
    TaskId before, after;
    int32_t from, to;
  };
  std::vector<PendingTransfer> transfers;
  const auto link = [&](TaskId before, TaskId after, int32_t from, int32_t to) {
    if (from == to) {
      step_.graph.AddDependency(before, after);
    } else {
      transfers.push_back({before, after, from, to});
    }
  };
  const int32_t v_count = schedule_.VirtualStages();
  for (int32_t v = 0; v < v_count; ++v) {
    const int32_t stage = schedule_.Place(v).stage;
    for (int32_t mb = 0; mb < schedule_.micro_batches; ++mb) {
      if (v > 0)
        link(ids.f(v - 1, mb).last, ids.f(v, mb).first, schedule_.Place(v - 1).stage, stage);
      step_.graph.AddDependency(ids.f(v, mb).last, ids.b(v, mb).first);
      if (v + 1 < v_count)
        link(ids.b(v + 1, mb).last, ids.b(v, mb).first, schedule_.Place(v + 1).stage, stage);
    }
  }
  std::sort(transfers.begin(), transfers.end(),
            [](const PendingTransfer& a, const PendingTransfer& b) { return a.before < b.before; });
  for (const PendingTransfer& t : transfers) Transfer(replica, t.from, t.to, t.before, t.after);
}

void Builder::AddGradientReduction() {
  TaskGraph& g = step_.graph;
  const int32_t v_count = schedule_.VirtualStages();
  const NameId reduce = g.Intern("grad reduce"), optimizer = g.Intern("optimizer");
  for (int32_t stage = 0; stage < schedule_.stages; ++stage) {
    std::vector<std::vector<TaskId>> per_replica(static_cast<size_t>(config_.replicas));
    // With offload, each bucket sends its share of the stage's gradient shard to the host.
    int64_t stage_buckets = 0;
    for (int32_t chunk = 0; chunk < schedule_.chunks; ++chunk) {
      stage_buckets +=
          static_cast<int64_t>(bucket_segments_[schedule_.VirtualStage(stage, chunk)].size());
    }
    const SimTime to_host_slice = config_.grad_to_host.empty()
                                      ? SimTime()
                                      : SimTime::FromNanos(config_.grad_to_host[stage].nanos() /
                                                           std::max<int64_t>(1, stage_buckets));
    for (int32_t chunk = 0; chunk < schedule_.chunks && !config_.buckets.empty(); ++chunk) {
      const int32_t v = schedule_.VirtualStage(stage, chunk);
      // Every replica cut the same passes into the same segments: segment i of each is one bucket.
      const size_t buckets = bucket_segments_[v].size();
      for (size_t bucket = 0; bucket < buckets; ++bucket) {
        std::vector<TaskId> members;
        for (int32_t replica = 0; replica < config_.replicas; ++replica) {
          const int32_t rank = Rank(replica, stage);
          Task task{.stream = dp_stream_[rank],
                    .duration = config_.bucket_time[v],
                    .name = reduce,
                    .category = step_.dp_category,
                    .route = DuplexRoute(rank, config_.dp_fabric)};
          TaskId id = Add(task, {WorkKind::kGradReduce, Pass::kW, v, static_cast<int32_t>(bucket),
                                 static_cast<int32_t>(buckets)});
          const size_t at = static_cast<size_t>(replica) * v_count + v;
          g.AddDependency(bucket_segments_[at][bucket], id);
          // Without overlap, a step's one reduction waits for the stage's last backward
          // (finalize_model_grads); a per-micro-batch one for the end of its own pass.
          if (!config_.overlap_grad_reduce) {
            g.AddDependency(config_.reduce_every_micro_batch ? bucket_pass_end_[at][bucket]
                                                             : latest_pass_[rank],
                            id);
          }
          members.push_back(id);
          per_replica[replica].push_back(OffloadBucket(rank, to_host_slice, id));
        }
        if (config_.replicas > 1) g.AddCollective(members);
      }
    }
    AddOptimizer(stage, optimizer, per_replica);
  }
}

// With optimizer offload, the copy of |reduction|'s gradient |slice| to the host, on the rank's
// PCIe stream (what the optimizer then waits for); otherwise |reduction| itself.
TaskId Builder::OffloadBucket(int32_t rank, SimTime slice, TaskId reduction) {
  if (config_.grad_to_host.empty()) return reduction;
  Task copy{.stream = pcie_stream_[rank],
            .duration = slice,
            .name = grads_to_host_name_,
            .category = step_.offload_category};
  const TaskId id = Add(copy, {WorkKind::kOffload});
  step_.graph.AddDependency(reduction, id);
  return id;
}

// ZeRO-Offload's step after |after|: the CPU optimizer, then the updated weights to the GPU.
// Returns the copy, which the all-gather of the weights waits for.
TaskId Builder::AddCpuStep(int32_t stage, int32_t rank, TaskId after) {
  TaskGraph& g = step_.graph;
  Task cpu{.stream = cpu_stream_[rank],
           .duration = config_.cpu_step[stage],
           .name = g.Intern("cpu optimizer"),
           .category = step_.optimizer_category};
  const TaskId step = Add(cpu, {WorkKind::kOffload});
  g.AddDependency(after, step);
  Task copy{.stream = pcie_stream_[rank],
            .duration = config_.params_to_gpu[stage],
            .name = fetch_name_,
            .category = step_.offload_category};
  const TaskId back = Add(copy, {WorkKind::kOffload});
  g.AddDependency(step, back);
  return back;
}

// The optimizer step of |stage| after its gradient reductions, then, unless they run at the
// start of the step, the all-gathers of the updated weights.
void Builder::AddOptimizer(int32_t stage, NameId name,
                           const std::vector<std::vector<TaskId>>& reductions) {
  TaskGraph& g = step_.graph;
  std::vector<TaskId> gathers;
  for (int32_t replica = 0; replica < config_.replicas; ++replica) {
    const int32_t rank = Rank(replica, stage);
    Task opt{.stream = step_.compute_stream[rank],
             .duration = config_.optimizer_time[stage],
             .name = name,
             .category = step_.optimizer_category};
    TaskId opt_id =
        Add(opt, {WorkKind::kOptimizer, Pass::kW,
                  stage});  // reassigned below to what the weights' all-gather waits for
    if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], opt_id);
    for (TaskId t : reductions[replica]) g.AddDependency(t, opt_id);
    if (config_.host) {
      const TaskId issue = Add({.stream = step_.host_stream[rank],
                                .duration = config_.optimizer_host_lead[stage],
                                .name = name,
                                .category = step_.host_category},
                               {WorkKind::kHost, Pass::kW, stage});
      g.AddDependency(issue, opt_id);
      if (config_.host_sync_before_optimizer) {
        for (TaskId t : reductions[replica]) g.AddDependency(t, issue);
        if (latest_pass_[rank] != kNone) g.AddDependency(latest_pass_[rank], issue);
        if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], issue);
      }
    }
    if (!config_.grad_to_host.empty()) opt_id = AddCpuStep(stage, rank, opt_id);
    if (config_.param_gather_time[stage] > SimTime() && !config_.overlap_param_gather) {
      Task all_gather{.stream = dp_stream_[rank],
                      .duration = config_.param_gather_time[stage],
                      .name = param_gather_name_,
                      .category = step_.dp_category,
                      .route = DuplexRoute(rank, config_.dp_fabric)};
      TaskId ag = Add(all_gather, {WorkKind::kParamGather, Pass::kF, stage});
      g.AddDependency(opt_id, ag);
      gathers.push_back(ag);
    }
  }
  if (config_.replicas > 1 && gathers.size() > 1) g.AddCollective(gathers);
}

}  // namespace

StepGraph BuildStepGraph(const PipelineSchedule& schedule,
                         const std::vector<ChunkCost>& chunk_costs, const StepGraphConfig& config) {
  return Builder(schedule, chunk_costs, config).Build();
}

}  // namespace loom
