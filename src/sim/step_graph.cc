#include "sim/step_graph.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

namespace loom {
namespace {

constexpr TaskId kNone = -1;

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

  static size_t Size(int32_t v, int32_t m) { return static_cast<size_t>(v) * static_cast<size_t>(m); }
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
  Builder(const PipelineSchedule& schedule, const std::vector<ChunkCost>& costs, const StepGraphConfig& config)
      : schedule_(schedule), costs_(costs), config_(config) {}

  StepGraph Build();

 private:
  void AddRank(int32_t rank);
  void AddPorts(int32_t rank);
  RouteId SendRoute(int32_t from_rank, int32_t to_rank);
  RouteId DuplexRoute(int32_t rank, Fabric fabric) const { return duplex_routes_[rank][static_cast<size_t>(fabric)]; }
  void AddPasses(int32_t replica, int32_t stage, PassIds& ids);
  PassTasks AddPass(int32_t rank, NameId name, const PassCost& cost, int64_t alloc, int64_t free,
                    int64_t recompute_bytes = 0);
  void AddBackward(int32_t replica, int32_t stage, const PipelineItem& item, bool last_of_chunk, PassIds& ids);
  void Connect(int32_t replica, PassIds& ids);
  TaskId Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before, TaskId after);
  void AddGradientReduction();
  int32_t Rank(int32_t replica, int32_t stage) const { return replica * schedule_.stages + stage; }

  const PipelineSchedule& schedule_;
  const std::vector<ChunkCost>& costs_;
  const StepGraphConfig& config_;
  StepGraph step_;
  std::vector<StreamId> tp_stream_, pp_stream_, dp_stream_;
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
};

StepGraph Builder::Build() {
  TaskGraph& g = step_.graph;
  step_.stages = schedule_.stages;
  step_.replicas = config_.replicas;
  step_.model_states = g.AddPool("model states");
  step_.activations = g.AddPool("activations");
  step_.recompute = g.AddPool("recompute");
  step_.compute_category = g.Intern("compute");
  step_.tp_category = g.Intern("tp");
  step_.pp_category = g.Intern("pp");
  step_.dp_category = g.Intern("dp");
  step_.optimizer_category = g.Intern("optimizer");
  const int32_t v_count = schedule_.VirtualStages();
  for (Pass pass : {Pass::kF, Pass::kB, Pass::kW, Pass::kBW}) {
    for (int32_t v = 0; v < v_count; ++v) {
      pass_names_.push_back(g.Intern(std::string(kPassNames.Name(pass)) + " v" + std::to_string(v)));
    }
  }
  for (int32_t r = 0; r < config_.replicas * schedule_.stages; ++r) AddRank(r);
  for (int32_t r = 0; r < config_.replicas * schedule_.stages; ++r) AddPorts(r);
  bucket_segments_.assign(static_cast<size_t>(config_.replicas) * v_count, {});
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
}

