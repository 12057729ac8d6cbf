#include "sim/step_builder_internal.h"

#include <algorithm>
#include <array>
#include <vector>

namespace loom::step_builder_internal {

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
      AddMicroBatchHost(rank, v);
      // The chunk's first forward runs bucket by bucket behind its weights' all-gathers.
      const std::vector<TaskId>* waits =
          forwarded[item.chunk] ? nullptr : &start_gathers_[rank][item.chunk];
      const int32_t segments = std::max(
          {1, config_.zero3.layer_gathers, waits ? static_cast<int32_t>(waits->size()) : 1});
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

// The training script's host work for the micro-batch whose forward of virtual stage |v| comes
// next on |rank| (HostConfig::microbatch_lead), on the host stream before that pass's issue, after
// the GPU has finished the rank's previous pass where the script synchronises.
void Builder::AddMicroBatchHost(int32_t rank, int32_t v) {
  const HostConfig& host = config_.host;
  if (!host.enabled || (host.microbatch_lead.empty() && !host.sync_per_micro_batch)) return;
  const SimTime lead = host.microbatch_lead.empty() ? SimTime() : host.microbatch_lead[v];
  const TaskId batch = Add({.stream = step_.host_stream[rank],
                            .duration = lead,
                            .name = batch_name_,
                            .category = step_.host_category},
                           {WorkKind::kHost, Pass::kF, v});
  if (!host.sync_per_micro_batch) return;
  if (latest_pass_[rank] != kNone) step_.graph.AddDependency(latest_pass_[rank], batch);
  if (pending_tp_[rank] != kNone) step_.graph.AddDependency(pending_tp_[rank], batch);
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
  const int32_t layer_segments = std::max(1, config_.zero3.layer_gathers);
  if (item.pass == Pass::kB) {
    ids.b(v, mb) = AddSegmentedPass(rank, pass_names_[v_count + v], {WorkKind::kPass, Pass::kB, v},
                                    cost.backward_input, layer_segments, true, {}, {},
                                    cost.recompute_activation_bytes, nullptr);
    return;
  }
  PassCost pass = cost.backward_weight;
  if (item.pass == Pass::kBW) pass = BackwardPass(cost);
  const NameId name = pass_names_[(item.pass == Pass::kW ? 2 : 3) * v_count + v];
  const int64_t recompute = item.pass == Pass::kBW ? cost.recompute_activation_bytes : 0;
  const bool reduces =
      !config_.dp.buckets.empty() && (last_of_chunk || config_.dp.reduce_every_micro_batch);
  int32_t segments = reduces ? std::max(1, config_.dp.buckets[v]) : 1;
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

RouteId Builder::SendRoute(int32_t from_rank, int32_t to_rank) {
  if (config_.fabrics.pp == Fabric::kNone) return kNoRoute;
  const auto [it, added] = send_routes_.try_emplace({from_rank, to_rank}, kNoRoute);
  if (added) {
    const std::vector<Port>& ports =
        config_.fabrics.pp == Fabric::kIntraNode ? step_.intra_node_port : step_.inter_node_port;
    const std::array<ChannelId, 2> channels = {ports[from_rank].tx, ports[to_rank].rx};
    it->second = step_.graph.AddRoute(channels);
  }
  return it->second;
}

TaskId Builder::Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before,
                         TaskId after) {
  Task task;
  task.stream = pp_stream_[Rank(replica, from_stage)];
  // No link orders the sends: the sender's pp stream sends one at a time already.
  task.route = SendRoute(Rank(replica, from_stage), Rank(replica, to_stage));
  task.duration = config_.pipeline.p2p_time;
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
  if (auto next = next_pass_.find(before);
      config_.pipeline.blocking_sends && next != next_pass_.end()) {
    step_.graph.AddDependency(id, next->second);
    // The host synchronises after the send before it issues the sender's next pass.
    if (config_.host.sync_after_p2p) HostWaitsFor(id, next->second);
  }
  // And after the receive before it issues the pass that reads it.
  if (config_.host.sync_after_p2p && config_.pipeline.blocking_sends) HostWaitsFor(id, after);
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

}  // namespace loom::step_builder_internal
