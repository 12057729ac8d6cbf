#include "program/unfold.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace loom {
namespace {

// A share of a folded collectives task: the collectives of one group, and their time.
struct SubCollective {
  UnfoldedGroup group = UnfoldedGroup::kTp;
  SimTime duration;
};

// |total| shared out over |weights| in proportion, to the nanosecond: each share is the floor of
// its exact value, and the nanoseconds left go one each to the largest remainders (ties to the
// earlier), so that the shares sum to |total|. Equal weights when they sum to zero.
std::vector<SimTime> Share(SimTime total, const std::vector<int64_t>& weights) {
  const size_t n = weights.size();
  std::vector<SimTime> out(n);
  if (n == 0) return out;
  __int128 sum = 0;
  for (int64_t w : weights) sum += std::max<int64_t>(w, 0);
  std::vector<std::pair<__int128, size_t>> remainders;
  int64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const __int128 w = sum > 0 ? std::max<int64_t>(weights[i], 0) : 1;
    const __int128 whole = sum > 0 ? sum : static_cast<__int128>(n);
    const __int128 exact = static_cast<__int128>(total.nanos()) * w;
    const int64_t floor = static_cast<int64_t>(exact / whole);
    out[i] = SimTime::FromNanos(floor);
    given += floor;
    remainders.emplace_back(exact % whole, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t left = total.nanos() - given, k = 0; left > 0; --left, ++k) {
    const size_t i = remainders[static_cast<size_t>(k) % n].second;
    out[i] = out[i] + SimTime::FromNanos(1);
  }
  return out;
}

// What validate unfolds at most: every GPU is one process, and every task of every GPU is in each
// process's memory (about 100 bytes a task with its dependencies).
constexpr int64_t kMaxGpus = int64_t{1} << 20;
constexpr int64_t kMaxUnfoldedTasks = int64_t{1} << 23;

// |to|'s pool ids are |from|'s (its graph has the same pools, in order) and its categories are
// |from|'s, by name in |to|'s string table (|name| maps an id of |from|'s to one of |to|'s).
template <typename NameMap>
void CopyPoolsAndCategories(const StepGraph& from, StepGraph& to, NameMap&& name) {
  to.weights = from.weights;
  to.gradients = from.gradients;
  to.optimizer_states = from.optimizer_states;
  to.model_states = from.model_states;
  to.activations = from.activations;
  to.logits = from.logits;
  to.recompute = from.recompute;
  to.gathered_weights = from.gathered_weights;
  to.compute_category = name(from.compute_category);
  to.tp_category = name(from.tp_category);
  to.pp_category = name(from.pp_category);
  to.dp_category = name(from.dp_category);
  to.optimizer_category = name(from.optimizer_category);
  to.cp_category = name(from.cp_category);
  to.offload_category = name(from.offload_category);
  to.host_category = name(from.host_category);
  to.tp_hidden_category = name(from.tp_hidden_category);
}

int64_t At(const std::vector<int64_t>& v, int32_t i) {
  return i >= 0 && static_cast<size_t>(i) < v.size() ? v[static_cast<size_t>(i)] : 0;
}

class Unfolder {
 public:
  explicit Unfolder(const PlanFile& folded)
      : in_(folded),
        fs_(folded.step),
        fg_(folded.step.graph),
        layout_(folded.gpus),
        where_(folded.file.empty() ? std::string("plan") : folded.file) {}

  Result<PlanFile> Run();

 private:
  Status Check();
  void IndexFolded();
  void AddStreamsAndPorts();
  Status AddTasks();
  Status AddDependencies();
  Status AddGroups();
  void AddMemory();

