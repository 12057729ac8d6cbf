#include "exec/device_program.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string>

namespace loom {
namespace {

constexpr char kSupported[] =
    "the cuda backend runs plans unfolded to their GPUs (tp, cp, ep and data parallelism, ring "
    "attention, expert all-to-alls, ZeRO-3 layer gathers), without offload; validate this plan "
    "with --backend host, or run one GPU's kernels with --backend cuda --one-gpu, which stands in "
    "for its copies";

Status NotRunnable(const TaskGraph& g, TaskId task, const std::string& what) {
  return Status::Unimplemented("task " + g.DescribeTask(task) + " " + what + "; " + kSupported);
}

// Builds a DeviceProgram step by step; each step may fail.
class ProgramBuilder {
 public:
  ProgramBuilder(const PlanFile& plan, const ExecPlan& exec, int32_t rank, bool stand_ins)
      : plan_(plan), exec_(exec), g_(plan.step.graph), rank_(rank), stand_ins_(stand_ins) {}

  Result<DeviceProgram> Build();

 private:
  Status FindEdges();
  Status AddReceives();
  Status Order();
  Status SetWork(DeviceTask& task);
  Status SetMemory();
  // The bytes a send task moves: a pipeline transfer's activations, or a ring step's K/V blocks.
  int64_t SendBytes(TaskId send) const;