// Adds the channels of the rank's ports on the fabrics the config uses, and the routes of its
// collectives.
void Builder::AddPorts(int32_t rank) {
  TaskGraph& g = step_.graph;
  const std::string prefix = "rank " + std::to_string(rank) + " ";
  const auto add_port = [&](Fabric fabric, const char* name, std::vector<Port>& ports) {
    const std::array<Fabric, 3> used = {config_.pp_fabric, config_.dp_fabric, config_.tp_fabric};
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
// next pass on the rank starts after both.
// |alloc| and |free| are activation bytes kept across passes; |recompute_bytes| is a buffer that
// lives for this pass only.
PassTasks Builder::AddPass(int32_t rank, NameId name, const PassCost& cost, int64_t alloc, int64_t free,
                           int64_t recompute_bytes) {
  const bool has_tp = cost.tp_comm > SimTime();
  Task compute{.stream = step_.compute_stream[rank], .duration = cost.time - cost.tp_comm, .name = name,
               .category = step_.compute_category, .alloc_at_start_bytes = alloc,
               .free_at_end_bytes = has_tp ? 0 : free, .pool = step_.activations};
  PassTasks pass;
  pass.first = pass.last = step_.graph.AddTask(compute);
  if (pending_tp_[rank] != kNone) step_.graph.AddDependency(pending_tp_[rank], pass.first);
  pending_tp_[rank] = kNone;
  if (has_tp) {
    Task tp{.stream = tp_stream_[rank], .duration = cost.tp_comm, .name = name, .category = step_.tp_category,
            .free_at_end_bytes = free, .pool = step_.activations,
            .route = DuplexRoute(rank, config_.tp_fabric)};
    pass.last = step_.graph.AddTask(tp);
    step_.graph.AddDependency(pass.first, pass.last);
    pending_tp_[rank] = pass.last;
  }
  if (recompute_bytes > 0) {
    step_.graph.AddMemoryEvent(pass.first, MemoryPhase::kAtStart, step_.recompute, recompute_bytes);
    step_.graph.AddMemoryEvent(pass.last, MemoryPhase::kAtEnd, step_.recompute, -recompute_bytes);
  }
  if (latest_pass_[rank] != kNone) next_pass_[latest_pass_[rank]] = pass.first;
  latest_pass_[rank] = pass.last;
  return pass;
}

void Builder::AddPasses(int32_t replica, int32_t stage, PassIds& ids) {
  const int32_t rank = Rank(replica, stage);
  // The last backward item of each chunk on this stage carries the gradient buckets.
  std::vector<size_t> last_backward(static_cast<size_t>(schedule_.chunks), 0);
  const std::vector<PipelineItem>& order = schedule_.order[stage];
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i].pass == Pass::kW || order[i].pass == Pass::kBW) last_backward[order[i].chunk] = i;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const PipelineItem& item = order[i];
    const int32_t v = schedule_.VirtualStage(stage, item.chunk);
    const ChunkCost& cost = costs_[v];
    if (item.pass == Pass::kF) {
      ids.f(v, item.micro_batch) = AddPass(rank, pass_names_[v], cost.forward, cost.kept_activation_bytes, 0);
      continue;
    }
    AddBackward(replica, stage, item, last_backward[item.chunk] == i, ids);
  }
}

// B, W or BW of one micro-batch. The chunk's final W or BW is cut into one segment per gradient
// bucket, each a slice of the pass's time.
void Builder::AddBackward(int32_t replica, int32_t stage, const PipelineItem& item, bool last_of_chunk,
                          PassIds& ids) {
  const int32_t rank = Rank(replica, stage);
  const int32_t v = schedule_.VirtualStage(stage, item.chunk);
  const int32_t v_count = schedule_.VirtualStages();
  const ChunkCost& cost = costs_[v];
  const int32_t mb = item.micro_batch;
  if (item.pass == Pass::kB) {
    ids.b(v, mb) = AddPass(rank, pass_names_[v_count + v], cost.backward_input, 0, 0, cost.recompute_activation_bytes);
    return;
  }
  PassCost pass = cost.backward_weight;
  if (item.pass == Pass::kBW) {
    pass.time += cost.backward_input.time;
    pass.tp_comm += cost.backward_input.tp_comm;
    pass.flops += cost.backward_input.flops;
  }
  const NameId name = pass_names_[(item.pass == Pass::kW ? 2 : 3) * v_count + v];
  const int64_t recompute = item.pass == Pass::kBW ? cost.recompute_activation_bytes : 0;
  const int32_t segments = last_of_chunk && !config_.buckets.empty() ? std::max(1, config_.buckets[v]) : 1;
  std::vector<TaskId>& bucket_tasks = bucket_segments_[static_cast<size_t>(replica) * v_count + v];
  PassTasks whole;
  for (int32_t seg = 0; seg < segments; ++seg) {
    // Equal slices; the first takes the nanoseconds the division leaves over.
    PassCost slice = pass;
    slice.tp_comm = SimTime::FromNanos(pass.tp_comm.nanos() / segments);
    slice.time = slice.tp_comm + SimTime::FromNanos((pass.time - pass.tp_comm).nanos() / segments +
                                                    (seg == 0 ? (pass.time - pass.tp_comm).nanos() % segments : 0));
    const bool is_last = seg + 1 == segments;
    // The recompute buffer of a BW is needed by its first slice only (an approximation when the
    // last backward is cut into gradient buckets).
    PassTasks part = AddPass(rank, name, slice, 0, is_last ? cost.kept_activation_bytes : 0, seg == 0 ? recompute : 0);
    if (whole.first == kNone) whole.first = part.first;
    whole.last = part.last;
    if (last_of_chunk && !config_.buckets.empty()) bucket_tasks.push_back(part.last);
  }
  if (item.pass == Pass::kBW) ids.b(v, mb) = whole;
  if (item.pass == Pass::kW) step_.graph.AddDependency(ids.b(v, mb).last, whole.first);
}