  int32_t FoldedRank(int32_t u) const {
    const int32_t lane = u / stages_;
    const int32_t replica = lane / (layout_.tp * layout_.cp);
    return u % stages_ + stages_ * (replicas_ == 1 ? 0 : replica);
  }
  // The unfolded rank of folded rank |fr|'s GPU in the lane of unfolded rank |u|, or -1 when |fr|
  // is in another replica than |u|.
  int32_t SameLane(int32_t fr, int32_t u) const {
    const int32_t lane = u / stages_;
    if (replicas_ > 1 && fr / stages_ != lane / (layout_.tp * layout_.cp)) return -1;
    return fr % stages_ + stages_ * lane;
  }
  NameId Name(NameId id) {
    auto [it, added] = names_.try_emplace(id, 0);
    if (added) it->second = g_.Intern(fg_.Name(id));
    return it->second;
  }
  Result<ChannelId> Channel(ChannelId ch, int32_t u);
  Result<RouteId> Route(RouteId route, int32_t u);
  LinkId Link(LinkId link, int32_t u);
  const std::vector<SubCollective>& SubsOf(TaskId ft);
  TaskId AddCopy(Task task, TaskWork work, int32_t micro_batch);

  const PlanFile& in_;
  const StepGraph& fs_;
  const TaskGraph& fg_;
  const GpuLayout layout_;
  const std::string where_;
  int32_t stages_ = 0, replicas_ = 0, world_ = 0;
  bool ring_ = false;  // cp collectives move as ring sends (kRingSend tasks)

  std::vector<int32_t> local_;                      // per folded task: its index on its rank
  std::vector<std::vector<TaskId>> rank_tasks_;     // per folded rank: its tasks in id order
  std::vector<int32_t> stream_slot_;                // per folded stream: its index on its rank
  std::vector<std::vector<StreamId>> rank_streams_;  // per folded rank
  std::vector<std::vector<int32_t>> users_;         // per folded rank: the unfolded ranks
  struct Owner {
    int32_t rank = -1;
    int8_t port = -1;  // 0 intra tx, 1 intra rx, 2 inter tx, 3 inter rx
  };
  std::vector<Owner> channel_owner_;
  std::vector<std::vector<SubCollective>> subs_;  // per folded task, filled on first use
  std::vector<bool> subs_done_;

