#include "plan/deepspeed_config.h"

#include <cstdint>
#include <string>
#include <vector>

#include "plan/arg_list.h"
#include "workload/grad_accumulation.h"

// Config keys follow DeepSpeed's docs/_pages/config-json.md (https://www.deepspeed.ai/docs/config-json/);
// launcher flags follow megatron/arguments.py of microsoft/Megatron-DeepSpeed, with the MoE flags of
// DeepSpeed's docs/_tutorials/mixture-of-experts-nlg.md.
namespace loom {
namespace {

using arg_list::Add;
using arg_list::Args;
using arg_list::Cat;
using arg_list::ModelRef;
using Messages = std::vector<std::string>;
using Json = nlohmann::ordered_json;

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
            "parallelism off (\"Sequence Parallel not tested\", megatron/arguments.py); drop --sp, or "
            "use --schedule 1f1b");
      }
      return;
    case ScheduleKind::kInterleaved:
      out.push_back(
          "--schedule interleaved: DeepSpeed's pipeline engine runs one model chunk per stage and has no "
          "virtual stages; use --schedule 1f1b --vpp 1, or --emit megatron");
      return;
    case ScheduleKind::kGpipe:
      out.push_back(
          "--schedule gpipe: DeepSpeed's pipeline engine runs its 1F1B TrainSchedule, not GPipe; use "
          "--schedule 1f1b: the same bubble with at most p micro-batches of activations in flight");
      return;
    case ScheduleKind::kZbV:
      out.push_back(
          "--schedule zb-v: DeepSpeed (through Megatron-DeepSpeed) has only ZB-H1; ZB-V is in the "
          "Megatron-LM "
          "fork sail-sg/zero-bubble-pipeline-parallelism; run that fork, or use --schedule zb-h1 or 1f1b");
      return;
    case ScheduleKind::kDualPipeV:
      out.push_back(
          "--schedule dualpipev: DeepSpeed has no DualPipeV; its reference implementation is "
          "deepseek-ai/DualPipe, wired into a training loop by hand; use --schedule zb-h1 or 1f1b");
      return;
  }
}

void CheckParallelism(const Strategy& s, Messages& out) {
  if (s.cp > 1) {
    out.push_back(Cat("--cp ", s.cp,
                      ": DeepSpeed has no ring or all-gather context parallelism; its sequence parallelism "
                      "(DeepSpeed-Ulysses, Megatron-DeepSpeed's --ds-sequence-parallel-size) exchanges "
                      "attention heads by all-to-all, which loom does not simulate; use --emit megatron, or "
                      "--cp 1"));
  }
  if (s.first_stage_layers > 0 || s.last_stage_layers > 0) {
    out.push_back(
        Cat("--first-stage-layers ", s.first_stage_layers, " --last-stage-layers ", s.last_stage_layers,
            ": Megatron-DeepSpeed splits the transformer layers evenly over the stages "
            "(PipelineModule partition_method \"type:transformer\"); use 0 for both, or --emit megatron"));
  }
  // deepspeed/runtime/pipe/engine.py, PipelineEngine.__init__.
  if (s.pp > 1 && s.zero_stage >= 2) {
    out.push_back(Cat("--zero ", s.zero_stage, " with --pp ", s.pp,
                      ": DeepSpeed's pipeline engine asserts \"ZeRO-2 and ZeRO-3 are incompatible with "
                      "pipeline parallelism\"; use --zero 1, or --pp 1"));
  }
  if (s.overlap_grad_reduce && s.pp > 1) {
    out.push_back(
        Cat("--overlap-grad-reduce with --pp ", s.pp,
            ": DeepSpeed's pipeline engine reduces gradients after the step's last backward (its "
            "ReduceGrads instruction), not during it; drop --overlap-grad-reduce, or --emit megatron"));
  }
  if (s.overlap_param_gather && s.zero_stage < 3) {
    out.push_back(
        Cat("--overlap-param-gather with --zero ", s.zero_stage,
            ": DeepSpeed gathers the updated weights inside the optimizer step below ZeRO-3 and only "
            "ZeRO-3 prefetches them under compute; use --zero 3, drop --overlap-param-gather, or "
            "--emit megatron"));
  }
  if (s.tp_comm_overlap) {
    out.push_back(
        "--tp-comm-overlap: Megatron-DeepSpeed has no overlap of tensor-parallel communication with the "
        "GEMMs (that is Transformer Engine's userbuffers under Megatron-LM); drop it, or --emit megatron");
  }
}

