#include "plan/deepspeed_config.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/formatted.h"
#include "plan/arg_list.h"
#include "plan/deepspeed_partition.h"
#include "spec/pipeline_layout.h"
#include "workload/grad_accumulation.h"

// Config keys follow DeepSpeed's docs/_pages/config-json.md
// (https://www.deepspeed.ai/docs/config-json/); launcher flags follow megatron/arguments.py of
// microsoft/Megatron-DeepSpeed, with the MoE flags of DeepSpeed's
// docs/_tutorials/mixture-of-experts-nlg.md.
namespace loom {
namespace {

using arg_list::Add;
using arg_list::Args;
using Messages = std::vector<std::string>;
using Json = nlohmann::ordered_json;

// Whether DeepSpeed trains |s| in bf16: bf16, and fp8, whose GEMMs Transformer Engine runs inside
// bf16 layers (the config says bf16; the fp8 casts are the model's).
bool RunsBf16(const Strategy& s) { return s.dtype == Dtype::kBf16 || s.dtype == Dtype::kFp8; }

// Megatron-DeepSpeed builds pipelines with DeepSpeed's PipelineEngine, which runs one model chunk
// per stage under its 1F1B TrainSchedule (deepspeed/runtime/pipe/schedule.py); ZB-H1 replaces that
// schedule (--enable-zbh1-pipeline, megatron/core/pipeline_parallel/deepspeed_zbh1_schedule.py).
void CheckSchedule(const Strategy& s, Messages& out) {
  switch (s.schedule) {
    case ScheduleKind::k1F1B:
      return;
    case ScheduleKind::kZbH1:
      if (s.sp) {
        out.push_back(
            "--schedule zb-h1 with --sp: Megatron-DeepSpeed's ZB-H1 pipeline asserts sequence "
            "parallelism off (\"Sequence Parallel not tested\", megatron/arguments.py); drop --sp, "
            "or "
            "use --schedule 1f1b");
      }
      return;
    case ScheduleKind::kInterleaved:
      out.push_back(
          "--schedule interleaved: DeepSpeed's pipeline engine runs one model chunk per stage and "
          "has no "
          "virtual stages; use --schedule 1f1b --vpp 1, or --emit megatron");
      return;
    case ScheduleKind::kGpipe:
      out.push_back(
          "--schedule gpipe: DeepSpeed's pipeline engine runs its 1F1B TrainSchedule, not GPipe; "
          "use "
          "--schedule 1f1b: the same bubble with at most p micro-batches of activations in flight");
      return;
    case ScheduleKind::kZbV:
      out.push_back(
          "--schedule zb-v: DeepSpeed (through Megatron-DeepSpeed) has only ZB-H1; ZB-V is in the "
          "Megatron-LM "
          "fork sail-sg/zero-bubble-pipeline-parallelism; run that fork, or use --schedule zb-h1 "
          "or 1f1b");
      return;
    case ScheduleKind::kDualPipeV:
      out.push_back(
          "--schedule dualpipev: DeepSpeed has no DualPipeV; its reference implementation is "
          "deepseek-ai/DualPipe, wired into a training loop by hand; use --schedule zb-h1 or 1f1b");
      return;
  }
}

// The layers of each stage must be those DeepSpeed's PipelineModule gives Megatron-DeepSpeed's
// GPTModelPipe (MegatronDeepSpeedStageLayers): an even split where pp divides the layers, else
// partition_balanced's, which the search and --megatron-args give a strategy as its layout.
void CheckStageLayers(const ModelSpec& model, const Strategy& s, Messages& out) {
  if (s.vpp > 1) return;  // CheckSchedule refuses virtual stages
  const std::vector<int64_t> given = LayersPerVirtualStage(s, model.num_layers);
  const std::vector<int64_t> wanted = MegatronDeepSpeedStageLayers(model, s.pp);
  if (given == wanted) return;
  const auto list = [](const std::vector<int64_t>& layers) {
    std::string text;
    for (int64_t n : layers) text += (text.empty() ? "" : ",") + std::to_string(n);
    return text;
  };
  const bool even = model.num_layers % s.pp == 0;
  out.push_back(
      StrCat("layers per stage ", list(given), ": Megatron-DeepSpeed's pipeline engine splits the ",
             model.num_layers, " layers over ", s.pp, " stages as ", list(wanted),
             " (DeepSpeed's partition_balanced over GPTModelPipe's layer specs, partition_method "
             "\"type:transformer\"); ",
             even ? "drop --first-stage-layers, --last-stage-layers and --pipeline-layout"
                  : "use --pipeline-layout '" + PipelineLayoutText(wanted) + "'",
             ", or --emit megatron"));
}

void CheckParallelism(const ModelSpec& model, const Strategy& s, Messages& out) {
  if (s.cp > 1) {
    out.push_back(StrCat(
        "--cp ", s.cp,
        ": DeepSpeed has no ring or all-gather context parallelism; its sequence parallelism "
        "(DeepSpeed-Ulysses, Megatron-DeepSpeed's --ds-sequence-parallel-size) exchanges "
        "attention heads by all-to-all, which loom does not simulate; use --emit megatron, or "
        "--cp 1"));
  }
  CheckStageLayers(model, s, out);
  // deepspeed/runtime/pipe/engine.py, PipelineEngine.__init__.
  if (s.pp > 1 && s.zero_stage >= 2) {
    out.push_back(
        StrCat("--zero ", s.zero_stage, " with --pp ", s.pp,
               ": DeepSpeed's pipeline engine asserts \"ZeRO-2 and ZeRO-3 are incompatible with "
               "pipeline parallelism\"; use --zero 1, or --pp 1"));
  }
  if (s.overlap_grad_reduce && s.pp > 1) {
    out.push_back(StrCat(
        "--overlap-grad-reduce with --pp ", s.pp,
        ": DeepSpeed's pipeline engine reduces gradients after the step's last backward (its "
        "ReduceGrads instruction), not during it; drop --overlap-grad-reduce, or --emit megatron"));
  }
  if (s.overlap_param_gather && s.zero_stage < 3) {
    out.push_back(StrCat(
        "--overlap-param-gather with --zero ", s.zero_stage,
        ": DeepSpeed gathers the updated weights inside the optimizer step below ZeRO-3 and only "
        "ZeRO-3 prefetches them under compute; use --zero 3, drop --overlap-param-gather, or "
        "--emit megatron"));
  }
  if (s.tp_comm_overlap) {
    out.push_back(
        "--tp-comm-overlap: Megatron-DeepSpeed has no overlap of tensor-parallel communication "
        "with the "
        "GEMMs (that is Transformer Engine's userbuffers under Megatron-LM); drop it, or --emit "
        "megatron");
  }
}

void CheckPrecisionAndOptimizer(const Strategy& s, Messages& out) {
  if (s.grad_reduce_in_bf16 && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp8) {
    out.push_back(
        StrCat("--grad-reduce-in-bf16 with --dtype ", kDtypeNames.Name(s.dtype),
               ": gradients are reduced in bf16 only in bf16 training; use --dtype bf16, or drop "
               "--grad-reduce-in-bf16"));
  }
  if (s.optimizer == Optimizer::kAdafactor) {
    out.push_back(
        "--optimizer adafactor: Megatron-DeepSpeed's --optimizer takes adam or sgd; use "
        "--optimizer "
        "adam or sgd");
  }
  if (s.offload != Offload::kNone && s.optimizer != Optimizer::kAdam) {
    out.push_back(StrCat(
        "--offload ", kOffloadNames.Name(s.offload), " with --optimizer ",
        kOptimizerNames.Name(s.optimizer),
        ": DeepSpeed's ZeRO-Offload steps the optimizer with its CPU Adam (DeepSpeedCPUAdam, "
        "Megatron-DeepSpeed's --cpu-optimizer); other optimizers need "
        "\"zero_force_ds_cpu_optimizer\": "
        "false and run as plain PyTorch on the CPU; use --optimizer adam, or --offload none"));
  }
}

// Megatron-DeepSpeed recomputes in three ways (microsoft/Megatron-DeepSpeed f4157bea):
// - every layer through DeepSpeed's checkpointing (--checkpoint-activations), in both engines
//   (ParallelTransformer._checkpointed_forward in megatron/model/transformer.py; GPTModelPipe's
//   activation_checkpoint_interval in megatron/model/gpt_model.py);
// - the first N layers of a stage (--recompute-method block), only without DeepSpeed's pipeline
//   engine: GPTModelPipe takes the uniform method alone ("deepspeed's pipeline doesn't support the
//   block recompute method", gpt_model.py);
// - the core attention (--recompute-granularity selective), in both engines, but only in the
//   unfused CoreAttention: ParallelAttention sets checkpoint_core_attention only beside it, so with
//   FlashAttention the flag changes nothing (transformer.py, ParallelAttention.__init__).
void CheckRecompute(const Strategy& s, const DeepSpeedOptions& options, Messages& out) {
  if (s.recompute == Recompute::kSelective && options.attention == AttentionKernel::kFused) {
    out.push_back(
        "--recompute selective with --attention fused: Megatron-DeepSpeed recomputes the core "
        "attention "
        "only in its unfused CoreAttention; with FlashAttention --recompute-granularity selective "
        "does "
        "nothing, so the run would not recompute what loom simulated; use --attention unfused, "
        "--recompute full, or --emit megatron");
  }
  if (s.recompute == Recompute::kFull && s.recompute_layers > 0 && s.pp > 1) {
    out.push_back(StrCat(
        "--recompute-layers ", s.recompute_layers, " with --pp ", s.pp,
        ": Megatron-DeepSpeed recomputes only some layers (--recompute-method block) "
        "without DeepSpeed's pipeline engine; its pipeline model checkpoints every "
        "--checkpoint-num-layers layers; use --recompute-layers 0, --pp 1, or --emit megatron"));
  }
}

// FlashSelfAttention asserts fp16 or bf16 inputs (megatron/model/transformer.py, forward).
void CheckAttention(const Strategy& s, const DeepSpeedOptions& options, Messages& out) {
  const bool half = s.dtype == Dtype::kBf16 || s.dtype == Dtype::kFp16 || s.dtype == Dtype::kFp8;
  if (options.attention == AttentionKernel::kFused && !half) {
    out.push_back(
        StrCat("--dtype ", kDtypeNames.Name(s.dtype),
               " with --attention fused: Megatron-DeepSpeed's FlashAttention (--use-flash-attn-v2) "
               "takes fp16 and bf16 only; use --attention unfused, or --dtype bf16"));
  }
}

// fp8 in Megatron-DeepSpeed is Transformer Engine's TransformerLayer under fp8_autocast
// (--transformer-impl transformer_engine --fp8-hybrid; ParallelTransformer.build_layer in
// megatron/model/transformer.py, f4157bea), which it builds only outside DeepSpeed's pipeline
// engine (GPTModelPipe's layers are its own ParallelTransformerLayerPipe), asserts multi-head
// attention, and leaves at Transformer Engine's defaults: a LayerNorm, a GeLU MLP, its own fused
// attention, and no experts.
void CheckFp8(const ModelSpec& model, const Strategy& s, const DeepSpeedOptions& options,
              Messages& out) {
  if (s.dtype != Dtype::kFp8) return;
  const std::string why = "Megatron-DeepSpeed's fp8 is Transformer Engine's TransformerLayer";
  if (s.pp > 1) {
    out.push_back(StrCat("--dtype fp8 with --pp ", s.pp, ": ", why,
                         ", which it builds only without DeepSpeed's pipeline engine; use --pp 1, "
                         "or --emit megatron"));
  }
  if (model.num_kv_heads != model.num_heads) {
    out.push_back(StrCat("--dtype fp8 with the grouped-query attention of ", ModelRef(model), ": ",
                         why, ", and it asserts multi-head attention; use --emit megatron"));
  }
  const bool gelu = model.hidden_act.rfind("gelu", 0) == 0;
  if (model.mlp != MlpKind::kPlain || !gelu || model.norm != NormKind::kLayerNorm) {
    out.push_back(StrCat("--dtype fp8 with ", ModelRef(model), ": ", why,
                         " at its defaults (a LayerNorm and a GeLU MLP), not this model's norm and "
                         "MLP; use --emit megatron"));
  }
  if (model.moe.has_value()) {
    out.push_back(StrCat("--dtype fp8 with the experts of ", ModelRef(model), ": ", why,
                         ", which has no experts; use --emit megatron"));
  }
  if (options.attention != AttentionKernel::kFused) {
    out.push_back("--dtype fp8 with --attention unfused: " + why +
                  ", with its own fused attention; use --attention fused");
  }
}

// bf16 gradients summed in fp32 where DeepSpeed sums them in bf16 (DeepSpeedKeepsBf16Gradients):
// the simulation budgeted 4-byte gradients that the run does not keep.
void CheckGradientDtype(const Strategy& s, Messages& out) {
  if (!RunsBf16(s) || GradAccumulatorBytes(s) != 4 || !DeepSpeedKeepsBf16Gradients(s)) return;
  const std::string setting =
      StrCat("--zero ", s.zero_stage, s.offload != Offload::kNone ? " --offload " : "",
             s.offload != Offload::kNone ? kOffloadNames.Name(s.offload) : "",
             s.pp > 1 ? StrCat(" --pp ", s.pp) : "");
  out.push_back(StrCat(
      setting,
      " with fp32 gradient accumulation: DeepSpeed sums bf16 gradients in bf16 there, whatever "
      "data_types.grad_accum_dtype says, and fp32 only without ZeRO, at ZeRO-1 without offload or "
      "at ZeRO-3; add --grad-reduce-in-bf16 (2-byte gradients, as DeepSpeed keeps them), or use "
      "--zero 0, 1 or 3"));
}

// bf16 gradients summed in bf16 without ZeRO need the pipeline engine: elsewhere DeepSpeed raises
// NotImplementedError for a bf16 grad_accum_dtype (_do_optimizer_sanity_check).
void CheckBf16SumWithoutZero(const Strategy& s, Messages& out) {
  if (!RunsBf16(s) || s.zero_stage != 0 || s.pp > 1 ||
      s.grad_accumulation != GradAccumulation::kAdd || GradAccumulatorBytes(s) != 2) {
    return;
  }
  out.push_back(
      "--grad-reduce-in-bf16 with --zero 0 --pp 1: DeepSpeed sums bf16 gradients in bf16 without "
      "ZeRO only under its pipeline engine, and raises NotImplementedError elsewhere; drop "
      "--grad-reduce-in-bf16, or use --zero 1 or 2");
}

// DeepSpeed-MoE places experts every --expert-interval layers, each as wide as the dense MLP, with
// no shared experts; expert groups are carved from the data-parallel group
// (deepspeed/utils/groups.py, _create_expert_and_data_parallel).
void CheckModel(const ModelSpec& model, const Strategy& s, Messages& out) {
  if (model.mla.has_value()) {
    out.push_back(
        StrCat("kv_lora_rank of ", ModelRef(model),
               ": Megatron-DeepSpeed has no multi-head latent attention; use --emit megatron "
               "(--multi-latent-attention)"));
  }
  if (model.NumWindowedLayers() > 0 && model.sliding_window < s.seq_len) {
    out.push_back(StrCat("sliding_window ", model.sliding_window, " of ", ModelRef(model),
                         ": Megatron-DeepSpeed's attention has no sliding window (it would attend "
                         "to all ",
                         s.seq_len, " positions); use --emit megatron (--window-size)"));
  }
  if (!model.moe.has_value()) return;
  const MoeSpec& moe = *model.moe;
  // deepspeed/runtime/engine.py, _validate_zero3_moe_compatibility (deepspeedai/DeepSpeed
  // edaa72212).
  if (s.zero_stage == 3) {
    out.push_back(
        StrCat("--zero 3 with the experts of ", ModelRef(model),
               ": DeepSpeed refuses its own MoE layers at ZeRO-3 (\"Native DeepSpeed MoE is not "
               "supported with ZeRO Stage 3\"); use --zero 1 or 2, or --emit megatron"));
  }
  if (moe.num_shared_experts > 0) {
    out.push_back(StrCat("n_shared_experts (", moe.num_shared_experts, ") of ", ModelRef(model),
                         ": DeepSpeed-MoE has no shared experts; use --emit megatron "
                         "(--moe-shared-expert-intermediate-size)"));
  }
  if (moe.first_dense_layers > 0) {
    out.push_back(StrCat(
        "first_k_dense_replace (", moe.first_dense_layers, ") of ", ModelRef(model),
        ": Megatron-DeepSpeed places experts every --expert-interval layers and cannot keep the "
        "first layers dense; use --emit megatron (--moe-layer-freq)"));
  }
  const int64_t etp = s.ExpertTp();
  if (etp != 1 && etp != s.tp) {
    out.push_back(
        StrCat("--etp ", etp,
               ": DeepSpeed-MoE splits each expert over the whole tp group "
               "(--enable-expert-tensor-parallelism) or not at all; use --etp 1 or --etp ",
               s.tp));
  }
  if (s.ep > 1 && s.dp % s.ep != 0) {
    out.push_back(StrCat(
        "--ep ", s.ep, " with --dp ", s.dp,
        ": DeepSpeed carves expert-parallel groups out of the data-parallel group, so ep must "
        "divide dp; use an ep that divides ",
        s.dp));
  }
}

// Batch: DeepSpeed's "number of GPUs" is the data-parallel size (deepspeed/runtime/config.py,
// DeepSpeedConfig: world_size = mpu.get_data_parallel_world_size(); PipelineEngine asserts
// train_batch_size == micro_batch_size * micro_batches * data_parallel_size).
Json BatchConfig(const Strategy& s) {
  Json config;
  config["train_batch_size"] = s.global_batch;
  config["train_micro_batch_size_per_gpu"] = s.micro_batch;
  config["gradient_accumulation_steps"] = s.NumMicroBatches();
  return config;
}

// bf16/fp16 {enabled}; communication_data_type sets the dtype of the gradient reduction (fp32 is
// Megatron-LM's default for bf16, which loom simulates unless --grad-reduce-in-bf16).
// data_types.grad_accum_dtype is the dtype of the buffer the gradients are summed in, the one the
// simulation accumulated into (GradAccumulatorBytes of DeepSpeedGradAccumulation's mode: the main
// gradient, fp32 for bf16 unless --grad-reduce-in-bf16, in add mode; the model dtype's .grad in
// autograd mode). REQUIRES: strategy.grad_accumulation is DeepSpeedGradAccumulation(strategy), and
// fp32 for bf16 only where DeepSpeed sums in fp32 (CheckGradientDtype).
void AddPrecision(const Strategy& s, Json& config) {
  if (RunsBf16(s)) config["bf16"] = {{"enabled", true}};
  if (s.dtype == Dtype::kFp16) config["fp16"] = {{"enabled", true}};
  if (RunsBf16(s)) config["communication_data_type"] = s.grad_reduce_in_bf16 ? "bf16" : "fp32";
  const char* const half = s.dtype == Dtype::kFp16 ? "fp16" : "bf16";
  config["data_types"] = {{"grad_accum_dtype", GradAccumulatorBytes(s) == 2 ? half : "fp32"}};
}

// "Adam" is DeepSpeed's FusedAdam (DeepSpeedCPUAdam with offload), in AdamW mode by default
// (adam_w_mode); "SGD" is imported from torch.optim, an untested optimizer for ZeRO that needs
// zero_allow_untested_optimizer.
void AddOptimizer(const Strategy& s, Json& config) {
  const bool sgd = s.optimizer == Optimizer::kSgd;
  config["optimizer"] = {{"type", sgd ? "SGD" : "Adam"}};
  if (sgd && s.zero_stage >= 1) config["zero_allow_untested_optimizer"] = true;
}

// zero_optimization: overlap_comm overlaps the gradient reduction with the backward;
// stage3_prefetch_bucket_size 0 turns off ZeRO-3's parameter prefetch
// (deepspeed/runtime/zero/partitioned_param_coordinator.py prefetches only when it is > 0).
void AddZero(const Strategy& s, Json& config) {
  Json zero;
  zero["stage"] = s.zero_stage;
  if (s.zero_stage >= 1) {
    zero["overlap_comm"] = s.overlap_grad_reduce;
    zero["reduce_scatter"] = true;
  }
  if (s.zero_stage >= 2) zero["contiguous_gradients"] = true;
  if (s.offload != Offload::kNone)
    zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (s.offload == Offload::kOptimizerAndParams) {
    zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (s.zero_stage == 3 && !s.overlap_param_gather) zero["stage3_prefetch_bucket_size"] = 0;
  config["zero_optimization"] = zero;
}

// Full recompute of every layer: DeepSpeed's checkpointing, not Megatron's block method.
bool CheckpointsEveryLayer(const Strategy& s) {
  return s.recompute == Recompute::kFull && s.recompute_layers == 0;
}

// deepspeed.checkpointing's settings, read only when Megatron-DeepSpeed checkpoints every layer
// through it (--deepspeed-activation-checkpointing; megatron/initialize.py).
void AddActivationCheckpointing(const Strategy& s, Json& config) {
  if (!CheckpointsEveryLayer(s)) return;
  config["activation_checkpointing"] = {
      {"partition_activations", false},
      {"cpu_checkpointing", false},
      {"contiguous_memory_optimization", false},
      {"synchronize_checkpoint_boundary", false},
  };
}

// A mixture of experts passes two tensors that need gradients between stages, the hidden states
// and the summed aux loss. With tp > 1 DeepSpeed's pipeline engine partitions the first over the
// tp group and then sends back only the partitioned gradient, dropping the aux loss's
// (_exec_send_grads in deepspeed/runtime/pipe/engine.py: is_grad_partitioned = is_model_parallel
// and pipeline.grad_partitioned, both partitions on by default in get_pipeline_config,
// deepspeed/runtime/config.py, deepspeedai/DeepSpeed edaa72212). Megatron-DeepSpeed asserts both
// off for an MoE model with pp > 1 and tp > 1, but reads a missing key as off (GPTModelPipe in
// megatron/model/gpt_model.py, f4157bea), so the config must say so.
void AddPipeline(const ModelSpec& model, const Strategy& s, Json& config) {
  if (!model.moe.has_value() || s.pp <= 1 || s.tp <= 1) return;
  config["pipeline"] = {{"pipe_partitioned", false}, {"grad_partitioned", false}};
}

// DeepSpeed-MoE (docs/_tutorials/mixture-of-experts-nlg.md): loom's dropless router is
// --disable-moe-token-dropping; a capacity factor is --moe-train-capacity-factor.
void AddMoeArgs(const ModelSpec& model, const Strategy& s, Args& out) {
  if (!model.moe.has_value()) return;
  Add(out, "--num-experts", model.moe->num_experts);
  Add(out, "--moe-expert-parallel-size", s.ep);
  Add(out, "--topk", model.moe->experts_per_token);
  Add(out, "--expert-interval", 1);
  if (s.tp > 1 && s.ExpertTp() == s.tp) Add(out, "--enable-expert-tensor-parallelism");
  if (s.moe_capacity_factor > 0) {
    Add(out, "--moe-train-capacity-factor", arg_list::ShortestDecimal(s.moe_capacity_factor));
  } else {
    Add(out, "--disable-moe-token-dropping");
  }
  if (s.zero_stage >= 1) Add(out, "--create-moe-param-group");
}

// CheckRecompute's three ways. --recompute-granularity selective takes no method (validate_args in
// megatron/arguments.py asserts none); block needs --recompute-granularity full and no
// --checkpoint-activations, which would take precedence (ParallelTransformer.forward).
void AddRecomputeArgs(const Strategy& s, Args& out) {
  if (s.recompute == Recompute::kSelective) Add(out, "--recompute-granularity", "selective");
  if (s.recompute != Recompute::kFull) return;
  if (CheckpointsEveryLayer(s)) {
    Add(out, "--checkpoint-activations");
    Add(out, "--checkpoint-num-layers", 1);
    Add(out, "--deepspeed-activation-checkpointing");
    return;
  }
  Add(out, "--recompute-granularity", "full");
  Add(out, "--recompute-method", "block");
  Add(out, "--recompute-num-layers", s.recompute_layers);
}

// Megatron-DeepSpeed runs without DeepSpeed's pipeline engine under --no-pipeline-parallel, which
// ZeRO-2/3 need. Its attention is the unfused CoreAttention unless a FlashAttention flag is given
// (ParallelAttention.__init__ in megatron/model/transformer.py); --use-flash-attn-v2 is the
// FlashAttention-2 of loom's fused kernel.
Args LauncherArgs(const ModelSpec& model, const Strategy& s, const DeepSpeedOptions& options) {
  Args out;
  Add(out, "--tensor-model-parallel-size", s.tp);
  Add(out, "--pipeline-model-parallel-size", s.pp);
  if (s.pp == 1) Add(out, "--no-pipeline-parallel");
  if (s.sp) Add(out, "--sequence-parallel");
  if (s.schedule == ScheduleKind::kZbH1) Add(out, "--enable-zbh1-pipeline");
  Add(out, "--micro-batch-size", s.micro_batch);
  Add(out, "--global-batch-size", s.global_batch);
  Add(out, "--seq-length", s.seq_len);
  AddMoeArgs(model, s, out);
  if (s.dtype == Dtype::kFp8) {
    // Transformer Engine's layers (fp8 autocast, DelayedScaling with the hybrid format: E4M3
    // forward, E5M2 backward), with their own fused attention.
    Add(out, "--transformer-impl", "transformer_engine");
    Add(out, "--fp8-hybrid");
  } else if (options.attention == AttentionKernel::kFused) {
    Add(out, "--use-flash-attn-v2");
  }
  if (RunsBf16(s)) Add(out, "--bf16");
  if (s.dtype == Dtype::kFp16) Add(out, "--fp16");
  Add(out, "--optimizer", s.optimizer == Optimizer::kSgd ? "sgd" : "adam");
  Add(out, "--zero-stage", s.zero_stage);
  if (s.offload != Offload::kNone) Add(out, "--cpu-optimizer");
  AddRecomputeArgs(s, out);
  Add(out, "--deepspeed");
  Add(out, "--deepspeed_config", "ds_config.json");
  return out;
}

// Megatron-DeepSpeed raises on CUDA under --sequence-parallel without
// CUDA_DEVICE_MAX_CONNECTIONS=1, and turns sequence parallelism off at tp 1 before it checks
// (validate_args, megatron/arguments.py).
std::vector<std::pair<std::string, std::string>> Environment(const Strategy& s) {
  if (s.sp && s.tp > 1) return {{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  return {};
}

// DeepSpeed's config and Megatron-DeepSpeed have no TF32 switch: fp32 matmuls follow PyTorch's
// torch.backends.cuda.matmul.allow_tf32, off by default since PyTorch 1.12.
void AddPrecisionNotes(const Strategy& s, const DeepSpeedOptions& options,
                       std::vector<std::string>& notes) {
  if (s.dtype == Dtype::kFp8) {
    notes.push_back(
        "--transformer-impl transformer_engine --fp8-hybrid builds Transformer Engine's "
        "TransformerLayer under fp8_autocast, with its own fused attention; it needs the "
        "transformer-engine package.");
  } else if (options.attention == AttentionKernel::kFused) {
    notes.push_back(
        "--use-flash-attn-v2 runs the fused attention loom simulated (Megatron-DeepSpeed's default "
        "is its "
        "unfused CoreAttention); it needs the flash-attn 2.x package.");
  }
  if (s.dtype == Dtype::kTf32) {
    notes.push_back(
        "loom simulated TF32 matmuls; DeepSpeed and Megatron-DeepSpeed leave them to PyTorch, "
        "which runs "
        "fp32 matmuls in full fp32 unless torch.backends.cuda.matmul.allow_tf32 = True (off by "
        "default "
        "since PyTorch 1.12): set it in pretrain_gpt.py before the model is built.");
  }
  if (s.dtype == Dtype::kFp32) {
    notes.push_back(
        "loom simulated full-precision fp32 matmuls; keep torch.backends.cuda.matmul.allow_tf32 "
        "off "
        "(PyTorch's default since 1.12), or the run is faster than predicted.");
  }
}

std::vector<std::string> Notes(const ModelSpec& model, const Strategy& s,
                               const DeepSpeedOptions& options) {
  std::vector<std::string> notes = {
      StrCat(
          "train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp: ",
          s.global_batch, " = ", s.micro_batch, " * ", s.NumMicroBatches(), " * ", s.dp,
          ". DeepSpeed's \"number of GPUs\" there is the data-parallel size; launch tp * pp * dp "
          "= ",
          s.WorldSize(), " processes."),
      "launcher_args are for Megatron-DeepSpeed's pretrain_gpt.py (microsoft/Megatron-DeepSpeed): "
      "DeepSpeed's config has no tensor- or pipeline-parallel degree. Add the model-shape, data, "
      "tokenizer and learning-rate arguments of the run.",
      "optimizer.params (lr, betas, eps, weight_decay) are left out: DeepSpeed then uses the "
      "optimizer's "
      "defaults (lr 1e-3). Megatron-DeepSpeed passes its own optimizer, built from --optimizer and "
      "--lr, "
      "to deepspeed.initialize; a script that does not must add them.",
  };
  if (model.moe.has_value() && model.moe->expert_intermediate_size != model.intermediate_size) {
    notes.push_back(StrCat(
        "DeepSpeed-MoE experts are as wide as the dense MLP: pass --ffn-hidden-size ",
        model.moe->expert_intermediate_size, " (the expert width of ", ModelRef(model), ")."));
  }
  if (!Environment(s).empty()) {
    notes.push_back(
        "CUDA_DEVICE_MAX_CONNECTIONS=1 in every process's environment: Megatron-DeepSpeed raises "
        "without "
        "it under --sequence-parallel (validate_args, megatron/arguments.py).");
  }
  AddPrecisionNotes(s, options, notes);
  return notes;
}

// How DeepSpeedGradAccumulation's mode comes about, for the error that names another mode.
const char* AccumulationReason(const Strategy& s) {
  if (s.zero_stage >= 1)
    return "DeepSpeed adds each micro-batch's gradients into ZeRO's accumulation buffer";
  if (DeepSpeedGradAccumulation(s) == GradAccumulation::kAdd) {
    return "DeepSpeed's BF16_Optimizer adds each micro-batch's bf16 gradients into its buffer";
  }
  return "DeepSpeed without ZeRO steps on .grad as autograd sums it";
}

}  // namespace

// Without ZeRO, bf16 steps with BF16_Optimizer (_do_optimizer_sanity_check in
// deepspeed/runtime/engine.py picks it for a bf16 model whether or not the pipeline engine runs),
// whose backward adds each micro-batch's gradients into its own buffer (BF16_Optimizer.backward and
// update_hp_grads in deepspeed/runtime/bf16_optimizer.py; the pipeline engine calls the latter
// after every backward, _exec_backward_pass; deepspeedai/DeepSpeed 38327e07f).
GradAccumulation DeepSpeedGradAccumulation(const Strategy& strategy) {
  return strategy.zero_stage >= 1 || RunsBf16(strategy) ? GradAccumulation::kAdd
                                                        : GradAccumulation::kAutograd;
}

// deepspeedai/DeepSpeed edaa72212: _do_optimizer_sanity_check (deepspeed/runtime/engine.py) wants
// grad_accum_dtype equal to the model dtype without ZeRO and picks BF16_Optimizer, whose gradient
// buffer is fp32, only for bf16 + fp32 at ZeRO-1 without offload. The ZeRO-1/2 optimizer
// (deepspeed/runtime/zero/stage_1_and_2.py) adds each micro-batch into the parameters' own
// gradients at ZeRO-2 (grads_in_partition, dtype=self.dtype;
// independent_gradient_partition_epilogue) and into CPU buffers of the parameter dtype with offload
// (async_accumulate_grad_in_cpu_via_gpu). ZeRO-3 adds into grad_partitions_flat_buffer of
// gradient_accumulation_dtype (stage3.py).
bool DeepSpeedBudgetsBf16Gradients(const Strategy& strategy) {
  return RunsBf16(strategy) && strategy.grad_accumulation != GradAccumulation::kAutograd &&
         DeepSpeedKeepsBf16Gradients(strategy);
}

bool DeepSpeedKeepsBf16Gradients(const Strategy& strategy) {
  if (!RunsBf16(strategy)) return false;
  switch (strategy.zero_stage) {
    case 1:
      return strategy.offload != Offload::kNone;
    case 2:
      return true;
    default:  // BF16_Optimizer's or ZeRO-3's buffer, of grad_accum_dtype
      return false;
  }
}

Result<DeepSpeedPlan> DeepSpeedConfig(const ModelSpec& model, const Strategy& strategy,
                                      const DeepSpeedOptions& options) {
  Messages problems;
  const GradAccumulation accumulation = DeepSpeedGradAccumulation(strategy);
  if (strategy.grad_accumulation != accumulation) {
    problems.push_back(StrCat(
        "--grad-accumulation ", kGradAccumulationNames.Name(strategy.grad_accumulation),
        " with --zero ", strategy.zero_stage,
        ": Megatron-DeepSpeed hands every weight gradient to autograd (its fused accumulation "
        "is commented out) and ",
        AccumulationReason(strategy), "; use --grad-accumulation ",
        kGradAccumulationNames.Name(accumulation),
        " (or auto, which picks it for each ZeRO stage with --emit deepspeed)"));
  }
  CheckSchedule(strategy, problems);
  CheckParallelism(model, strategy, problems);
  CheckPrecisionAndOptimizer(strategy, problems);
  CheckFp8(model, strategy, options, problems);
  CheckGradientDtype(strategy, problems);
  CheckBf16SumWithoutZero(strategy, problems);
  CheckAttention(strategy, options, problems);
  CheckRecompute(strategy, options, problems);
  CheckModel(model, strategy, problems);
  const int64_t per_step = strategy.micro_batch * strategy.dp;
  if (per_step < 1 || strategy.global_batch % per_step != 0) {
    problems.push_back(StrCat("--global-batch ", strategy.global_batch,
                              ": DeepSpeed needs train_batch_size = "
                              "micro-batch * gradient_accumulation_steps * dp, and ",
                              strategy.global_batch, " is not a multiple of --micro-batch ",
                              strategy.micro_batch, " * --dp ", strategy.dp, "; use a multiple of ",
                              per_step));
  }
  if (!problems.empty()) return Status::InvalidArgument(arg_list::JoinLines(problems));

  DeepSpeedPlan plan;
  plan.config = BatchConfig(strategy);
  AddPrecision(strategy, plan.config);
  AddOptimizer(strategy, plan.config);
  AddZero(strategy, plan.config);
  AddActivationCheckpointing(strategy, plan.config);
  AddPipeline(model, strategy, plan.config);
  plan.env = Environment(strategy);
  plan.launcher_args = LauncherArgs(model, strategy, options);
  plan.notes = Notes(model, strategy, options);
  return plan;
}

}  // namespace loom