  PlanFile out_;
  TaskGraph& g_ = out_.step.graph;
  std::map<NameId, NameId> names_;
  std::vector<StreamId> stream_base_;  // per unfolded rank
  std::map<std::vector<ChannelId>, RouteId> routes_;
  std::map<std::pair<LinkId, int32_t>, LinkId> links_;
  // Per unfolded rank, per local task of its folded rank: the first and last unfolded task.
  std::vector<std::vector<TaskId>> first_, last_;
  // (stage, local task, sub, group kind, leader lane) -> members, in rank order.
  std::map<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t>, std::vector<TaskId>> groups_;
};

Status Unfolder::Check() {
  LOOM_RETURN_IF_ERROR(CheckGpuLayout(layout_, where_ + ": gpus"));
  LOOM_RETURN_IF_ERROR(fg_.build_status());
  stages_ = fs_.stages;
  replicas_ = fs_.replicas;
  if (stages_ < 1 || replicas_ < 1 || fg_.num_ranks() > stages_ * replicas_) {
    return Status::InvalidArgument(where_ + ": step.stages " + std::to_string(stages_) +
                                   " x step.replicas " + std::to_string(replicas_) +
                                   " does not hold its " + std::to_string(fg_.num_ranks()) +
                                   " ranks; write the plan again with loom plan --emit plan");
  }
  if (replicas_ != 1 && replicas_ != layout_.dp) {
    return Status::InvalidArgument(
        where_ + ": step.replicas is " + std::to_string(replicas_) + " but gpus.dp is " +
        std::to_string(layout_.dp) +
        ": a plan holds one data-parallel replica or all of them; write the plan again with "
        "loom plan --emit plan");
  }
  if (fs_.work.size() != static_cast<size_t>(fg_.num_tasks())) {
    return Status::InvalidArgument(where_ + ": the step says what " +
                                   std::to_string(fs_.work.size()) + " of its " +
                                   std::to_string(fg_.num_tasks()) + " tasks run");
  }
  const int64_t world = int64_t{stages_} * layout_.lanes();
  if (world > kMaxGpus) {
    return Status::InvalidArgument(where_ + ": " + std::to_string(world) +
                                   " GPUs are more than loom unfolds (" + std::to_string(kMaxGpus) +
                                   "); validate a plan of fewer GPUs");
  }
  world_ = static_cast<int32_t>(world);
  for (GroupId gr = 0; gr < fg_.num_groups(); ++gr) {
    const TaskId member = fg_.group_members(gr)[0];
    const WorkKind kind = fs_.work[member].kind;
    if (kind != WorkKind::kGradReduce && kind != WorkKind::kParamGather &&
        kind != WorkKind::kLayerGather) {
      return Status::InvalidArgument(
          where_ + ": the collective of " + fg_.DescribeTask(member) + " runs " +
          std::string(kWorkKindNames.Name(kind)) +
          " work, but a folded step's only collectives are between data-parallel replicas; "
          "write the plan again with loom plan --emit plan");
    }
  }
  return Status::Ok();
}

void Unfolder::IndexFolded() {
  const int32_t ranks = stages_ * replicas_;
  local_.resize(static_cast<size_t>(fg_.num_tasks()));
  rank_tasks_.resize(static_cast<size_t>(ranks));
  for (TaskId t = 0; t < fg_.num_tasks(); ++t) {
    auto& list = rank_tasks_[fg_.rank_of(t)];
    local_[t] = static_cast<int32_t>(list.size());
    list.push_back(t);
    ring_ = ring_ || fs_.work[t].kind == WorkKind::kRingSend;
  }
  stream_slot_.resize(static_cast<size_t>(fg_.num_streams()));
  rank_streams_.resize(static_cast<size_t>(ranks));
  for (StreamId s = 0; s < fg_.num_streams(); ++s) {
    auto& list = rank_streams_[fg_.stream_rank(s)];
    stream_slot_[s] = static_cast<int32_t>(list.size());
    list.push_back(s);
  }
  users_.resize(static_cast<size_t>(ranks));
  for (int32_t u = 0; u < world_; ++u) users_[FoldedRank(u)].push_back(u);
  channel_owner_.resize(static_cast<size_t>(fg_.num_channels()));
  const auto own = [&](const std::vector<Port>& ports, int8_t base) {
    for (size_t r = 0; r < ports.size(); ++r) {
      if (ports[r].tx != kNoChannel) channel_owner_[ports[r].tx] = {static_cast<int32_t>(r), base};
      if (ports[r].rx != kNoChannel) {
        channel_owner_[ports[r].rx] = {static_cast<int32_t>(r), static_cast<int8_t>(base + 1)};
      }
    }
  };
  own(fs_.intra_node_port, 0);
  own(fs_.inter_node_port, 2);
  subs_.resize(static_cast<size_t>(fg_.num_tasks()));
  subs_done_.assign(static_cast<size_t>(fg_.num_tasks()), false);
}

// "rank 3 nic tx" of folded rank 3 becomes "rank 17 nic tx" on unfolded rank 17.
std::string Renamed(std::string_view name, int32_t from, int32_t to) {
  const std::string prefix = "rank " + std::to_string(from) + " ";
  if (name.substr(0, prefix.size()) == prefix) {
    return "rank " + std::to_string(to) + " " + std::string(name.substr(prefix.size()));
  }
  return std::string(name) + " (rank " + std::to_string(to) + ")";
}

void Unfolder::AddStreamsAndPorts() {
  StepGraph& step = out_.step;
  for (PoolId p = 1; p < fg_.num_pools(); ++p) g_.AddPool(fg_.Name(fg_.pool_name(p)));
  const auto port = [&](const std::vector<Port>& from, std::vector<Port>& to, int32_t fr,
                        int32_t u) {
    if (from.empty()) return;
    const Port& p = from[static_cast<size_t>(fr)];
    const auto channel = [&](ChannelId ch) {
      return ch == kNoChannel ? kNoChannel
                              : g_.AddChannel(Renamed(fg_.Name(fg_.channel_name(ch)), fr, u));
    };
    const ChannelId tx = channel(p.tx);
    to.push_back({tx, channel(p.rx)});
  };
  for (int32_t u = 0; u < world_; ++u) {
    const int32_t fr = FoldedRank(u);
    stream_base_.push_back(g_.num_streams());
    for (StreamId s : rank_streams_[fr]) g_.AddStream(u, fg_.Name(fg_.stream_name(s)));
    const auto mapped = [&](StreamId s) {
      return s < 0 ? s : stream_base_.back() + stream_slot_[s];
    };
    step.compute_stream.push_back(mapped(fs_.compute_stream[fr]));
    if (!fs_.host_stream.empty()) step.host_stream.push_back(mapped(fs_.host_stream[fr]));
    port(fs_.intra_node_port, step.intra_node_port, fr, u);
    port(fs_.inter_node_port, step.inter_node_port, fr, u);
  }
}

Result<ChannelId> Unfolder::Channel(ChannelId ch, int32_t u) {
  const Owner owner = channel_owner_[ch];
  const int32_t to = owner.rank < 0 ? -1 : SameLane(owner.rank, u);
  if (to < 0) {
    return Status::InvalidArgument(
        where_ + ": channel '" + std::string(fg_.Name(fg_.channel_name(ch))) +
        "' is on no port of a rank of the same replica as the task that crosses it, so it cannot "
        "be given to one GPU; write the plan again with loom plan --emit plan");
  }
  const std::vector<Port>& ports =
      owner.port < 2 ? out_.step.intra_node_port : out_.step.inter_node_port;
  const Port& port = ports[static_cast<size_t>(to)];
  return owner.port % 2 == 0 ? port.tx : port.rx;
}

Result<RouteId> Unfolder::Route(RouteId route, int32_t u) {
  if (route == kNoRoute) return kNoRoute;
  std::vector<ChannelId> channels;
  for (ChannelId ch : fg_.route_channels(route)) {
    LOOM_ASSIGN_OR_RETURN(ChannelId mapped, Channel(ch, u));
    channels.push_back(mapped);
  }
  auto [it, added] = routes_.try_emplace(channels, kNoRoute);
  if (added) it->second = g_.AddRoute(channels);
  return it->second;
}

// A link is one lane's: the GPUs of other lanes have their own copy of it.
LinkId Unfolder::Link(LinkId link, int32_t u) {
  if (link == kNoLink) return kNoLink;
  const int32_t lane = u / stages_;
  auto [it, added] = links_.try_emplace({link, lane}, kNoLink);
  if (added) {
    it->second = g_.AddLink(std::string(fg_.Name(fg_.link_name(link))) + " lane " +
                            std::to_string(lane));
  }
  return it->second;
}

// What folded task |ft| becomes: one or more sub-collectives (empty: a plain copy).
const std::vector<SubCollective>& Unfolder::SubsOf(TaskId ft) {
  std::vector<SubCollective>& subs = subs_[ft];
  if (subs_done_[ft]) return subs;
  subs_done_[ft] = true;
  const TaskWork& work = fs_.work[ft];
  const SimTime duration = fg_.task(ft).duration;
  std::vector<int64_t> weights;
  if (work.kind == WorkKind::kTpComm) {
    // One task per group the pass's collectives run on (tp, cp, ep, etp), in the order the pass
    // first uses it, holding the time of all its collectives on that group. The builder gives
    // each part of a pass an equal slice of the pass's collectives time (SlicePass), so a part
    // holds its share of every one: the groups are those of the whole pass.
    const PassOps ops = OpsOfPass(in_.workload, WholePass(work));
    for (size_t i = 0; i < ops.ops.size(); ++i) {
      const Op& op = *ops.ops[i];
      if (op.kind != OpKind::kCollective) continue;
      const CollectiveShape& shape = std::get<CollectiveShape>(op.shape);
      // With ring attention the cp collectives are the ring sends, tasks of their own.
      if (ring_ && shape.group == CommGroup::kCp) continue;
      const UnfoldedGroup group = UnfoldedGroupOf(shape.group);
      size_t at = 0;
      while (at < subs.size() && subs[at].group != group) ++at;
      if (at == subs.size()) {
        subs.push_back({group, SimTime()});
        weights.push_back(0);
      }
      weights[at] += ops.predicted[i].nanos();
    }
  } else if (work.kind == WorkKind::kGradReduce || work.kind == WorkKind::kParamGather) {
    const StepPayloads& p = in_.workload.payloads;
    const bool grads = work.kind == WorkKind::kGradReduce;
    const int64_t dense = At(grads ? p.bucket_bytes : p.param_gather_bytes, work.index);
    const int64_t expert =
        At(grads ? p.expert_bucket_bytes : p.expert_param_gather_bytes, work.index);
    if (dense > 0 || expert <= 0) {
      subs.push_back({UnfoldedGroup::kDp, SimTime()});
      weights.push_back(dense);
    }
    if (expert > 0) {
      subs.push_back({UnfoldedGroup::kEdp, SimTime()});
      weights.push_back(expert);
    }
  } else if (work.kind == WorkKind::kLayerGather) {
    subs.push_back({UnfoldedGroup::kDp, SimTime()});
    weights.push_back(1);
  }
  const std::vector<SimTime> shares = Share(duration, weights);
  for (size_t i = 0; i < subs.size(); ++i) subs[i].duration = shares[i];
  return subs;
}

TaskId Unfolder::AddCopy(Task task, TaskWork work, int32_t micro_batch) {
  out_.step.work.push_back(work);
  if (!fs_.micro_batch.empty()) out_.step.micro_batch.push_back(micro_batch);
  return g_.AddTask(task);
}

Status Unfolder::AddTasks() {
  first_.resize(static_cast<size_t>(world_));
  last_.resize(static_cast<size_t>(world_));
  for (int32_t u = 0; u < world_; ++u) {
    const int32_t fr = FoldedRank(u);
    const int32_t stage = u % stages_;
    const int32_t lane = u / stages_;
    first_[u].reserve(rank_tasks_[fr].size());
    last_[u].reserve(rank_tasks_[fr].size());
    for (TaskId ft : rank_tasks_[fr]) {
      Task task = fg_.task(ft);
      task.stream = stream_base_[u] + stream_slot_[task.stream];
      task.name = Name(task.name);
      task.category = Name(task.category);
      task.link = Link(task.link, u);
      LOOM_ASSIGN_OR_RETURN(task.route, Route(task.route, u));
      const TaskWork work = fs_.work[ft];
      const int32_t micro_batch = fs_.micro_batch.empty() ? -1 : fs_.micro_batch[ft];
      const std::vector<SubCollective>& subs = SubsOf(ft);
      if (subs.empty()) {
        const TaskId id = AddCopy(task, work, micro_batch);
        first_[u].push_back(id);
        last_[u].push_back(id);
        continue;
      }
      for (size_t j = 0; j < subs.size(); ++j) {
        Task sub = task;
        sub.duration = subs[j].duration;
        if (j > 0) sub.alloc_at_start_bytes = 0;
        if (j + 1 < subs.size()) sub.free_at_end_bytes = 0;
        TaskWork sub_work = work;
        sub_work.group = static_cast<int32_t>(subs[j].group);
        const TaskId id = AddCopy(sub, sub_work, micro_batch);
        if (j == 0) first_[u].push_back(id);
        if (j + 1 == subs.size()) last_[u].push_back(id);
        const UnfoldedGroup kind = subs[j].group;
        groups_[{stage, local_[ft], static_cast<int32_t>(j), static_cast<int32_t>(kind),
                 GroupLeaderLane(layout_, lane, kind)}]
            .push_back(id);
      }
    }
  }
  return Status::Ok();
}

Status Unfolder::AddDependencies() {
  for (const Dependency& d : fg_.dependencies()) {
    const int32_t fa = fg_.rank_of(d.before), fb = fg_.rank_of(d.after);
    const bool ring = fs_.work[d.before].kind == WorkKind::kRingSend;
    if (ring && fa != fb) {
      return Status::InvalidArgument(where_ + ": the ring send " + fg_.DescribeTask(d.before) +
                                     " feeds a task of another rank; in a folded step it feeds "
                                     "its own rank's next attention block");
    }
    for (int32_t u : users_[fa]) {
      int32_t to = u;
      if (ring) {
        // The K/V block goes to the next context rank, whose next attention block waits for it.
        const int32_t lane = u / stages_;
        const int32_t c = (lane / layout_.tp) % layout_.cp;
        to = u + stages_ * layout_.tp * ((c + 1) % layout_.cp - c);
      } else if (fa != fb) {
        to = SameLane(fb, u);
        if (to < 0) {
          return Status::InvalidArgument(
              where_ + ": " + fg_.DescribeTask(d.before) + " feeds " +
              fg_.DescribeTask(d.after) +
              " of another data-parallel replica; replicas exchange only collectives");
        }
      }
      g_.AddDependency(last_[u][local_[d.before]], first_[to][local_[d.after]]);
    }
  }
  return Status::Ok();
}

Status Unfolder::AddGroups() {
  for (const auto& [key, members] : groups_) {
    const auto kind = static_cast<UnfoldedGroup>(std::get<3>(key));
    const int32_t size = GroupSize(layout_, kind);
    if (static_cast<int32_t>(members.size()) != size) {
      return Status::InvalidArgument(
          where_ + ": the " + std::string(UnfoldedGroupName(kind)) + " collective of " +
          g_.DescribeTask(members[0]) + " has " + std::to_string(members.size()) +
          " GPUs, but its group has " + std::to_string(size) +
          ": the step's data-parallel replicas do not run the same tasks");
    }
    // Every member runs the same work, or the replicas differ.
    for (TaskId m : members) {
      if (!(out_.step.work[m] == out_.step.work[members[0]])) {
        return Status::InvalidArgument(where_ + ": " + g_.DescribeTask(m) + " and " +
                                       g_.DescribeTask(members[0]) +
                                       " would be one collective but run different work: the "
                                       "step's data-parallel replicas do not run the same tasks");
      }
    }
    if (size > 1) g_.AddCollective(members);
  }
  return g_.build_status();
}

void Unfolder::AddMemory() {
  for (const MemoryEvent& e : fg_.memory_events()) {
    for (int32_t u : users_[fg_.rank_of(e.task)]) {
      const TaskId at = e.phase == MemoryPhase::kAtStart ? first_[u][local_[e.task]]
                                                         : last_[u][local_[e.task]];
      g_.AddMemoryEvent(at, e.phase, e.pool, e.delta_bytes);
    }
  }
  for (const StepGraph::RingTransfer& rt : fs_.ring_transfers) {
    for (int32_t u : users_[fg_.rank_of(rt.transfer)]) {
      out_.step.ring_transfers.push_back(
          {last_[u][local_[rt.transfer]], last_[u][local_[rt.beside]]});
    }
  }
  for (const MemoryBaseline& b : in_.baselines) {
    if (b.rank < 0 || static_cast<size_t>(b.rank) >= users_.size()) continue;
    for (int32_t u : users_[b.rank]) out_.baselines.push_back({u, b.pool, b.bytes});
  }
  std::stable_sort(out_.baselines.begin(), out_.baselines.end(),
                   [](const MemoryBaseline& a, const MemoryBaseline& b) { return a.rank < b.rank; });
}

Result<PlanFile> Unfolder::Run() {
  LOOM_RETURN_IF_ERROR(Check());
  IndexFolded();
  int64_t tasks = 0;
  for (size_t fr = 0; fr < rank_tasks_.size(); ++fr) {
    tasks += static_cast<int64_t>(rank_tasks_[fr].size()) * static_cast<int64_t>(users_[fr].size());
  }
  if (tasks > kMaxUnfoldedTasks) {
    return Status::InvalidArgument(
        where_ + ": its " + std::to_string(world_) + " GPUs would run " + std::to_string(tasks) +
        " tasks together, more than loom unfolds (" + std::to_string(kMaxUnfoldedTasks) +
        "); validate a plan of fewer GPUs (a smaller dp runs the same rank programs)");
  }
  out_.file = in_.file;
  out_.source = in_.source;
  out_.prediction = in_.prediction;
  out_.workload = in_.workload;
  out_.gpus = layout_;
  StepGraph& step = out_.step;
  step.stages = stages_;
  step.replicas = layout_.lanes();
  AddStreamsAndPorts();
  LOOM_RETURN_IF_ERROR(AddTasks());
  LOOM_RETURN_IF_ERROR(AddDependencies());
  LOOM_RETURN_IF_ERROR(AddGroups());
  AddMemory();
  CopyPoolsAndCategories(fs_, step, [this](NameId id) { return Name(id); });
  LOOM_RETURN_IF_ERROR(g_.build_status());
  return std::move(out_);
}

}  // namespace

