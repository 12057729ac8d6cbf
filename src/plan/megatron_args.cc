#include "plan/megatron_args.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked.h"
#include "plan/arg_list.h"

// Every flag below is checked against megatron/training/arguments.py of NVIDIA/Megatron-LM
// (core_r0.12 and later); the functions cite the function of that file that declares their flags.
namespace loom {
namespace {

using arg_list::Add;
using arg_list::Args;
using arg_list::Cat;
using arg_list::ModelRef;
using Messages = std::vector<std::string>;

// Mainline Megatron-LM runs 1F1B (forward_backward_pipelining_without_interleaving) and, with
// virtual stages, interleaved 1F1B (megatron/core/pipeline_parallel/schedules.py); nothing else.
void CheckSchedule(const Strategy& s, Messages& out) {
  switch (s.schedule) {
    case ScheduleKind::k1F1B:
    case ScheduleKind::kInterleaved:
      return;
    case ScheduleKind::kGpipe:
      out.push_back(
          "--schedule gpipe: Megatron-LM has no GPipe schedule (all forwards, then all backwards); its "
          "pipeline runs 1F1B, or interleaved 1F1B with virtual stages. Use --schedule 1f1b: the same "
          "bubble (p - 1) / (m + p - 1) with at most p micro-batches of activations in flight. "
          "--emit deepspeed does not help: DeepSpeed's pipeline engine runs 1F1B as well");
      return;
    case ScheduleKind::kZbH1:
      out.push_back(
          "--schedule zb-h1: mainline Megatron-LM has no zero-bubble schedule; ZB-H1 (Qi et al. 2024) is "
          "in the Megatron-LM fork sail-sg/zero-bubble-pipeline-parallelism and in Megatron-DeepSpeed "
          "(--enable-zbh1-pipeline, which --emit deepspeed writes); use one of those, or --schedule "
          "1f1b or interleaved with --emit megatron");
      return;
    case ScheduleKind::kZbV:
      out.push_back(
          "--schedule zb-v: mainline Megatron-LM has no zero-bubble V schedule; ZB-V (Qi et al. 2024) is "
          "in the Megatron-LM fork sail-sg/zero-bubble-pipeline-parallelism, and --emit deepspeed does "
          "not have it either; run that fork, or use --schedule interleaved with --emit megatron");
      return;
    case ScheduleKind::kDualPipeV:
      out.push_back(
          "--schedule dualpipev: DualPipeV (DeepSeek-V3 technical report) is not in Megatron-LM; its "
          "reference implementation, deepseek-ai/DualPipe, is wired into a training loop by hand, and "
          "--emit deepspeed does not have it either; use --schedule interleaved with --emit megatron");
      return;
  }
}

// Architecture Megatron's GPT model cannot build (_add_network_size_args: gelu by default,
// --swiglu, --squared-relu, --quick-geglu; _add_training_args: --disable-bias-linear turns off the
// biases of every linear layer, --add-qkv-bias puts back only the QKV one).
void CheckArchitecture(const ModelSpec& model, Messages& out) {
  if (model.hidden_act == "relu") {
    out.push_back(Cat("hidden_act \"relu\" of ", ModelRef(model),
                      ": Megatron-LM's GPT has no plain-ReLU MLP (only gelu, --swiglu, --squared-relu "
                      "and --quick-geglu); plan it with another framework, or use a gelu or silu model"));
  }
  if (model.attention_bias != model.mlp_bias) {
    out.push_back(Cat("attention_bias (", model.attention_bias ? "true" : "false", ") and mlp_bias (",
                      model.mlp_bias ? "true" : "false", ") of ", ModelRef(model),
                      ": Megatron-LM puts biases on every linear layer (its default), on none "
                      "(--disable-bias-linear) or on the QKV projection only (--add-qkv-bias), never on "
                      "the attention alone or the MLP alone; set both keys alike to plan an approximation"));
  }
}

// Settings validate_args rejects, and loom settings Megatron-LM has no flag for.
void CheckSettings(const Strategy& s, Messages& out) {
  if (s.optimizer == Optimizer::kAdafactor) {
    out.push_back(
        "--optimizer adafactor: Megatron-LM has no Adafactor (_add_training_args: --optimizer adam, sgd, "
        "and Muon in recent versions); use --optimizer adam or sgd");
  }
  if (s.offload == Offload::kOptimizerAndParams) {
    out.push_back(
        "--offload optimizer+params: Megatron-LM offloads optimizer states (--optimizer-cpu-offload) but "
        "not parameters; use --emit deepspeed (ZeRO-3 with offload_param), or --offload optimizer");
  }
  if (s.overlap_param_gather && s.zero_stage < 1) {
    out.push_back(Cat("--overlap-param-gather with --zero ", s.zero_stage,
                      ": Megatron-LM overlaps the parameter all-gather of its distributed optimizer or "
                      "Megatron-FSDP, and plain data parallelism gathers nothing; use --zero 1 or more, "
                      "or drop --overlap-param-gather"));
  }
  if (s.overlap_param_gather && !s.overlap_grad_reduce) {
    out.push_back(
        "--overlap-param-gather without --overlap-grad-reduce: Megatron-LM's validate_args requires both "
        "(\"Must use --overlap-param-gather with --overlap-grad-reduce\"); add --overlap-grad-reduce");
  }
  if (s.tp_comm_overlap && !s.sp) {
    out.push_back(
        "--tp-comm-overlap without --sp: Megatron-LM overlaps tensor-parallel communication with the "
        "GEMMs only under sequence parallelism (validate_args asserts it); add --sp");
  }
  if (s.ep > 1 && s.dtype == Dtype::kFp16) {
    out.push_back(Cat("--ep ", s.ep,
                      " with --dtype fp16: Megatron-LM's validate_args rejects expert parallelism with "
                      "fp16 training; use --dtype bf16"));
  }
  if (s.grad_accumulation == GradAccumulation::kAutograd) {
    out.push_back(
        "--grad-accumulation autograd: Megatron-LM accumulates gradients in its main_grad buffer, fused into "
        "the weight-gradient GEMM (its default) or with main_grad.add_ (--no-gradient-accumulation-fusion); "
        "plain .grad accumulation was PyTorch DDP's (--DDP-impl torch), which Megatron-LM no longer has; "
        "use --grad-accumulation fused or add");
  }
  if (s.grad_reduce_in_bf16 && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp8) {
    out.push_back(Cat("--grad-reduce-in-bf16 with --dtype ", kDtypeNames.Name(s.dtype),
                      ": Megatron-LM applies it to bf16 training only (validate_args); use --dtype bf16 "
                      "or fp8, or drop --grad-reduce-in-bf16"));
  }
}

// _add_distributed_args and _add_moe_args. Virtual stages are given as
// --num-virtual-stages-per-pipeline-rank, not --num-layers-per-virtual-pipeline-stage: validate_args
// accepts only the former together with --decoder-first/last-pipeline-num-layers.
void AddParallelism(const ModelSpec& model, const Strategy& s, Args& out) {
  Add(out, "--tensor-model-parallel-size", s.tp);
  Add(out, "--pipeline-model-parallel-size", s.pp);
  if (s.schedule == ScheduleKind::kInterleaved) Add(out, "--num-virtual-stages-per-pipeline-rank", s.vpp);
  if (s.first_stage_layers > 0) Add(out, "--decoder-first-pipeline-num-layers", s.first_stage_layers);
  if (s.last_stage_layers > 0) Add(out, "--decoder-last-pipeline-num-layers", s.last_stage_layers);
  if (s.sp) Add(out, "--sequence-parallel");
  Add(out, "--context-parallel-size", s.cp);
  if (s.cp > 1) Add(out, "--cp-comm-type", s.cp_comm == CpComm::kP2p ? "p2p" : "allgather");
  if (model.moe.has_value()) {
    Add(out, "--expert-model-parallel-size", s.ep);
    Add(out, "--expert-tensor-parallel-size", s.ExpertTp());
  }
}

// _add_training_args and _add_data_args.
void AddBatch(const Strategy& s, Args& out) {
  Add(out, "--micro-batch-size", s.micro_batch);
  Add(out, "--global-batch-size", s.global_batch);
  Add(out, "--seq-length", s.seq_len);
}

// _add_network_size_args and _add_training_args (--disable-bias-linear). validate_args requires
// max_position_embeddings >= seq_length; rotary positions have no table, so the bound is raised
// to the sequence when it is longer.
void AddShape(const ModelSpec& model, const Strategy& s, Args& out) {
  Add(out, "--num-layers", model.num_layers);
  Add(out, "--hidden-size", model.hidden_size);
  Add(out, "--ffn-hidden-size", model.intermediate_size);
  Add(out, "--num-attention-heads", model.num_heads);
  if (!model.mla.has_value()) {
    if (model.num_kv_heads != model.num_heads) {
      Add(out, "--group-query-attention");
      Add(out, "--num-query-groups", model.num_kv_heads);
    }
    Add(out, "--kv-channels", model.head_dim);
  }
  const bool rotary = model.position == PositionKind::kRotary;
  Add(out, "--max-position-embeddings",
      rotary ? std::max(model.max_position_embeddings, s.seq_len) : model.max_position_embeddings);
  Add(out, "--position-embedding-type", rotary ? "rope" : "learned_absolute");
  Add(out, "--normalization", model.norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm");
  if (model.mlp == MlpKind::kGated) Add(out, "--swiglu");
  if (!model.tie_word_embeddings) Add(out, "--untie-embeddings-and-output-weights");
  if (!model.attention_bias && !model.mlp_bias) Add(out, "--disable-bias-linear");
}

// _add_moe_args. Leading dense layers are a --moe-layer-freq pattern (1 = MoE, 0 = dense) as long
// as the model. The shared-expert size is the total over the shared experts. A capacity factor
// needs the alltoall dispatcher (TransformerConfig.__post_init__ in megatron/core/transformer/
// transformer_config.py rejects it with the others up to at least core_r0.12), which is also the
// one arguments.py recommends with expert parallelism.
Status AddMoe(const ModelSpec& model, const Strategy& s, Args& out) {
  if (!model.moe.has_value()) return Status::Ok();
  const MoeSpec& moe = *model.moe;
  Add(out, "--num-experts", moe.num_experts);
  Add(out, "--moe-ffn-hidden-size", moe.expert_intermediate_size);
  Add(out, "--moe-router-topk", moe.experts_per_token);
  if (moe.num_shared_experts > 0) {
    const std::optional<int64_t> shared =
        (CheckedInt(moe.num_shared_experts) * moe.expert_intermediate_size).get();
    if (!shared.has_value()) {
      return Status::InvalidArgument(Cat(ModelRef(model),
                                         ": n_shared_experts * moe_intermediate_size overflows "
                                         "64 bits; fix the model file"));
    }
    Add(out, "--moe-shared-expert-intermediate-size", *shared);
  }
  if (moe.first_dense_layers > 0) {
    Add(out, "--moe-layer-freq",
        Cat("([0]*", moe.first_dense_layers, "+[1]*", model.num_layers - moe.first_dense_layers, ")"));
  }
  if (s.ep > 1 || s.moe_capacity_factor > 0) Add(out, "--moe-token-dispatcher-type", "alltoall");
  if (s.moe_capacity_factor > 0) {
    Add(out, "--moe-expert-capacity-factor", arg_list::ShortestDecimal(s.moe_capacity_factor));
  }
  return Status::Ok();
}

// _add_network_size_args and _add_mla_args. Megatron's qk-head-dim is the part of a query/key head
// without rotary positions (q_head_dim = qk_head_dim + qk_pos_emb_head_dim); no --q-lora-rank
// projects queries directly, as q_lora_rank null does in Hugging Face's config.
void AddMla(const ModelSpec& model, Args& out) {
  if (!model.mla.has_value()) return;
  const MlaSpec& mla = *model.mla;
  Add(out, "--multi-latent-attention");
  if (mla.q_lora_rank > 0) Add(out, "--q-lora-rank", mla.q_lora_rank);
  Add(out, "--kv-lora-rank", mla.kv_lora_rank);
  Add(out, "--qk-head-dim", mla.qk_nope_head_dim);
  Add(out, "--qk-pos-emb-head-dim", mla.qk_rope_head_dim);
  Add(out, "--v-head-dim", mla.v_head_dim);
}

// _add_mixed_precision_args and _add_transformer_engine_args. FP8 runs Transformer Engine's
// hybrid format (E4M3 forward, E5M2 backward) over bf16 parameters. fp32 and tf32 need no flag:
// fp32 parameters are Megatron-LM's default, and TF32 is PyTorch's matmul setting, not Megatron's.
void AddPrecision(const Strategy& s, Args& out) {
  switch (s.dtype) {
    case Dtype::kBf16:
      Add(out, "--bf16");
      break;
    case Dtype::kFp16:
      Add(out, "--fp16");
      break;
    case Dtype::kFp8:
      Add(out, "--bf16");
      Add(out, "--fp8-format", "hybrid");
      break;
    case Dtype::kTf32:
    case Dtype::kFp32:
      break;
  }
  if (s.grad_reduce_in_bf16) Add(out, "--grad-reduce-in-bf16");
}

// _add_training_args (--optimizer, --optimizer-cpu-offload, --no-gradient-accumulation-fusion)
// and _add_distributed_args. ZeRO-1 is the distributed optimizer; ZeRO-2 and -3 are
// Megatron-FSDP's optim_grads and optim_grads_params sharding, with the distributed optimizer and
// --ckpt-format fsdp_dtensor (megatron/core/distributed/README.md; docs/user-guide/features/
// megatron_fsdp.md). Megatron-FSDP keeps weight-gradient accumulation fusion on by default
// ("Used by default and can be deactivated with --no-gradient-accumulation-fusion", that guide's
// feature table; validate_args only warns), so the flag follows the strategy's accumulation alone:
// add is --no-gradient-accumulation-fusion (_add_training_args, store_false into
// gradient_accumulation_fusion, megatron/training/arguments.py at NVIDIA/Megatron-LM d98e8a64; the
// flag dates from 83b1e42f, February 2022). Emitting it for every ZeRO-2/3 plan would launch
// main_grad.add_ accumulation where the simulation costed the fused one.
// Optimizer offload is the hybrid CPU optimizer with the flags of
// megatron/core/optimizer/cpu_offloading/README.md.
void AddOptimizer(const Strategy& s, Args& out) {
  Add(out, "--optimizer", s.optimizer == Optimizer::kSgd ? "sgd" : "adam");
  if (s.zero_stage >= 2) {
    Add(out, "--use-megatron-fsdp");
    Add(out, "--data-parallel-sharding-strategy", s.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
  }
  if (s.grad_accumulation == GradAccumulation::kAdd) Add(out, "--no-gradient-accumulation-fusion");
  if (s.zero_stage >= 2) Add(out, "--ckpt-format", "fsdp_dtensor");
  if (s.zero_stage >= 1) Add(out, "--use-distributed-optimizer");
  if (s.offload == Offload::kOptimizer) {
    Add(out, "--optimizer-cpu-offload");
    Add(out, "--optimizer-offload-fraction", "1.0");
    Add(out, "--use-precision-aware-optimizer");
    Add(out, "--overlap-cpu-optimizer-d2h-h2d");
  }
}

// _add_training_args. Selective recomputes core attention (Korthikanti et al. 2022), Megatron's
// default --recompute-modules. Full recomputes the first N layers of each model chunk (block) or,
// for every layer, each layer on its own (uniform, 1).
void AddRecompute(const Strategy& s, Args& out) {
  if (s.recompute == Recompute::kSelective) {
    Add(out, "--recompute-granularity", "selective");
  } else if (s.recompute == Recompute::kFull) {
    Add(out, "--recompute-granularity", "full");
    if (s.recompute_layers > 0) {
      Add(out, "--recompute-method", "block");
      Add(out, "--recompute-num-layers", s.recompute_layers);
    } else {
      Add(out, "--recompute-method", "uniform");
      Add(out, "--recompute-num-layers", 1);
    }
  }
}

// _add_distributed_args (--overlap-grad-reduce, --overlap-param-gather) and _add_training_args
// (--tp-comm-overlap).
void AddOverlap(const Strategy& s, Args& out) {
  if (s.overlap_grad_reduce) Add(out, "--overlap-grad-reduce");
  if (s.overlap_param_gather) Add(out, "--overlap-param-gather");
  if (s.tp_comm_overlap) Add(out, "--tp-comm-overlap");
}

// The value after |flag| in |args|, or 1 when it is absent or not a number.
int64_t ValueOf(const Args& args, std::string_view flag) {
  const auto it = std::find(args.begin(), args.end(), flag);
  if (it == args.end() || std::next(it) == args.end()) return 1;
  int64_t value = 1;
  const std::string& text = *std::next(it);
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// |token| single-quoted when the shell would otherwise expand or split it.
std::string ShellQuoted(const std::string& token) {
  constexpr std::string_view kSafe = "-_./=:,+@%";
  const bool safe = !token.empty() && std::all_of(token.begin(), token.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || kSafe.find(c) != std::string_view::npos;
  });
  if (safe) return token;
  std::string out = "'";
  for (char c : token) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Result<std::vector<std::string>> MegatronArguments(const ModelSpec& model, const Strategy& strategy) {
  Messages problems;
  CheckSchedule(strategy, problems);
  CheckArchitecture(model, problems);
  CheckSettings(strategy, problems);
  if (!problems.empty()) return Status::InvalidArgument(arg_list::JoinLines(problems));

  Args args;
  AddParallelism(model, strategy, args);
  AddBatch(strategy, args);
  AddShape(model, strategy, args);
  AddMla(model, args);
  LOOM_RETURN_IF_ERROR(AddMoe(model, strategy, args));
  AddPrecision(strategy, args);
  AddOptimizer(strategy, args);
  AddRecompute(strategy, args);
  AddOverlap(strategy, args);
  return args;
}

std::string FormatMegatronCommand(const std::vector<std::string>& args) {
  const bool fsdp = std::find(args.begin(), args.end(), "--use-megatron-fsdp") != args.end();
  const bool one_connection = !fsdp && (ValueOf(args, "--tensor-model-parallel-size") > 1 ||
                                        ValueOf(args, "--context-parallel-size") > 1);
  std::string out =
      "# Megatron-LM pretrain_gpt.py: launch tp * pp * cp * dp processes and add the data, tokenizer,\n"
      "# learning-rate and checkpoint arguments of the run.\n";
  out += one_connection ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "";
  out += "torchrun --nproc_per_node=$GPUS_PER_NODE --nnodes=$NNODES --node_rank=$NODE_RANK \\\n";
  out += "    --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT \\\n";
  out += "    pretrain_gpt.py";
  for (const std::string& token : args) {
    const bool flag = token.rfind("--", 0) == 0;
    out += flag ? " \\\n    " : " ";
    out += ShellQuoted(token);
  }
  return out + "\n";
}

}  // namespace loom
