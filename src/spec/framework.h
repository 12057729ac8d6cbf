#ifndef LOOM_SPEC_FRAMEWORK_H_
#define LOOM_SPEC_FRAMEWORK_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/attention_family.h"
#include "core/enum_names.h"
#include "core/status.h"
#include "spec/cluster.h"
#include "spec/module_kernels.h"

namespace loom {

// The host side of a training framework (schema "loom.framework/1", hardware/frameworks/): what
// its CPU thread costs to issue the GPU's work, and where it waits for the GPU. In eager PyTorch
// every kernel is issued by Python, the dispatcher and autograd; when a layer's kernels are
// shorter than that, the GPU waits for the CPU (sim/step_builder.h models the host thread).
//   {"schema": "loom.framework/1", "name": "megatron-core", "source": "...",
//    "host": {"forward_us_per_op": 157, "backward_us_per_op": 92,
//             "optimizer_us_per_layer": 600, "optimizer_us_fixed": 3700, "scale": 1.0},
//    "cuda_graphs": {"layers": false, "launch_us": 3.6},
//    "sync": {"after_p2p": true, "before_optimizer": true},
//    "microbatch": {"batch_ops": 11, "loss_ops": 10, "host_mask_us": [[1024, 1206]],
//                   "sync": true, "source": "..."},
//    "fused_attention": {"family": "flash2", "from_compute_capability": 9.0,
//                        "family_from": "cudnn", "source": "..."},
//    "tensor_parallel": {"backward_overlap": true, "source": "..."},
//    "memory": {"allocator_headroom": 0.15, "source": "..."}}
//
// Which fused-attention kernel a framework's attention layer calls: |family| on every GPU, or
// |family_from| on GPUs of compute capability |from_compute_capability| and above (Transformer
// Engine prefers cuDNN's over FlashAttention from Hopper on).
struct FusedAttentionRule {
  AttentionFamily family = AttentionFamily::kFlashAttention2;
  std::optional<double> from_compute_capability;
  AttentionFamily family_from = AttentionFamily::kFlashAttention2;
  std::string source;
};

// What a training script does for each micro-batch outside the model, before each forward of a
// chunk on every stage: Megatron's forward_step calls get_batch (the batch's copy to the GPU, its
// broadcast over the tensor-parallel group, the slicing of tokens and labels, the loss mask and
// position ids, and in some releases the causal attention mask built on the CPU), and on the stage
// with the head its loss_func (the masked mean, the loss averaged over data parallelism).
struct MicroBatchHost {
  // The GPU ops get_batch issues on every stage and loss_func on the head's stage, each at the
  // framework's forward_us_per_op.
  int32_t batch_ops = 0;
  int32_t loss_ops = 0;
  // The host time of the causal attention mask built on the CPU, by sequence length, measured:
  // (seq, us) with seq ascending; empty where the mask is built on the GPU or not at all. It is
  // built only for attention that takes a mask (loom's unfused attention; Megatron skips it with
  // --use-flash-attn).
  std::vector<std::pair<int64_t, double>> host_mask_us;
  // Whether the host waits for the GPU to finish what it was given before each micro-batch
  // (broadcast_data's sizes_cuda.cpu()).
  bool sync = false;
  std::string source;

