#ifndef LOOM_SIM_STEP_BUILDER_H_
#define LOOM_SIM_STEP_BUILDER_H_

#include <cstdint>
#include <vector>

#include "core/sim_time.h"
#include "program/step_graph.h"
#include "schedule/schedule.h"
#include "sim/pass_costs.h"

namespace loom {

// Sends between neighbouring pipeline stages.
struct PipelineConfig {
  // One activation (forward) or gradient (backward) transfer between neighbouring stages.
  SimTime p2p_time;
  // Whether the sender's next pass waits for its send to finish. Megatron-LM's pipeline schedules
  // wait on their send and receive requests before the next forward or backward (megatron/core/
  // pipeline_parallel/p2p_communication.py, _communicate: req.wait() unless the interleaved
  // schedule overlaps p2p, --overlap-p2p-communication, off by default), so a send costs its
  // sender compute time, not only its receiver.
  bool blocking_sends = true;
};

// Gradient reduction, the optimizer step and the all-gather of the updated weights, timed
// (DataParallelPlan, workload/data_parallel_plan.h, says what they move).
struct DataParallelConfig {
  // Gradient reduction per virtual stage (indexed like the chunk costs): the chunk's gradients go
  // in |buckets| equal buckets, each reduced in |bucket_time| on the data-parallel stream as soon
  // as the last backward of the chunk has produced it (Megatron-LM's overlapped, bucketed
  // gradient reduction). Empty: no gradient reduction.
  std::vector<int32_t> buckets;
  std::vector<SimTime> bucket_time;
  // Whether the buckets are reduced as the backward produces them (Megatron-LM's
  // --overlap-grad-reduce) or, off, all after the stage's last backward pass (its
  // finalize_model_grads).
  bool overlap_grad_reduce = true;
  // Whether every micro-batch's backward reduces its buckets (ZeRO-2 and -3 keep only their
  // shard of the gradients, so they reduce-scatter after each micro-batch), not only the chunk's
  // last one.
  bool reduce_every_micro_batch = false;
  // Per stage: the optimizer step after every gradient of the stage is reduced, then (ZeRO >= 1)
  // the all-gather of the updated weights.
  std::vector<SimTime> optimizer_time;
  std::vector<SimTime> param_gather_time;
  // --overlap-param-gather: the all-gather of each chunk's weights runs at the start of the
  // step, one per gradient bucket, and the chunk's first forward runs as that many segments, each
  // waiting for its bucket (in a run of steps: under the forward of the next step), instead of
  // after the optimizer.
  bool overlap_param_gather = false;
};

// ZeRO-3's per-layer weight gathers, and parameter offload's fetches before them.
struct ZeroThreeConfig {
  // Each forward and each backward pass runs as |layer_gathers| equal layer segments, and each
  // segment waits for the all-gather of its layer's weights (|layer_gather_time|, on a gather
  // stream, |layer_gather_bytes| held from its start to the end of the segment). A gather starts
  // once the segment two before it has freed its weights: one layer prefetched ahead
  // (Rajbhandari et al. 2020, Section 5.3; PyTorch FSDP's backward prefetch). The buckets are
  // then the layers: set DataParallelConfig::buckets to layer_gathers. 0: no per-layer gathers.
  int32_t layer_gathers = 0;
  SimTime layer_gather_time;
  int64_t layer_gather_bytes = 0;
  // Parameter offload (ZeRO-Infinity): each layer's weight shard comes from the host over PCIe
  // before its gather. Zero: the weights stay on the GPU.
  SimTime layer_fetch_time;
  // A synchronous fetch (ShardedFetch::synchronous, DeepSpeed's ZeRO-3 of 2021), with the host
  // thread on: before each segment's kernels the host waits for the GPU (the segment's gather,
  // every kernel and reduction issued before) and then issues the next segment's gather, taking
  // |gather_issue_time| (after a backward segment also |reduce_issue_time|, the issue of the
  // reduction of the segment before); the gather of segment k + 1 starts from that issue, so it
  // overlaps only segment k's kernels. The first fetch of the step issues its own gather first.
  // Without it, with the host thread on, the host issues each gather (and reduction) in those
  // times before the segment's own issue, waiting for nothing on the GPU. Either way a backward
  // segment gathers |backward_gathers| times the weights (re-gathered after the recomputed forward
  // released them): its gather and issue take that many times as long.
  bool synchronous_fetch = false;
  SimTime gather_issue_time;
  SimTime reduce_issue_time;
  double backward_gathers = 1;
  // The share of the gathers that cannot be prefetched (stage3_max_live_parameters): that part of
  // each gather runs only once the segment before has ended (and a synchronous issue waits for
  // it).
  double unprefetched_share = 0;
  // Host time after the optimizer step, the GPU idle (DeepSpeed's gather of its persistent
  // weights, ShardedFetch::persistence_threshold), with the host thread on. Zero: none.
  SimTime post_step_host_time;
};

// ZeRO-Offload (Ren et al. 2021): per stage, the copy of the gradient shard to the host over PCIe
// (one slice after each bucket's reduction), the optimizer step on the CPU after the last one, and
// the copy of the updated weights back, before their all-gather. Empty: no offload.
struct OffloadConfig {
  std::vector<SimTime> grad_to_host, cpu_step, params_to_gpu;
};

// The fabric of each kind of transfer: sends between neighbouring stages, data-parallel
// collectives (gradient buckets, weight all-gathers), the tensor-parallel task of each pass (its
// tp, cp and ep collectives) and ring-attention transfers. Transfers on one port share its
// bandwidth (engine.h). A port has a send (tx) and a receive (rx) channel, each direction of a
// full-duplex link: a send uses the sender's tx and the receiver's rx, a collective both channels
// of its rank. kNone everywhere: no sharing.
struct FabricConfig {
  Fabric pp = Fabric::kNone;
  Fabric dp = Fabric::kNone;
  Fabric tp = Fabric::kNone;
  Fabric cp = Fabric::kNone;
};

// The host thread of each rank (spec/framework.h).
struct HostConfig {
  // Off: the GPU is always fed. On: a "host" stream per rank issues every pass in the rank's
  // order, first its lead (PassCost::host_lead), which the pass's GPU work waits for, then the rest
  // of its host time; so the host runs ahead of the GPU as far as it can, and a pass of short ops
  // waits for the host.
  bool enabled = false;
  // Where the host waits for the GPU: after every pipeline send and receive (the sender's next
  // pass and the receiver's pass are issued only once the transfer has ended; Megatron-LM's
  // torch.cuda.synchronize() after batch_isend_irecv, megatron/core/pipeline_parallel/
  // p2p_communication.py), and before each stage's optimizer step, once every gradient is reduced
  // (the gradient norm's and found-inf's .item()).
  bool sync_after_p2p = false;
  bool sync_before_optimizer = false;
  // Per stage: the optimizer step's host time before its kernels may start (the lead).
  std::vector<SimTime> optimizer_lead;
  // Per virtual stage (empty: none): the training script's host time before each forward of a
  // micro-batch, outside the model (FrameworkProfile::microbatch: fetching the batch, the loss);
  // and whether the host first waits for the GPU to finish what it was given (get_batch's
  // .cpu()).
  std::vector<SimTime> microbatch_lead;
  bool sync_per_micro_batch = false;
};

// The share of its GPU's SMs each kind of transfer holds while it runs (sim/engine.h): the CTAs of
// its kernels over the GPU's SMs; and the share of the GPU's HBM bandwidth its traffic takes
// (NcclHbmShare). The compute stream's tasks yield to them.
struct SmHolds {
  // The data-parallel group's NCCL kernels, one CTA per channel: gradient buckets, weight
  // all-gathers and ZeRO-3's per-layer weight gathers.
  double nccl = 0;
  double nccl_hbm = 0;
  // The hidden part of a pass's tp collectives (PassCost::tp_hidden): --tp-comm-overlap's
  // userbuffers, or the framework's asynchronous NCCL collectives (TpHiddenSmHold).
  double tp_hidden = 0;
  double tp_hidden_hbm = 0;
};

// What the step graph needs beyond the schedule and the per-chunk pass costs, by feature.
struct StepGraphConfig {
  // Data-parallel replicas simulated, each a full pipeline. 1 is the symmetric default: one
  // replica, its gradient collectives timed for the whole group. More simulate every replica, with
  // the collectives as rendezvous among them; both give the same step on symmetric inputs.
  int32_t replicas = 1;
  // Ring attention: whether passes may carry ring transfers (PassCost::ring_steps), which run on
  // a cp stream per rank over FabricConfig::cp.
  bool cp_ring = false;
  PipelineConfig pipeline;
  DataParallelConfig dp;
  ZeroThreeConfig zero3;
  OffloadConfig offload;
  FabricConfig fabrics;
  HostConfig host;
  // Per stage (its GPU's SMs); empty: no transfer holds SMs, compute never slows.
  std::vector<SmHolds> sm_holds;
};

// Builds the step: every stage runs |schedule|'s order on its compute stream, each pass's
// tensor-parallel collectives after its kernels on the tp stream, with the true dependencies of
// schedule.h; a transfer between stages is a task on the sender's pp stream (one transfer at a
// time per sender); transfers, data-parallel collectives and tp tasks share the ports of their
// config fabric; activations (the logits of the last virtual stage in their own pool) are
// allocated when F starts and freed when the micro-batch's W (or BW) ends; a recompute buffer
// lives for each B. The pools of weights, gradients and optimizer states are made empty: the
// caller gives them their baselines (ModelStateBaselines, simulator.h). The last backward of each
// chunk is cut into its gradient buckets, so that the reduction of a bucket overlaps the rest of
// the backward. REQUIRES: chunk_costs.size() == schedule.VirtualStages(); config vectors sized as
// documented.
StepGraph BuildStepGraph(const PipelineSchedule& schedule,
                         const std::vector<ChunkCost>& chunk_costs, const StepGraphConfig& config);

}  // namespace loom

#endif  // LOOM_SIM_STEP_BUILDER_H_
