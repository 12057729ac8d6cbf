#include "sim/step_builder_internal.h"

#include <algorithm>
#include <vector>

namespace loom::step_builder_internal {

// --overlap-param-gather: the all-gathers of the stage's chunks, bucket by bucket, first on its dp
// stream (Megatron-LM dispatches them all at once and each module's forward pre-hook waits for its
// bucket: megatron/core/distributed/param_and_grad_buffer.py).
void Builder::AddParamGathersAtStart(int32_t rank, int32_t stage) {
  start_gathers_.emplace_back(static_cast<size_t>(schedule_.chunks));
  if (!config_.dp.overlap_param_gather || config_.dp.param_gather_time[stage] <= SimTime()) return;
  const int64_t per_chunk = config_.dp.param_gather_time[stage].nanos() / schedule_.chunks;
  int32_t parts = 0;
  for (int32_t chunk = 0; chunk < schedule_.chunks; ++chunk) {
    parts += config_.dp.buckets.empty()
                 ? 1
                 : std::max(1, config_.dp.buckets[schedule_.VirtualStage(stage, chunk)]);
  }
  int32_t part = 0;
  for (int32_t chunk = 0; chunk < schedule_.chunks; ++chunk) {
    const int32_t v = schedule_.VirtualStage(stage, chunk);
    const int32_t buckets = config_.dp.buckets.empty() ? 1 : std::max(1, config_.dp.buckets[v]);
    for (int32_t bucket = 0; bucket < buckets; ++bucket) {
      Task gather{.stream = dp_stream_[rank],
                  .duration = SimTime::FromNanos(per_chunk / buckets),
                  .name = param_gather_name_,
                  .category = step_.dp_category,
                  .route = DuplexRoute(rank, config_.fabrics.dp)};
      start_gathers_.back()[chunk].push_back(
          Add(gather, {WorkKind::kParamGather, Pass::kF, stage, part++, parts}));
    }
  }
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
    const SimTime to_host_slice =
        config_.offload.grad_to_host.empty()
            ? SimTime()
            : SimTime::FromNanos(config_.offload.grad_to_host[stage].nanos() /
                                 std::max<int64_t>(1, stage_buckets));
    for (int32_t chunk = 0; chunk < schedule_.chunks && !config_.dp.buckets.empty(); ++chunk) {
      const int32_t v = schedule_.VirtualStage(stage, chunk);
      // Every replica cut the same passes into the same segments: segment i of each is one bucket.
      const size_t buckets = bucket_segments_[v].size();
      for (size_t bucket = 0; bucket < buckets; ++bucket) {
        std::vector<TaskId> members;
        for (int32_t replica = 0; replica < config_.replicas; ++replica) {
          const int32_t rank = Rank(replica, stage);
          Task task{.stream = dp_stream_[rank],
                    .duration = config_.dp.bucket_time[v],
                    .name = reduce,
                    .category = step_.dp_category,
                    .route = DuplexRoute(rank, config_.fabrics.dp)};
          TaskId id = Add(task, {WorkKind::kGradReduce, Pass::kW, v, static_cast<int32_t>(bucket),
                                 static_cast<int32_t>(buckets)});
          const size_t at = static_cast<size_t>(replica) * v_count + v;
          g.AddDependency(bucket_segments_[at][bucket], id);
          // A synchronous fetch's next issue waits for every stream (torch.cuda.synchronize()),
          // this reduction too when it runs as the backward goes.
          const auto next = issue_after_.find(bucket_segments_[at][bucket]);
          if (config_.dp.overlap_grad_reduce && next != issue_after_.end()) {
            g.AddDependency(id, next->second);
          }
          // Without overlap, a step's one reduction waits for the stage's last backward
          // (finalize_model_grads); a per-micro-batch one for the end of its own pass.
          if (!config_.dp.overlap_grad_reduce) {
            g.AddDependency(config_.dp.reduce_every_micro_batch ? bucket_pass_end_[at][bucket]
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

// The optimizer step of |stage| after its gradient reductions, then, unless they run at the
// start of the step, the all-gathers of the updated weights.
void Builder::AddOptimizer(int32_t stage, NameId name,
                           const std::vector<std::vector<TaskId>>& reductions) {
  TaskGraph& g = step_.graph;
  std::vector<TaskId> gathers;
  for (int32_t replica = 0; replica < config_.replicas; ++replica) {
    const int32_t rank = Rank(replica, stage);
    Task opt{.stream = step_.compute_stream[rank],
             .duration = config_.dp.optimizer_time[stage],
             .name = name,
             .category = step_.optimizer_category};
    TaskId opt_id =
        Add(opt, {WorkKind::kOptimizer, Pass::kW,
                  stage});  // reassigned below to what the weights' all-gather waits for
    if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], opt_id);
    for (TaskId t : reductions[replica]) g.AddDependency(t, opt_id);
    if (config_.host.enabled) {
      const TaskId issue = Add({.stream = step_.host_stream[rank],
                                .duration = config_.host.optimizer_lead[stage],
                                .name = name,
                                .category = step_.host_category},
                               {WorkKind::kHost, Pass::kW, stage});
      g.AddDependency(issue, opt_id);
      if (config_.host.sync_before_optimizer) {
        for (TaskId t : reductions[replica]) g.AddDependency(t, issue);
        if (latest_pass_[rank] != kNone) g.AddDependency(latest_pass_[rank], issue);
        if (pending_tp_[rank] != kNone) g.AddDependency(pending_tp_[rank], issue);
      }
    }
    if (config_.host.enabled && config_.zero3.post_step_host_time > SimTime()) {
      const TaskId gather = Add({.stream = step_.host_stream[rank],
                                 .duration = config_.zero3.post_step_host_time,
                                 .name = g.Intern("zero-3 persistent gather"),
                                 .category = step_.host_category},
                                {WorkKind::kHost, Pass::kW, stage});
      g.AddDependency(opt_id, gather);
    }
    if (!config_.offload.grad_to_host.empty()) opt_id = AddCpuStep(stage, rank, opt_id);
    if (config_.dp.param_gather_time[stage] > SimTime() && !config_.dp.overlap_param_gather) {
      Task all_gather{.stream = dp_stream_[rank],
                      .duration = config_.dp.param_gather_time[stage],
                      .name = param_gather_name_,
                      .category = step_.dp_category,
                      .route = DuplexRoute(rank, config_.fabrics.dp)};
      TaskId ag = Add(all_gather, {WorkKind::kParamGather, Pass::kF, stage});
      g.AddDependency(opt_id, ag);
      gathers.push_back(ag);
    }
  }
  if (config_.replicas > 1 && gathers.size() > 1) g.AddCollective(gathers);
}

}  // namespace loom::step_builder_internal
