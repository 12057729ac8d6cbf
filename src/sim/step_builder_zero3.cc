#include "sim/step_builder_internal.h"

namespace loom::step_builder_internal {

// A ZeRO-3 layer gather on the rank's gather stream; it holds the layer's weights from its start
// until the segment that uses it ends.
TaskId Builder::AddLayerGather(int32_t rank) {
  Task gather{.stream = gather_stream_[rank],
              .duration = config_.zero3.layer_gather_time,
              .name = param_gather_name_,
              .category = step_.dp_category,
              .alloc_at_start_bytes = config_.zero3.layer_gather_bytes,
              .pool = step_.gathered_weights,
              .route = DuplexRoute(rank, config_.fabrics.dp)};
  const TaskId id = Add(gather, {WorkKind::kLayerGather});
  const std::vector<TaskId>& users = gather_users_[rank];
  if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], id);
  if (config_.zero3.layer_fetch_time > SimTime()) {
    Task fetch{.stream = pcie_stream_[rank],
               .duration = config_.zero3.layer_fetch_time,
               .name = fetch_name_,
               .category = step_.offload_category};
    const TaskId fetched = Add(fetch, {WorkKind::kOffload});
    if (users.size() >= 2) step_.graph.AddDependency(users[users.size() - 2], fetched);
    step_.graph.AddDependency(fetched, id);
  }
  return id;
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
