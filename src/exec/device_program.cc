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
    "the cuda backend runs plans whose ranks are one GPU each (tp = cp = ep = 1) without ring "
    "attention, "
    "ZeRO-3 or offload; validate this plan with --backend host";

Status NotRunnable(const TaskGraph& g, TaskId task, const std::string& what) {
  return Status::Unimplemented("task " + g.DescribeTask(task) + " " + what + "; " + kSupported);
}

// Builds a DeviceProgram step by step; each step may fail.
class ProgramBuilder {
 public:
  ProgramBuilder(const PlanFile& plan, const ExecPlan& exec, int32_t rank)
      : plan_(plan), exec_(exec), g_(plan.step.graph), rank_(rank) {}

  Result<DeviceProgram> Build();

 private:
  Status FindEdges();
  Status AddReceives();
  Status Order();
  Status SetWork(DeviceTask& task);
  Status SetMemory();

  const PlanFile& plan_;
  const ExecPlan& exec_;
  const TaskGraph& g_;
  const int32_t rank_;
  DeviceProgram out_;
  std::map<TaskId, int32_t> receive_of_send_;  // a send to this rank -> its receive
  std::map<TaskId, int32_t> edge_of_send_;     // every send of the step -> its edge
  std::vector<int32_t> index_of_;              // task id -> DeviceTask index (-1: other rank)
};

// Every send of the step, and the edge (sender, receiver) it travels; the edges in the order of
// their first send's task id, which every rank computes alike. A dependency between ranks must
// leave a send (the step graph's transfers), and a send has one receiver.
Status ProgramBuilder::FindEdges() {
  std::map<std::pair<int32_t, int32_t>, int32_t> edges;
  for (TaskId t = 0; t < g_.num_tasks(); ++t) {
    const std::span<const TaskId> remote = exec_.remote_successors(t);
    if (remote.empty()) continue;
    if (plan_.step.work[t].kind != WorkKind::kTransfer) {
      return NotRunnable(
          g_, t, "has successors on another rank but is not a send between pipeline stages");
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
        out_.receives.push_back(
            {out_.edges[e].from, t, stream, e, plan_.workload.payloads.p2p_bytes});
        out_.largest_transfer_bytes =
            std::max(out_.largest_transfer_bytes, plan_.workload.payloads.p2p_bytes);
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
  const auto collective = [&](CollectiveKind kind, int64_t bytes, int64_t expert_bytes) -> Status {
    if (expert_bytes > 0) {
      return NotRunnable(
          g_, d.task, "moves routed experts' gradients or weights over expert-data-parallel ranks");
    }
    if (group == kNoGroup) return Status::Ok();  // one replica: nothing to reduce or gather
    d.work = DeviceWork::kCollective;
    d.collective = kind;
    d.communicator = exec_.communicator_of(group);
    d.bytes = bytes;
    out_.largest_transfer_bytes = std::max(out_.largest_transfer_bytes, bytes);
    return Status::Ok();
  };
  switch (work.kind) {
    case WorkKind::kNone:
      return Status::Ok();
    case WorkKind::kPass:
      d.work = DeviceWork::kOps;
      d.ops = OpsOfPass(plan_.workload, work);
      for (const Op* op : d.ops.ops) {
        if (op->kind == OpKind::kCollective) {
          return NotRunnable(g_, d.task,
                             "runs the collective " + std::string(OpNameString(op->name)));
        }
      }
      return Status::Ok();
    case WorkKind::kTransfer:
      d.work = DeviceWork::kSend;
      d.edge = edge_of_send_.at(d.task);
      d.peer = out_.edges[d.edge].to;
      d.bytes = payloads.p2p_bytes;
      out_.largest_transfer_bytes = std::max(out_.largest_transfer_bytes, d.bytes);
      return Status::Ok();
    case WorkKind::kGradReduce:
      return collective(payloads.grad_reduce, payloads.bucket_bytes[work.index],
                        payloads.expert_bucket_bytes[work.index]);
    case WorkKind::kParamGather:
      return collective(CollectiveKind::kAllGather,
                        payloads.param_gather_bytes[work.index] / work.parts,
                        payloads.expert_param_gather_bytes[work.index]);
    case WorkKind::kOptimizer:
      d.work = DeviceWork::kOptimizer;
      d.traffic = payloads.optimizer[work.index];
      return Status::Ok();
    case WorkKind::kTpComm:
    case WorkKind::kRingSend:
    case WorkKind::kLayerGather:
    case WorkKind::kOffload:
    case WorkKind::kHost:
      break;
  }
  return NotRunnable(g_, d.task, "is " + std::string(kWorkKindNames.Name(work.kind)));
}

// Allocations at start and frees at end, on the task's stream; the stream-ordered allocator
// accounts them in that stream's order, which is the order they run in only on one stream: the
// compute stream, where every pass allocates and frees its activations.
Status ProgramBuilder::SetMemory() {
  const StreamId compute = plan_.step.compute_stream[rank_];
  const auto add = [&](TaskId task, MemoryPhase phase, PoolId pool, int64_t delta) -> Status {
    if (delta == 0) return Status::Ok();
    DeviceTask& d = out_.tasks[index_of_[task]];
    if (g_.task(task).stream != compute) {
      return NotRunnable(g_, task, "allocates or frees memory off its rank's compute stream");
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
    case DeviceWork::kCollective:
      return task.collective == CollectiveKind::kAllReduce       ? 4
             : task.collective == CollectiveKind::kReduceScatter ? 5
             : task.collective == CollectiveKind::kAllGather     ? 6
                                                                 : -1;
    case DeviceWork::kOptimizer:
      return 7;
    case DeviceWork::kNothing:
    case DeviceWork::kOps:
      break;
  }
  return -1;
}

Result<DeviceProgram> BuildDeviceProgram(const PlanFile& plan, const ExecPlan& exec, int32_t rank) {
  return ProgramBuilder(plan, exec, rank).Build();
}

}  // namespace loom
