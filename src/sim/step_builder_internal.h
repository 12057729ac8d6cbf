#ifndef LOOM_SIM_STEP_BUILDER_INTERNAL_H_
#define LOOM_SIM_STEP_BUILDER_INTERNAL_H_

// The builder behind BuildStepGraph (step_builder.h), shared by its files, one per feature:
// step_builder.cc (the graph, ranks, ports and passes), step_builder_pipeline.cc (each stage's
// order and the sends between stages), step_builder_data_parallel.cc (gradient buckets, optimizer,
// weight all-gathers) and step_builder_zero3.cc (ZeRO-3 layer gathers and ZeRO-Offload). Not for
// use outside them.

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/step_builder.h"

namespace loom::step_builder_internal {

inline constexpr TaskId kNone = -1;

// Bytes a forward keeps for its backward, by pool.
struct KeptBytes {
  int64_t activations = 0;
  int64_t logits = 0;
};

inline KeptBytes KeptBy(const ChunkCost& cost) {
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

// Builds one StepGraph from a schedule, its chunk costs and a config (BuildStepGraph); one Build()
// per builder.
class Builder {
 public:
  Builder(const PipelineSchedule& schedule, const std::vector<ChunkCost>& costs,
          const StepGraphConfig& config)
      : schedule_(schedule), costs_(costs), config_(config) {}

  StepGraph Build();

 private:
  // The graph, its ranks and ports, and the passes (step_builder.cc).
  void AddRank(int32_t rank);
  void AddPorts(int32_t rank);
  RouteId DuplexRoute(int32_t rank, Fabric fabric) const {
    return duplex_routes_[rank][static_cast<size_t>(fabric)];
  }
  // Adds |task| and records what it runs.
  TaskId Add(const Task& task, TaskWork work);
  PassTasks AddPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost, KeptBytes alloc,
                    KeptBytes free, int64_t recompute_bytes = 0);
  PassTasks AddKernels(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                       KeptBytes free);
  void FreeKept(TaskId task, KeptBytes free);
  PassTasks AddSegmentedPass(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                             int32_t segments, bool reads_weights, KeptBytes alloc, KeptBytes free,
                             int64_t recompute_bytes, std::vector<TaskId>* segment_ends,
                             const std::vector<TaskId>* waits = nullptr);
  void AddHostIssue(int32_t rank, NameId name, TaskWork work, const PassCost& cost,
                    TaskId gpu_first);
  void HostWaitsFor(TaskId gpu_task, TaskId pass_first);
  void SetSmUse();
  int32_t Rank(int32_t replica, int32_t stage) const { return replica * schedule_.stages + stage; }

  // The schedule's order on each stage and the sends between stages (step_builder_pipeline.cc).
  void AddPasses(int32_t replica, int32_t stage, PassIds& ids);
  void AddMicroBatchHost(int32_t rank, int32_t v);
  void AddBackward(int32_t replica, int32_t stage, const PipelineItem& item, bool last_of_chunk,
                   PassIds& ids);
  void Connect(int32_t replica, PassIds& ids);
  RouteId SendRoute(int32_t from_rank, int32_t to_rank);
  TaskId Transfer(int32_t replica, int32_t from_stage, int32_t to_stage, TaskId before,
                  TaskId after);

  // Gradient buckets, the optimizer step and weight all-gathers (step_builder_data_parallel.cc).
  void AddParamGathersAtStart(int32_t rank, int32_t stage);
  void AddGradientReduction();
  void AddOptimizer(int32_t stage, NameId name, const std::vector<std::vector<TaskId>>& reductions);

  // ZeRO-3's layer gathers and ZeRO-Offload's copies and CPU step (step_builder_zero3.cc).
  TaskId AddLayerGather(int32_t rank, Pass pass);
  PassTasks AddWeightGather(int32_t rank, SimTime duration, TaskId rest_after);
  TaskId AddSynchronousFetch(int32_t rank, Pass pass);
  TaskId AddFetchIssue(int32_t rank, SimTime duration, Pass pass);
  TaskId OffloadBucket(int32_t rank, SimTime slice, TaskId reduction);
  TaskId AddCpuStep(int32_t stage, int32_t rank, TaskId after);

  // The micro-batch of the pass being added (-1 between passes), which Add() records per task.
  int32_t micro_batch_ = -1;

  const PipelineSchedule& schedule_;
  const std::vector<ChunkCost>& costs_;
  const StepGraphConfig& config_;
  StepGraph step_;
  std::vector<StreamId> tp_stream_, pp_stream_, dp_stream_, cp_stream_, gather_stream_,
      pcie_stream_, cpu_stream_;
  // The host thread (config_.host.enabled): per pass's first task, the host task its GPU work waits
  // for.
  std::unordered_map<TaskId, TaskId> host_lead_of_;
  // Per rank: the segments that used each gathered layer so far (ZeRO-3), and the all-gather of
  // each chunk's weights at the start of the step (--overlap-param-gather).
  std::vector<std::vector<TaskId>> gather_users_;
  // Per rank, with a synchronous fetch: the host's latest gather issue; and per end of a segment
  // that read gathered weights (gather_users_), the issue after it (which waits for the segment's
  // gradient reduction).
  std::vector<TaskId> last_issue_;
  std::unordered_map<TaskId, TaskId> issue_after_;
  std::vector<std::vector<std::vector<TaskId>>> start_gathers_;  // per rank, chunk, bucket
  NameId ring_name_ = kEmptyName, param_gather_name_ = kEmptyName, fetch_name_ = kEmptyName,
         grads_to_host_name_ = kEmptyName, batch_name_ = kEmptyName, fetch_issue_name_ = kEmptyName;
  // Per rank: the tp task that ended the previous pass, which the next compute task waits for.
  std::vector<TaskId> pending_tp_;
  // Per compute task (by id; shorter where the last ones are not): the share of its time in
  // memory-bound kernels (SmUse::memory).
  std::vector<float> memory_share_;
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

}  // namespace loom::step_builder_internal

#endif  // LOOM_SIM_STEP_BUILDER_INTERNAL_H_