void CheckPrecisionAndOptimizer(const Strategy& s, Messages& out) {
  if (s.dtype == Dtype::kFp8) {
    out.push_back(
        "--dtype fp8: DeepSpeed's config has no fp8 training mode (fp8 GEMMs come from Transformer Engine "
        "inside the model, Megatron-LM's --fp8-format); use --dtype bf16, or --emit megatron");
  }
  if (s.grad_reduce_in_bf16 && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp8) {
    out.push_back(Cat("--grad-reduce-in-bf16 with --dtype ", kDtypeNames.Name(s.dtype),
                      ": gradients are reduced in bf16 only in bf16 training; use --dtype bf16, or drop "
                      "--grad-reduce-in-bf16"));
  }
  if (s.optimizer == Optimizer::kAdafactor) {
    out.push_back(
        "--optimizer adafactor: Megatron-DeepSpeed's --optimizer takes adam or sgd; use --optimizer "
        "adam or sgd");
  }
  if (s.offload != Offload::kNone && s.optimizer != Optimizer::kAdam) {
    out.push_back(Cat(
        "--offload ", kOffloadNames.Name(s.offload), " with --optimizer ", kOptimizerNames.Name(s.optimizer),
        ": DeepSpeed's ZeRO-Offload steps the optimizer with its CPU Adam (DeepSpeedCPUAdam, "
        "Megatron-DeepSpeed's --cpu-optimizer); other optimizers need \"zero_force_ds_cpu_optimizer\": "
        "false and run as plain PyTorch on the CPU; use --optimizer adam, or --offload none"));
  }
}

// Megatron-DeepSpeed's --checkpoint-activations checkpoints every layer, --checkpoint-num-layers at
// a time, through deepspeed.checkpointing.
void CheckRecompute(const Strategy& s, Messages& out) {
  if (s.recompute == Recompute::kSelective) {
    out.push_back(
        "--recompute selective: DeepSpeed's activation checkpointing recomputes whole layers; "
        "recomputing only attention (Korthikanti et al. 2022) is Megatron-LM's; use --recompute full, "
        "or --emit megatron");
  }
  if (s.recompute == Recompute::kFull && s.recompute_layers > 0) {
    out.push_back(
        Cat("--recompute-layers ", s.recompute_layers,
            ": Megatron-DeepSpeed checkpoints every layer; recomputing only some layers of each chunk is "
            "Megatron-LM's block method; use --recompute-layers 0, or --emit megatron"));
  }
}

