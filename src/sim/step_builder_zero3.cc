#include "sim/step_builder_internal.h"

namespace loom::step_builder_internal {

namespace {

SimTime Scaled(SimTime t, double times) {
  return SimTime::FromNanos(static_cast<int64_t>(static_cast<double>(t.nanos()) * times));
}

}  // namespace

// The gather of one segment's weights on the rank's gather stream, |duration| in all; it holds the
// weights from its start until the segment that uses it ends. The unprefetched share of it
// (ZeroThreeConfig::unprefetched_share) runs as a second task after |rest_after| (when given).
// Returns the first task and the one the segment waits for.
PassTasks Builder::AddWeightGather(int32_t rank, SimTime duration, TaskId rest_after) {
  const ZeroThreeConfig& z = config_.zero3;
  const SimTime blocking = Scaled(duration, z.unprefetched_share);
  Task gather{.stream = gather_stream_[rank],
              .duration = duration - blocking,
              .name = param_gather_name_,
              .category = step_.dp_category,
              .alloc_at_start_bytes = z.layer_gather_bytes,
              .pool = step_.gathered_weights,
              .route = DuplexRoute(rank, config_.fabrics.dp)};
  PassTasks tasks;
  tasks.first = tasks.last = Add(gather, {WorkKind::kLayerGather});
  if (blocking <= SimTime()) return tasks;
  // What could not be prefetched is gathered once the segment before has ended.
  tasks.last = Add({.stream = gather_stream_[rank],
                    .duration = blocking,
                    .name = param_gather_name_,
                    .category = step_.dp_category,
                    .route = DuplexRoute(rank, config_.fabrics.dp)},
                   {WorkKind::kLayerGather});
  if (rest_after != kNone) step_.graph.AddDependency(rest_after, tasks.last);
  return tasks;
}

// A ZeRO-3 layer gather, one segment ahead (AddWeightGather). A backward's gather takes
// backward_gathers times as long; with the host thread, the host issues it first
// (gather_issue_time, and in a backward the previous segment's reduction, reduce_issue_time),
// without waiting for the GPU.
TaskId Builder::AddLayerGather(int32_t rank, Pass pass) {
  const ZeroThreeConfig& z = config_.zero3;
  const bool backward = pass != Pass::kF;
  const double times = backward ? z.backward_gathers : 1.0;
  const std::vector<TaskId>& users = gather_users_[rank];
  const PassTasks gather = AddWeightGather(rank, Scaled(z.layer_gather_time, times),
                                           users.empty() ? kNone : users.back());
  const TaskId id = gather.first;
  if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], id);
  const SimTime issue_time =
      Scaled(z.gather_issue_time, times) + (backward ? z.reduce_issue_time : SimTime());
  if (config_.host.enabled && issue_time > SimTime()) {
    step_.graph.AddDependency(AddFetchIssue(rank, issue_time, pass), id);
  }
  if (z.layer_fetch_time > SimTime()) {
    Task fetch{.stream = pcie_stream_[rank],
               .duration = z.layer_fetch_time,
               .name = fetch_name_,
               .category = step_.offload_category};
    const TaskId fetched = Add(fetch, {WorkKind::kOffload});
    if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], fetched);
    step_.graph.AddDependency(fetched, id);
  }
  return gather.last;
}

// ZeroThreeConfig::synchronous_fetch: the gather a segment waits for, issued by the host after
// the segment before it (or, for the step's first, by an issue of its own), and the host's issue of
// the next gather, which waits for this gather and for every GPU task before it
// (torch.cuda.synchronize()); the segment's kernels follow that issue on the host stream.
TaskId Builder::AddSynchronousFetch(int32_t rank, Pass pass) {
  TaskGraph& g = step_.graph;
  const ZeroThreeConfig& z = config_.zero3;
  const bool backward = pass != Pass::kF;
  const double times = backward ? z.backward_gathers : 1.0;
  TaskId issued_by = last_issue_[rank];
  if (issued_by == kNone) issued_by = AddFetchIssue(rank, Scaled(z.gather_issue_time, times), pass);
  const PassTasks gather =
      AddWeightGather(rank, Scaled(z.layer_gather_time, times), latest_pass_[rank]);
  g.AddDependency(issued_by, gather.first);
  const TaskId issue = AddFetchIssue(
      rank, Scaled(z.gather_issue_time, times) + (backward ? z.reduce_issue_time : SimTime()),
      pass);
  g.AddDependency(gather.last, issue);
  if (latest_pass_[rank] != kNone) g.AddDependency(latest_pass_[rank], issue);
  if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], issue);
  if (!gather_users_[rank].empty()) issue_after_[gather_users_[rank].back()] = issue;
  last_issue_[rank] = issue;
  return gather.first;
}

// The host's issue of a synchronous gather (and reduction): host time, on the host stream.
TaskId Builder::AddFetchIssue(int32_t rank, SimTime duration, Pass pass) {
  return Add({.stream = step_.host_stream[rank],
              .duration = duration,
              .name = fetch_issue_name_,
              .category = step_.host_category},
             {WorkKind::kHost, pass});
}

// With optimizer offload, the copy of |reduction|'s gradient |slice| to the host, on the rank's
// PCIe stream (what the optimizer then waits for); otherwise |reduction| itself.
TaskId Builder::OffloadBucket(int32_t rank, SimTime slice, TaskId reduction) {
  if (config_.offload.grad_to_host.empty()) return reduction;
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
           .duration = config_.offload.cpu_step[stage],
           .name = g.Intern("cpu optimizer"),
           .category = step_.optimizer_category};
  const TaskId step = Add(cpu, {WorkKind::kOffload});
  g.AddDependency(after, step);
  Task copy{.stream = pcie_stream_[rank],
            .duration = config_.offload.params_to_gpu[stage],
            .name = fetch_name_,
            .category = step_.offload_category};
  const TaskId back = Add(copy, {WorkKind::kOffload});
  g.AddDependency(step, back);
  return back;
}

}  // namespace loom::step_builder_internal