Result<PlanFile> UnfoldPlan(const PlanFile& folded) { return Unfolder(folded).Run(); }

Result<PlanFile> OneGpuPlan(const PlanFile& unfolded, int32_t rank) {
  const StepGraph& in = unfolded.step;
  const TaskGraph& g = in.graph;
  if (rank < 0 || rank >= g.num_ranks()) {
    return Status::InvalidArgument(
        (unfolded.file.empty() ? std::string("plan") : unfolded.file) + ": GPU " +
        std::to_string(rank) + " is not one of its " + std::to_string(g.num_ranks()) +
        " GPUs; give --one-gpu a rank from 0 to " + std::to_string(g.num_ranks() - 1));
  }
  if (in.work.size() != static_cast<size_t>(g.num_tasks())) {
    return Status::InvalidArgument(unfolded.file + ": the step does not say what its tasks run");
  }
  PlanFile out;
  out.file = unfolded.file;
  out.source = unfolded.source;
  out.prediction = unfolded.prediction;
  out.workload = unfolded.workload;
  out.gpus = unfolded.gpus;
  StepGraph& step = out.step;
  TaskGraph& o = step.graph;
  step.stages = 1;
  step.replicas = 1;
  for (PoolId p = 1; p < g.num_pools(); ++p) o.AddPool(g.Name(g.pool_name(p)));
  std::map<NameId, NameId> names;
  const auto name = [&](NameId id) {
    auto [it, added] = names.try_emplace(id, 0);
    if (added) it->second = o.Intern(g.Name(id));
    return it->second;
  };
  std::vector<StreamId> stream_of(static_cast<size_t>(g.num_streams()), -1);
  for (StreamId s = 0; s < g.num_streams(); ++s) {
    if (g.stream_rank(s) == rank) stream_of[s] = o.AddStream(0, g.Name(g.stream_name(s)));
  }
  std::vector<TaskId> task_of(static_cast<size_t>(g.num_tasks()), -1);
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (g.rank_of(t) != rank) continue;
    Task task = g.task(t);
    task.stream = stream_of[task.stream];
    task.name = name(task.name);
    task.category = name(task.category);
    task.link = kNoLink;
    task.route = kNoRoute;
    task_of[t] = o.AddTask(task);
    step.work.push_back(in.work[t]);
    if (!in.micro_batch.empty()) step.micro_batch.push_back(in.micro_batch[t]);
  }
  for (const Dependency& d : g.dependencies()) {
    if (task_of[d.before] >= 0 && task_of[d.after] >= 0) {
      o.AddDependency(task_of[d.before], task_of[d.after]);
    }
  }
  for (const MemoryEvent& e : g.memory_events()) {
    if (task_of[e.task] >= 0) o.AddMemoryEvent(task_of[e.task], e.phase, e.pool, e.delta_bytes);
  }
  for (const StepGraph::RingTransfer& rt : in.ring_transfers) {
    if (task_of[rt.transfer] >= 0 && task_of[rt.beside] >= 0) {
      step.ring_transfers.push_back({task_of[rt.transfer], task_of[rt.beside]});
    }
  }
  for (const MemoryBaseline& b : unfolded.baselines) {
    if (b.rank == rank) out.baselines.push_back({0, b.pool, b.bytes});
  }
  step.compute_stream.push_back(stream_of[in.compute_stream[rank]]);
  if (!in.host_stream.empty()) step.host_stream.push_back(stream_of[in.host_stream[rank]]);
  CopyPoolsAndCategories(in, step, name);
  LOOM_RETURN_IF_ERROR(o.build_status());
  return out;
}

}  // namespace loom