  // The mask's host time at |seq|: piecewise linear in seq^2 between the measured points,
  // proportional to seq^2 beyond them; 0 when none is measured.
  double MaskUs(int64_t seq) const;
};

// How the framework runs ZeRO-3's weight gathers and gradient reductions, where it differs from
// loom's default (one gather a layer, prefetched a layer ahead and overlapped with compute; one
// reduce-scatter a layer). DeepSpeed's ZeRO-3 of 2021 (microsoft/DeepSpeed v0.3.14, deepspeed/
// runtime/zero/stage3.py and partition_parameters.py) fetches each partitioned weight by itself,
// synchronously, with collectives over lists of per-rank views.
struct ShardedFetch {
  // One gather per linear weight of a layer (Megatron's four: QKV, projection, MLP up and down),
  // and the host waits for the GPU around every fetch: _allgather_param calls
  // torch.cuda.synchronize() before each all_gather, and fetch_sub_module ends in
  // _synchronize_communication (torch.cuda.synchronize()). So the next weight's gather overlaps
  // only the current weight's kernels, and the host's issue of each gather (and of each
  // gradient's reduction) leaves the GPU idle.
  bool synchronous = false;
  // Host time per rank of the group for one collective issued over a list of per-rank views
  // (DeepSpeed builds the list with a Python narrow() per rank; PyTorch's ProcessGroupNCCL copies
  // the flat result out, or the inputs in, with one copy_ per rank): microseconds.
  double list_collective_us_per_rank = 0;
  // Whether the gathers take such lists (DeepSpeed 2021) or gather into one flat buffer
  // (all_gather_into_tensor, as DeepSpeed's all_gather_coalesced does later).
  bool list_all_gather = true;
  // The gradient reduction: a reduce-scatter per weight (the list form, when
  // list_reduce_scatter), or an all-reduce of a flattened bucket (DeepSpeed's
  // buffered_reduce_fallback, taken when contiguous_gradients is off, ZeRO-3's default).
  enum class Reduction { kReduceScatter, kAllReduce };
  static constexpr EnumNames<Reduction, 2> kReductionNames{{{
      {Reduction::kReduceScatter, "reduce_scatter"},
      {Reduction::kAllReduce, "all_reduce"},
  }}};
  Reduction gradient_reduction = Reduction::kReduceScatter;
  bool list_reduce_scatter = false;
  // stage3_max_reuse_distance, in parameters: after the recomputed forward, a weight whose
  // backward use is further than this (the layer's weights after it) is released and gathered
  // again for its backward. 0: never released in between.
  int64_t max_reuse_distance = 0;
  // stage3_max_live_parameters: the next weight is prefetched only while fewer parameters than
  // this are gathered (prefetch_next_sub_modules); else its gather waits for its own fetch, the GPU
  // idle. 0: always prefetched.
  int64_t max_live_parameters = 0;
  // stage3_param_persistence_threshold: weights of fewer parameters (norms, biases) stay gathered
  // through the passes; after the backward every weight is partitioned again
  // (_partition_all_parameters), and after the optimizer step _post_step gathers the persistent
  // ones back with _allgather_params, which copies every persistent weight's slice of every rank
  // by itself (a narrow, a view, a narrow and a copy_ in Python): |persistent_gather_us_per_rank|
  // for each. 0: none.
  int64_t persistence_threshold = 0;
  double persistent_gather_us_per_rank = 0;
  std::string source;
};

struct FrameworkProfile {
  std::string file;
  std::string name;
  std::string source;
  // Host time to issue one op of loom's workload (workload/layer_ops.h) in forward (recompute
  // included) and in backward: the framework's kernels for that op and the Python, dispatcher
  // and autograd work around them, measured per layer and divided by loom's ops of that layer.
  double forward_us_per_op = 0;
  double backward_us_per_op = 0;
  // The optimizer step's host time: per transformer layer on the stage (its parameter tensors'
  // multi-tensor kernels) and once (gradient-norm, the found-inf check, the Python around them).
  double optimizer_us_per_layer = 0;
  double optimizer_us_fixed = 0;
  // Multiplies every host time above: the speed of the user's host CPU against the one the
  // numbers were measured on, as `loom fit --runs` fits it. 1 as measured.
  double scale = 1;
  // Whether the transformer layers run as captured CUDA graphs (Megatron-core's
  // --enable-cuda-graph): each layer's pass is one graph launch of |graph_launch_us| instead of
  // its ops; the embedding, head and loss stay eager.
  bool cuda_graph_layers = false;
  double graph_launch_us = 0;
  // Whether the host waits for the GPU after every pipeline send and receive (Megatron-LM's
  // torch.cuda.synchronize() after batched p2p), and before the optimizer step (the
  // gradient-norm and found-inf .item()s).
  bool sync_after_p2p = false;
  bool sync_before_optimizer = false;
  // The "microbatch" object; optional, nullopt: nothing outside the model per micro-batch.
  std::optional<MicroBatchHost> microbatch;
  // The files the host times were fitted on (`loom fit --runs`), when they were.
  std::vector<std::string> fitted_on;
  // The "zero3" object; optional, nullopt: loom's default ZeRO-3.
  std::optional<ShardedFetch> zero3;
  // The "fused_attention" object; optional, nullopt: FlashAttention-2 everywhere.
  std::optional<FusedAttentionRule> fused_attention;
  // Whether the backward of a column-parallel linear (QKV, MLP up, the output head) issues its
  // tensor-parallel collectives asynchronously, each beside a GEMM of the same linear: the input
  // gradient's all-reduce (or, with sequence parallelism, its reduce-scatter) beside the weight
  // gradient's GEMM, and the sequence-parallel re-gather of the input beside the input gradient's
  // GEMM (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication from NVIDIA/Megatron-LM
  // cf7efd4f, 2021-08-30, on by default; Transformer Engine's Linear does the same). The
  // "tensor_parallel" object's "backward_overlap"; optional, false: every collective blocks, as in
  // Megatron-LM before that commit.
  bool tp_backward_overlap = false;
  std::string tp_backward_overlap_source;
  // The "layer_kernels" object: the kernels the framework's modules launch around loom's layer
  // (spec/module_kernels.h); optional, nullopt: none, as Megatron-core with Transformer Engine.
  std::optional<ModuleKernels> layer_kernels;
  std::string layer_kernels_source;
  // The "memory" object's "allocator_headroom": the share of the GPU's memory the framework's
  // allocator loses to fragmentation, kept free beside every peak (sim/memory_reserve.h), and its
  // "source"; optional, nullopt: loom's default (kDefaultAllocatorHeadroom).
  std::optional<double> allocator_headroom;
  std::string allocator_headroom_source;
};

// The fused-attention family |framework| (nullptr: none) runs on |gpu|, and a line that says why.
struct FusedAttentionChoice {
  AttentionFamily family = AttentionFamily::kFlashAttention2;
  std::string basis;
};
FusedAttentionChoice ChooseFusedAttention(const FrameworkProfile* framework, const GpuSpec& gpu);

// Reads a framework file; errors name the file, the key and the fix.
Result<FrameworkProfile> LoadFrameworkProfile(const std::string& path);

// Whether |name_or_path| names a framework file (contains '/' or ends in .json) rather than a
// framework of the frameworks folder.
bool IsFrameworkPath(const std::string& name_or_path);

// The framework a command names: "none" (the GPU is always fed: no host thread), a file path
// (containing '/' or ending in .json), or the name of a file in the frameworks folder beside the
// cluster file's folder (hardware/clusters/x.json -> hardware/frameworks/<name>.json).
Result<std::optional<FrameworkProfile>> ResolveFramework(const std::string& name_or_path,
                                                         const std::string& cluster_file);

// The profile as its file holds it (LoadFrameworkProfile reads it back to the same values).
nlohmann::ordered_json FrameworkJson(const FrameworkProfile& profile);

}  // namespace loom

#endif  // LOOM_SPEC_FRAMEWORK_H_