TaskId Builder::Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before, TaskId after) {
  Task task;
  task.stream = pp_stream_[Rank(replica, from_stage)];
  // No link orders the sends: the sender's pp stream sends one at a time already.
  task.route = SendRoute(Rank(replica, from_stage), Rank(replica, to_stage));
  task.duration = config_.p2p_time;
  task.name = step_.pp_category;
  task.category = step_.pp_category;
  TaskId id = step_.graph.AddTask(task);
  step_.graph.AddDependency(before, id);
  step_.graph.AddDependency(id, after);
  // The send only waits for |before|, never for the receiver, so holding back the sender's next
  // pass adds no wait cycle.
  if (auto next = next_pass_.find(before); config_.blocking_sends && next != next_pass_.end()) {
    step_.graph.AddDependency(id, next->second);
  }
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
      if (v > 0) link(ids.f(v - 1, mb).last, ids.f(v, mb).first, schedule_.Place(v - 1).stage, stage);
      step_.graph.AddDependency(ids.f(v, mb).last, ids.b(v, mb).first);
      if (v + 1 < v_count) link(ids.b(v + 1, mb).last, ids.b(v, mb).first, schedule_.Place(v + 1).stage, stage);
    }
  }
  std::sort(transfers.begin(), transfers.end(),
            [](const PendingTransfer& a, const PendingTransfer& b) { return a.before < b.before; });
  for (const PendingTransfer& t : transfers) Transfer(replica, t.from, t.to, t.before, t.after);
}

void Builder::AddGradientReduction() {
  TaskGraph& g = step_.graph;
  const int32_t v_count = schedule_.VirtualStages();
  const NameId reduce = g.Intern("grad reduce"), optimizer = g.Intern("optimizer"),
               gather = g.Intern("param all-gather");
  const bool reduce_grads = !config_.buckets.empty();
  for (int32_t stage = 0; stage < schedule_.stages; ++stage) {
    std::vector<std::vector<TaskId>> per_replica(static_cast<size_t>(config_.replicas));
    for (int32_t chunk = 0; chunk < schedule_.chunks && reduce_grads; ++chunk) {
      const int32_t v = schedule_.VirtualStage(stage, chunk);
      for (int32_t bucket = 0; bucket < std::max(1, config_.buckets[v]); ++bucket) {
        std::vector<TaskId> members;
        for (int32_t replica = 0; replica < config_.replicas; ++replica) {
          const std::vector<TaskId>& segs = bucket_segments_[static_cast<size_t>(replica) * v_count + v];
          const int32_t rank = Rank(replica, stage);
          Task task{.stream = dp_stream_[rank], .duration = config_.bucket_time[v], .name = reduce,
                    .category = step_.dp_category,
                    .route = DuplexRoute(rank, config_.dp_fabric)};
          TaskId id = g.AddTask(task);
          g.AddDependency(segs[std::min<size_t>(bucket, segs.size() - 1)], id);
          members.push_back(id);
          per_replica[replica].push_back(id);
        }
        if (config_.replicas > 1) g.AddCollective(members);
      }
    }
    std::vector<TaskId> gathers;
    for (int32_t replica = 0; replica < config_.replicas; ++replica) {
      const int32_t rank = Rank(replica, stage);
      Task opt{.stream = step_.compute_stream[rank], .duration = config_.optimizer_time[stage], .name = optimizer,
               .category = step_.optimizer_category};
      TaskId opt_id = g.AddTask(opt);
      if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], opt_id);
      for (TaskId t : per_replica[replica]) g.AddDependency(t, opt_id);
      if (config_.param_gather_time[stage] > SimTime()) {
        Task all_gather{.stream = dp_stream_[rank], .duration = config_.param_gather_time[stage], .name = gather,
                        .category = step_.dp_category,
                        .route = DuplexRoute(rank, config_.dp_fabric)};
        TaskId ag = g.AddTask(all_gather);
        g.AddDependency(opt_id, ag);
        gathers.push_back(ag);
      }
    }
    if (config_.replicas > 1 && gathers.size() > 1) g.AddCollective(gathers);
  }
}

}  // namespace

StepGraph BuildStepGraph(const PipelineSchedule& schedule, const std::vector<ChunkCost>& chunk_costs,
                         const StepGraphConfig& config) {
  return Builder(schedule, chunk_costs, config).Build();
}

}  // namespace loom