// DeepSpeed-MoE places experts every --expert-interval layers, each as wide as the dense MLP, with
// no shared experts; expert groups are carved from the data-parallel group
// (deepspeed/utils/groups.py, _create_expert_and_data_parallel).
void CheckModel(const ModelSpec& model, const Strategy& s, Messages& out) {
  if (model.mla.has_value()) {
    out.push_back(Cat("kv_lora_rank of ", ModelRef(model),
                      ": Megatron-DeepSpeed has no multi-head latent attention; use --emit megatron "
                      "(--multi-latent-attention)"));
  }
  if (!model.moe.has_value()) return;
  const MoeSpec& moe = *model.moe;
  if (moe.num_shared_experts > 0) {
    out.push_back(Cat("n_shared_experts (", moe.num_shared_experts, ") of ", ModelRef(model),
                      ": DeepSpeed-MoE has no shared experts; use --emit megatron "
                      "(--moe-shared-expert-intermediate-size)"));
  }
  if (moe.first_dense_layers > 0) {
    out.push_back(
        Cat("first_k_dense_replace (", moe.first_dense_layers, ") of ", ModelRef(model),
            ": Megatron-DeepSpeed places experts every --expert-interval layers and cannot keep the "
            "first layers dense; use --emit megatron (--moe-layer-freq)"));
  }
  const int64_t etp = s.ExpertTp();
  if (etp != 1 && etp != s.tp) {
    out.push_back(Cat("--etp ", etp,
                      ": DeepSpeed-MoE splits each expert over the whole tp group "
                      "(--enable-expert-tensor-parallelism) or not at all; use --etp 1 or --etp ",
                      s.tp));
  }
  if (s.ep > 1 && s.dp % s.ep != 0) {
    out.push_back(Cat("--ep ", s.ep, " with --dp ", s.dp,
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
// gradient, fp32 for bf16 unless --grad-reduce-in-bf16, with ZeRO; the model dtype's .grad
// without). REQUIRES: strategy.grad_accumulation is DeepSpeedGradAccumulation(strategy).
void AddPrecision(const Strategy& s, Json& config) {
  if (s.dtype == Dtype::kBf16) config["bf16"] = {{"enabled", true}};
  if (s.dtype == Dtype::kFp16) config["fp16"] = {{"enabled", true}};
  if (s.dtype == Dtype::kBf16) config["communication_data_type"] = s.grad_reduce_in_bf16 ? "bf16" : "fp32";
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
  if (s.offload != Offload::kNone) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
  if (s.offload == Offload::kOptimizerAndParams) {
    zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
  }
  if (s.zero_stage == 3 && !s.overlap_param_gather) zero["stage3_prefetch_bucket_size"] = 0;
  config["zero_optimization"] = zero;
}

void AddActivationCheckpointing(const Strategy& s, Json& config) {
  if (s.recompute != Recompute::kFull) return;
  config["activation_checkpointing"] = {
      {"partition_activations", false},
      {"cpu_checkpointing", false},
      {"contiguous_memory_optimization", false},
      {"synchronize_checkpoint_boundary", false},
  };
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

// Megatron-DeepSpeed runs without DeepSpeed's pipeline engine under --no-pipeline-parallel, which
// ZeRO-2/3 need.
Args LauncherArgs(const ModelSpec& model, const Strategy& s) {
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
  if (s.dtype == Dtype::kBf16) Add(out, "--bf16");
  if (s.dtype == Dtype::kFp16) Add(out, "--fp16");
  Add(out, "--optimizer", s.optimizer == Optimizer::kSgd ? "sgd" : "adam");
  Add(out, "--zero-stage", s.zero_stage);
  if (s.offload != Offload::kNone) Add(out, "--cpu-optimizer");
  if (s.recompute == Recompute::kFull) {
    Add(out, "--checkpoint-activations");
    Add(out, "--checkpoint-num-layers", 1);
    Add(out, "--deepspeed-activation-checkpointing");
  }
  Add(out, "--deepspeed");
  Add(out, "--deepspeed_config", "ds_config.json");
  return out;
}

std::vector<std::string> Notes(const ModelSpec& model, const Strategy& s) {
  std::vector<std::string> notes = {
      Cat("train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp: ",
          s.global_batch, " = ", s.micro_batch, " * ", s.NumMicroBatches(), " * ", s.dp,
          ". DeepSpeed's \"number of GPUs\" there is the data-parallel size; launch tp * pp * dp = ",
          s.WorldSize(), " processes."),
      "launcher_args are for Megatron-DeepSpeed's pretrain_gpt.py (microsoft/Megatron-DeepSpeed): "
      "DeepSpeed's config has no tensor- or pipeline-parallel degree. Add the model-shape, data, "
      "tokenizer and learning-rate arguments of the run.",
      "optimizer.params (lr, betas, eps, weight_decay) are left out: DeepSpeed then uses the optimizer's "
      "defaults (lr 1e-3). Megatron-DeepSpeed passes its own optimizer, built from --optimizer and --lr, "
      "to deepspeed.initialize; a script that does not must add them.",
  };
  if (model.moe.has_value() && model.moe->expert_intermediate_size != model.intermediate_size) {
    notes.push_back(Cat("DeepSpeed-MoE experts are as wide as the dense MLP: pass --ffn-hidden-size ",
                        model.moe->expert_intermediate_size, " (the expert width of ", ModelRef(model),
                        ")."));
  }
  return notes;
}

}  // namespace

GradAccumulation DeepSpeedGradAccumulation(const Strategy& strategy) {
  return strategy.zero_stage >= 1 ? GradAccumulation::kAdd : GradAccumulation::kAutograd;
}

Result<DeepSpeedPlan> DeepSpeedConfig(const ModelSpec& model, const Strategy& strategy) {
  Messages problems;
  const GradAccumulation accumulation = DeepSpeedGradAccumulation(strategy);
  if (strategy.grad_accumulation != accumulation) {
    problems.push_back(Cat("--grad-accumulation ", kGradAccumulationNames.Name(strategy.grad_accumulation),
                           " with --zero ", strategy.zero_stage,
                           ": Megatron-DeepSpeed hands every weight gradient to autograd (its fused accumulation "
                           "is commented out) and DeepSpeed ",
                           strategy.zero_stage >= 1 ? "adds each micro-batch's gradients into ZeRO's accumulation "
                                                      "buffer"
                                                    : "without ZeRO steps on .grad as autograd sums it",
                           "; use --grad-accumulation ", kGradAccumulationNames.Name(accumulation),
                           " (or auto, which picks it for each ZeRO stage with --emit deepspeed)"));
  }
  CheckSchedule(strategy, problems);
  CheckParallelism(strategy, problems);
  CheckPrecisionAndOptimizer(strategy, problems);
  CheckRecompute(strategy, problems);
  CheckModel(model, strategy, problems);
  const int64_t per_step = strategy.micro_batch * strategy.dp;
  if (per_step < 1 || strategy.global_batch % per_step != 0) {
    problems.push_back(Cat("--global-batch ", strategy.global_batch,
                           ": DeepSpeed needs train_batch_size = "
                           "micro-batch * gradient_accumulation_steps * dp, and ",
                           strategy.global_batch, " is not a multiple of --micro-batch ",
                           strategy.micro_batch, " * --dp ", strategy.dp, "; use a multiple of ", per_step));
  }
  if (!problems.empty()) return Status::InvalidArgument(arg_list::JoinLines(problems));

  DeepSpeedPlan plan;
  plan.config = BatchConfig(strategy);
  AddPrecision(strategy, plan.config);
  AddOptimizer(strategy, plan.config);
  AddZero(strategy, plan.config);
  AddActivationCheckpointing(strategy, plan.config);
  plan.launcher_args = LauncherArgs(model, strategy);
  plan.notes = Notes(model, strategy);
  return plan;
}

}  // namespace loom