  const PlanFile& plan_;
  const ExecPlan& exec_;
  const TaskGraph& g_;
  const int32_t rank_;
  const bool stand_ins_;
  DeviceProgram out_;
  std::map<TaskId, int32_t> receive_of_send_;  // a send to this rank -> its receive
  std::map<TaskId, int32_t> edge_of_send_;     // every send of the step -> its edge
  std::vector<int32_t> index_of_;              // task id -> DeviceTask index (-1: other rank)
  bool ring_ = false;  // the cp collectives of the passes are ring sends (kRingSend tasks)
};

int64_t ProgramBuilder::SendBytes(TaskId send) const {
  const TaskWork& work = plan_.step.work[send];
  if (work.kind != WorkKind::kRingSend) return plan_.workload.payloads.p2p_bytes;
  // One ring step passes this GPU's block of each layer's gathered K/V (or of their gradients) to
  // the next context rank: 1/cp of each cp collective of the pass, as the cost model times it;
  // a part of the pass sends its share.
  const PassOps ops = OpsOfPass(plan_.workload, WholePass(work));
  int64_t bytes = 0;
  for (const Op* op : ops.ops) {
    if (op->kind != OpKind::kCollective) continue;
    const CollectiveShape& shape = std::get<CollectiveShape>(op->shape);
    if (shape.group == CommGroup::kCp) bytes += shape.bytes / std::max(plan_.gpus.cp, 1);
  }
  return bytes / std::max(work.parts, 1);
}

// Every send of the step, and the edge (sender, receiver) it travels; the edges in the order of
// their first send's task id, which every rank computes alike. A dependency between ranks must
// leave a send (the step graph's transfers), and a send has one receiver.
Status ProgramBuilder::FindEdges() {
  std::map<std::pair<int32_t, int32_t>, int32_t> edges;
  for (TaskId t = 0; t < g_.num_tasks(); ++t) {
    const std::span<const TaskId> remote = exec_.remote_successors(t);
    if (remote.empty()) continue;
    const WorkKind kind = plan_.step.work[t].kind;
    if (kind != WorkKind::kTransfer && kind != WorkKind::kRingSend) {
      return NotRunnable(g_, t,
                         "has successors on another rank but is not a send between pipeline "
                         "stages or around the context-parallel ring");
    }
    const int32_t to = g_.rank_of(remote.front());
    for (TaskId s : remote) {
      if (g_.rank_of(s) != to)
        return NotRunnable(g_, t, "is one send with successors on two ranks");
    }
    const auto [it, added] =
        edges.try_emplace({g_.rank_of(t), to}, static_cast<int32_t>(out_.edges.size()));
    if (added) out_.edges.push_back({g_.rank_of(t), to});
    edge_of_send_[t] = it->second;
  }
  for (int32_t e = 0; e < static_cast<int32_t>(out_.edges.size()); ++e) {
    if (out_.edges[e].from == rank_) out_.send_edges.push_back(e);
    if (out_.edges[e].to == rank_) out_.receive_edges.push_back(e);
  }
  return Status::Ok();
}

// One receive stream per edge into this rank; its receives in the order the sender issues the
// sends on its stream (which must be one stream, or the order on the edge's communicator would be
// two streams' interleaving).
Status ProgramBuilder::AddReceives() {
  for (int32_t e : out_.receive_edges) {
    const int32_t stream = static_cast<int32_t>(out_.streams.size());
    out_.streams.push_back(-1);
    const RankProgram& sender = exec_.ranks()[out_.edges[e].from];
    StreamId send_stream = -1;
    for (size_t s = 0; s < sender.streams.size(); ++s) {
      for (TaskId t : sender.stream_tasks[s]) {
        const auto edge = edge_of_send_.find(t);
        if (edge == edge_of_send_.end() || edge->second != e) continue;
        if (send_stream != -1 && send_stream != sender.streams[s]) {
          return NotRunnable(g_, t,
                             "sends to rank " + std::to_string(rank_) + " from a second stream");
        }
        send_stream = sender.streams[s];
        receive_of_send_[t] = static_cast<int32_t>(out_.receives.size());
        const int64_t bytes = SendBytes(t);
        out_.receives.push_back({out_.edges[e].from, t, stream, e, bytes});
        out_.largest_transfer_bytes = std::max(out_.largest_transfer_bytes, bytes);
      }
    }
  }
  return Status::Ok();
}

// The rank's tasks in an order the host can enqueue them: each stream's tasks in stream order,
// and each task after the tasks of other streams it waits for (Kahn's algorithm, lowest task id
// first among the ready ones). Its waits and receives come with it.
Status ProgramBuilder::Order() {
  const RankProgram& program = exec_.ranks()[rank_];
  std::map<TaskId, std::pair<int32_t, size_t>> position;  // task -> (stream index, position in it)
  for (size_t s = 0; s < program.streams.size(); ++s) {
    for (size_t i = 0; i < program.stream_tasks[s].size(); ++i)
      position[program.stream_tasks[s][i]] = {s, i};
  }
  std::map<TaskId, int32_t> pending;  // waits not yet enqueued: stream predecessor plus local waits
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
  for (const auto& [task, at] : position) {
    pending[task] = (at.second > 0 ? 1 : 0) + exec_.local_waits(task);
    if (pending[task] == 0) ready.push(task);
  }
  std::map<TaskId, std::vector<int32_t>> waits;
  index_of_.assign(static_cast<size_t>(g_.num_tasks()), -1);
  const auto release = [&](TaskId task) {
    if (--pending[task] == 0) ready.push(task);
  };
  while (!ready.empty()) {
    const TaskId task = ready.top();
    ready.pop();
    const auto [stream, at] = position[task];
    index_of_[task] = static_cast<int32_t>(out_.tasks.size());
    DeviceTask& d = out_.tasks.emplace_back();
    d.task = task;
    d.stream = static_cast<int32_t>(stream);
    d.waits = std::move(waits[task]);
    if (at + 1 < program.stream_tasks[stream].size()) release(program.stream_tasks[stream][at + 1]);
    for (TaskId next : exec_.local_successors(task)) {
      waits[next].push_back(index_of_[task]);
      release(next);
    }
  }
  if (out_.tasks.size() != position.size()) {
    return Status::Internal("rank " + std::to_string(rank_) +
                            "'s tasks wait for each other in a cycle that "
                            "PlanExecution did not refuse");
  }
  // Each task that depends on a send to this rank waits for its receive.
  for (const auto& [send, receive] : receive_of_send_) {
    for (TaskId next : exec_.remote_successors(send))
      out_.tasks[index_of_[next]].receives.push_back(receive);
  }
  return Status::Ok();
}

Status ProgramBuilder::SetWork(DeviceTask& d) {
  const TaskWork& work = plan_.step.work[d.task];
  const StepPayloads& payloads = plan_.workload.payloads;
  const GroupId group = g_.group_of(d.task);
  const auto run = [&](std::vector<CollectiveShape> collectives) {
    // A group of one GPU moves nothing (one replica, one context rank); an empty share is nothing.
    if (group == kNoGroup || collectives.empty()) return Status::Ok();
    d.work = DeviceWork::kCollective;
    d.communicator = exec_.communicator_of(group);
    for (const CollectiveShape& c : collectives) {
      out_.largest_transfer_bytes = std::max(out_.largest_transfer_bytes, c.bytes);
    }
    d.collectives = std::move(collectives);
    return Status::Ok();
  };
  // A gradient bucket or weight all-gather: its dense share, its experts' share, or (folded) both.
  const auto data_parallel = [&](CollectiveKind kind, int64_t dense, int64_t experts) -> Status {
    const bool expert_share = work.group == static_cast<int32_t>(UnfoldedGroup::kEdp);
    if (work.group < 0 && experts > 0) {
      return NotRunnable(g_, d.task,
                         "moves dense and routed experts' gradients or weights as one task (a "
                         "plan not unfolded to its GPUs)");
    }
    return run({{kind, CommGroup::kDp, expert_share ? experts : dense}});
  };
  const bool communication =
      work.kind == WorkKind::kTpComm || work.kind == WorkKind::kRingSend ||
      work.kind == WorkKind::kTransfer || work.kind == WorkKind::kGradReduce ||
      work.kind == WorkKind::kParamGather || work.kind == WorkKind::kLayerGather ||
      work.kind == WorkKind::kOffload;
  if (stand_ins_ && communication) {
    d.work = DeviceWork::kStandIn;
    d.stand_in = g_.task(d.task).duration;
    return Status::Ok();
  }
  switch (work.kind) {
    case WorkKind::kNone:
      return Status::Ok();
    case WorkKind::kPass: {
      d.work = DeviceWork::kOps;
      // The pass's collectives run on its collectives tasks (tp, cp, ep, etp) or as ring sends.
      const PassOps all = OpsOfPass(plan_.workload, work);
      for (size_t i = 0; i < all.ops.size(); ++i) {
        if (all.ops[i]->kind == OpKind::kCollective) continue;
        d.ops.ops.push_back(all.ops[i]);
        d.ops.predicted.push_back(all.predicted[i]);
      }
      return Status::Ok();
    }
    case WorkKind::kTpComm: {
      if (work.group < 0) {
        return NotRunnable(g_, d.task,
                           "runs a pass's collectives folded over its tensor-parallel group (a "
                           "plan not unfolded to its GPUs: UnfoldPlan)");
      }
      // This part's own collectives on the task's group, in pass order.
      const CommGroup on = CommGroupOf(static_cast<UnfoldedGroup>(work.group));
      std::vector<CollectiveShape> collectives;
      for (const Op* op : OpsOfPass(plan_.workload, work).ops) {
        if (op->kind != OpKind::kCollective) continue;
        const CollectiveShape& shape = std::get<CollectiveShape>(op->shape);
        if (shape.group == on && !(ring_ && on == CommGroup::kCp)) collectives.push_back(shape);
      }
      return run(std::move(collectives));
    }
    case WorkKind::kTransfer:
    case WorkKind::kRingSend: {
      const auto edge = edge_of_send_.find(d.task);
      if (edge == edge_of_send_.end()) {
        return NotRunnable(g_, d.task, "sends to no other GPU of the plan (a GPU's program alone)");
      }
      d.work = DeviceWork::kSend;
      d.edge = edge->second;
      d.peer = out_.edges[d.edge].to;
      d.bytes = SendBytes(d.task);
      out_.largest_transfer_bytes = std::max(out_.largest_transfer_bytes, d.bytes);
      return Status::Ok();
    }
    case WorkKind::kGradReduce:
      return data_parallel(payloads.grad_reduce, payloads.bucket_bytes[work.index],
                           payloads.expert_bucket_bytes[work.index]);
    case WorkKind::kParamGather:
      return data_parallel(CollectiveKind::kAllGather,
                           payloads.param_gather_bytes[work.index] / work.parts,
                           payloads.expert_param_gather_bytes[work.index] / work.parts);
    case WorkKind::kOptimizer:
      d.work = DeviceWork::kOptimizer;
      d.traffic = payloads.optimizer[work.index];
      return Status::Ok();
    case WorkKind::kLayerGather:
      // ZeRO-3's all-gather of one layer's weights: its output is the gathered weights the task
      // allocates (nccl-tests' all_gather size is the output).
      if (work.group < 0 && group != kNoGroup) {
        return NotRunnable(g_, d.task, "gathers weights across replicas of a plan not unfolded");
      }
      return run({{CollectiveKind::kAllGather, CommGroup::kDp, g_.task(d.task).alloc_at_start_bytes}});
    case WorkKind::kOffload:
    case WorkKind::kHost:
      break;
  }
  return NotRunnable(g_, d.task, "is " + std::string(kWorkKindNames.Name(work.kind)));
}

// Allocations at start and frees at end, on the task's stream. Allocations are on the compute
// stream, where every pass allocates its activations, so that the stream-ordered allocator takes
// them in the order they run, or are a ZeRO-3 gather's buffer on its own stream (one pool, in that
// stream's order); a free may be on another stream (the tp stream frees what a pass kept once its
// collectives end, the compute stream a layer's gathered weights), which returns the memory when
// that stream gets there.
Status ProgramBuilder::SetMemory() {
  const StreamId compute = plan_.step.compute_stream[rank_];
  const auto add = [&](TaskId task, MemoryPhase phase, PoolId pool, int64_t delta) -> Status {
    if (delta == 0) return Status::Ok();
    DeviceTask& d = out_.tasks[index_of_[task]];
    if (g_.task(task).stream != compute && delta > 0 &&
        plan_.step.work[task].kind != WorkKind::kLayerGather) {
      return NotRunnable(g_, task, "allocates memory off its rank's compute stream");
    }
    if ((phase == MemoryPhase::kAtStart) != (delta > 0)) {
      return NotRunnable(g_, task, "frees memory when it starts or allocates when it ends");
    }
    auto& list = phase == MemoryPhase::kAtStart ? d.alloc_at_start : d.free_at_end;
    list.emplace_back(pool, delta > 0 ? delta : -delta);
    return Status::Ok();
  };
  for (const DeviceTask& d : out_.tasks) {
    const Task& t = g_.task(d.task);
    LOOM_RETURN_IF_ERROR(add(d.task, MemoryPhase::kAtStart, t.pool, t.alloc_at_start_bytes));
    LOOM_RETURN_IF_ERROR(add(d.task, MemoryPhase::kAtEnd, t.pool, -t.free_at_end_bytes));
  }
  for (const MemoryEvent& e : g_.memory_events()) {
    if (g_.rank_of(e.task) == rank_)
      LOOM_RETURN_IF_ERROR(add(e.task, e.phase, e.pool, e.delta_bytes));
  }
  return Status::Ok();
}

Result<DeviceProgram> ProgramBuilder::Build() {
  if (plan_.step.work.size() != static_cast<size_t>(g_.num_tasks())) {
    return Status::InvalidArgument(
        plan_.file +
        ": the plan does not say what its tasks run; write it again with "
        "`loom plan ... --emit plan`");
  }
  out_.rank = rank_;
  out_.streams = exec_.ranks()[rank_].streams;
  for (const TaskWork& work : plan_.step.work) ring_ = ring_ || work.kind == WorkKind::kRingSend;
  LOOM_RETURN_IF_ERROR(FindEdges());
  LOOM_RETURN_IF_ERROR(AddReceives());
  LOOM_RETURN_IF_ERROR(Order());
  std::set<const Op*> seen;
  for (DeviceTask& d : out_.tasks) {
    LOOM_RETURN_IF_ERROR(SetWork(d));
    for (const Op* op : d.ops.ops) {
      if (seen.insert(op).second) out_.ops.push_back(*op);
    }
  }
  LOOM_RETURN_IF_ERROR(SetMemory());
  for (const MemoryBaseline& b : plan_.baselines) {
    if (b.rank == rank_) out_.baseline_bytes += b.bytes;
  }
  return std::move(out_);
}

}  // namespace

int32_t OpClass(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
      return 0;
    case OpKind::kAttention:
      return 1;
    case OpKind::kMemoryBound:
      return 2;
    case OpKind::kCollective:
      break;
  }
  return -1;
}

int32_t TaskClass(const DeviceTask& task) {
  switch (task.work) {
    case DeviceWork::kSend:
      return 3;
    case DeviceWork::kCollective: {
      if (task.collectives.empty()) break;
      const CollectiveShape& first = task.collectives.front();
      switch (first.group) {
        case CommGroup::kTp:
        case CommGroup::kEtp:
          return 8;
        case CommGroup::kCp:
          return 9;
        case CommGroup::kEp:
          return 10;
        case CommGroup::kDp:
          break;
      }
      return first.kind == CollectiveKind::kAllReduce       ? 4
             : first.kind == CollectiveKind::kReduceScatter ? 5
             : first.kind == CollectiveKind::kAllGather     ? 6
                                                            : -1;
    }
    case DeviceWork::kOptimizer:
      return 7;
    case DeviceWork::kStandIn:
      return 11;
    case DeviceWork::kNothing:
    case DeviceWork::kOps:
      break;
  }
  return -1;
}

Result<DeviceProgram> BuildDeviceProgram(const PlanFile& plan, const ExecPlan& exec, int32_t rank,
                                         bool stand_ins) {
  return ProgramBuilder(plan, exec, rank, stand_ins).Build();
}

}  // namespace loom
