#include "plan/megatron_args.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked.h"
#include "core/formatted.h"
#include "plan/arg_list.h"
#include "spec/pipeline_layout.h"

// Every flag below is checked against megatron/training/arguments.py of NVIDIA/Megatron-LM at the
// tags core_r0.12.0 ... core_v0.19.0 and main d98e8a64, with the flags that core_v0.16.0 and later
// generate from dataclass fields (ArgumentGroupFactory in megatron/training/argument_utils.py, over
// TransformerConfig and the other configs it is given); the functions cite the function of that
// file that declares their flags (before core_v0.16.0). Where a flag or a rule is younger than
// core_r0.12.0, kSince and the checks below name the first tag that has it.
namespace loom {
namespace {

using arg_list::Add;
using arg_list::Args;
using Messages = std::vector<std::string>;

// Mainline Megatron-LM runs 1F1B (forward_backward_pipelining_without_interleaving) and, with
// virtual stages, interleaved 1F1B (megatron/core/pipeline_parallel/schedules.py); nothing else.
void CheckMegatronSchedule(const Strategy& s, Messages& out) {
  switch (s.schedule) {
    case ScheduleKind::k1F1B:
    case ScheduleKind::kInterleaved:
      return;
    case ScheduleKind::kGpipe:
      out.push_back(
          "--schedule gpipe: Megatron-LM has no GPipe schedule (all forwards, then all backwards); "
          "its "
          "pipeline runs 1F1B, or interleaved 1F1B with virtual stages. Use --schedule 1f1b: the "
          "same "
          "bubble (p - 1) / (m + p - 1) with at most p micro-batches of activations in flight. "
          "--emit deepspeed does not help: DeepSpeed's pipeline engine runs 1F1B as well");
      return;
    case ScheduleKind::kZbH1:
      out.push_back(
          "--schedule zb-h1: mainline Megatron-LM has no zero-bubble schedule; ZB-H1 (Qi et al. "
          "2024) is "
          "in the Megatron-LM fork sail-sg/zero-bubble-pipeline-parallelism and in "
          "Megatron-DeepSpeed "
          "(--enable-zbh1-pipeline, which --emit deepspeed writes); use one of those, or "
          "--schedule "
          "1f1b or interleaved with --emit megatron");
      return;
    case ScheduleKind::kZbV:
      out.push_back(
          "--schedule zb-v: mainline Megatron-LM has no zero-bubble V schedule; ZB-V (Qi et al. "
          "2024) is "
          "in the Megatron-LM fork sail-sg/zero-bubble-pipeline-parallelism, and --emit deepspeed "
          "does "
          "not have it either; run that fork, or use --schedule interleaved with --emit megatron");
      return;
    case ScheduleKind::kDualPipeV:
      out.push_back(
          "--schedule dualpipev: DualPipeV (DeepSeek-V3 technical report) is not in Megatron-LM; "
          "its "
          "reference implementation, deepseek-ai/DualPipe, is wired into a training loop by hand, "
          "and "
          "--emit deepspeed does not have it either; use --schedule interleaved with --emit "
          "megatron");
      return;
  }
}

// Qwen2's biases: on the q, k and v projections only (--disable-bias-linear --add-qkv-bias).
bool QkvBiasOnly(const ModelSpec& model) {
  return model.attention_bias && !model.attention_output_bias && !model.mlp_bias;
}

// Architecture Megatron's GPT model cannot build (_add_network_size_args: gelu by default,
// --swiglu, --squared-relu, --quick-geglu; _add_training_args: --disable-bias-linear turns off the
// biases of every linear layer, --add-qkv-bias puts back only the QKV one).
void CheckArchitecture(const ModelSpec& model, Messages& out) {
  if (model.hidden_act == "relu") {
    out.push_back(
        StrCat("hidden_act \"relu\" of ", ModelRef(model),
               ": Megatron-LM's GPT has no plain-ReLU MLP (only gelu, --swiglu, --squared-relu "
               "and --quick-geglu); plan it with another framework, or use a gelu or silu model"));
  }
  const bool all_biases = model.attention_bias && model.attention_output_bias && model.mlp_bias;
  const bool no_biases = !model.attention_bias && !model.attention_output_bias && !model.mlp_bias;
  if (!all_biases && !no_biases && !QkvBiasOnly(model)) {
    out.push_back(StrCat(
        "attention_bias (", model.attention_bias ? "true" : "false", ") and mlp_bias (",
        model.mlp_bias ? "true" : "false", ") of ", ModelRef(model),
        ": Megatron-LM puts biases on every linear layer (its default), on none "
        "(--disable-bias-linear) or on the QKV projection only (--add-qkv-bias), never on "
        "the attention alone or the MLP alone; set both keys alike to plan an approximation"));
  }
  // --swiglu is the only gated MLP of _add_network_size_args (silu; --quick-geglu is a different,
  // clamped GeGLU of gpt-oss), so Gemma's gelu-gated MLP has no flag.
  if (model.mlp == MlpKind::kGated && model.hidden_act != "silu" && model.hidden_act != "swiglu") {
    out.push_back(
        StrCat("hidden_act \"", model.hidden_act, "\" with a gated MLP (", ModelRef(model),
               "): Megatron-LM's gated MLP is SwiGLU (--swiglu, silu), and emitting it would train "
               "another activation; plan it with another framework"));
  }
  if (model.norms_per_layer != 2 || !model.norm_weights) {
    out.push_back(StrCat(
        ModelRef(model),
        model.norm_weights ? " puts a norm after each block as well as before it (Gemma 2 and 3)"
                           : " has LayerNorms without weights (OLMo 1)",
        ": Megatron-LM's GPT layer has one weighted norm before attention and one before the "
        "MLP; plan it with another framework"));
  }
  // --qk-layernorm norms each head's queries and keys (TransformerConfig.qk_layernorm, a norm of
  // kv_channels); OLMo 2 norms the whole projection, which has no flag.
  const bool per_head_qk_norm =
      model.q_norm_width == model.head_dim && model.k_norm_width == model.head_dim;
  if ((model.q_norm_width > 0 || model.k_norm_width > 0) && !per_head_qk_norm) {
    out.push_back(StrCat(
        ModelRef(model), " norms its queries and keys over the whole projection (",
        model.q_norm_width, " and ", model.k_norm_width,
        " wide): Megatron-LM's --qk-layernorm norms each head; plan it with another framework"));
  }
  // Megatron's GPT layer runs attention, then the MLP on attention's output; GPT-NeoX's parallel
  // residual has no flag in _add_network_size_args.
  if (model.parallel_residual) {
    out.push_back(
        StrCat("use_parallel_residual of ", ModelRef(model),
               ": Megatron-LM's GPT layer is sequential (attention, then the MLP); plan it with "
               "another framework (GPT-NeoX trains it)"));
  }
}

std::string VersionName(MegatronVersion v) { return std::string(kMegatronVersionNames.Name(v)); }

// "--megatron-version X: <what> needs <since> or later (<why>); <fix>".
std::string TooOld(MegatronVersion have, MegatronVersion since, std::string_view what,
                   std::string_view why, std::string_view fix) {
  return StrCat("--megatron-version ", VersionName(have), ": ", what, " needs ", VersionName(since),
                " or later (", why, "); pass --megatron-version ", VersionName(since),
                " or later for a newer "
                "tree, or ",
                fix);
}

// Settings validate_args rejects, and loom settings Megatron-LM has no flag for.
void CheckSettings(const Strategy& s, const MegatronOptions& o, Messages& out) {
  if (s.optimizer == Optimizer::kAdafactor) {
    out.push_back(
        "--optimizer adafactor: Megatron-LM has no Adafactor (_add_training_args: --optimizer "
        "adam, sgd, "
        "and Muon in recent versions); use --optimizer adam or sgd");
  }
  if (s.offload == Offload::kOptimizerAndParams) {
    out.push_back(
        "--offload optimizer+params: Megatron-LM offloads optimizer states "
        "(--optimizer-cpu-offload) but "
        "not parameters; use --emit deepspeed (ZeRO-3 with offload_param), or --offload optimizer");
  }
  // megatron/training/arguments.py validate_args: optimizer offload asserts
  // --use-precision-aware-optimizer, and megatron/core/optimizer/optimizer_config.py
  // (OptimizerConfig.__post_init__) allows that only with adam, at every tag from core_r0.12.0.
  if (s.offload == Offload::kOptimizer && s.optimizer != Optimizer::kAdam) {
    out.push_back(
        StrCat("--offload optimizer with --optimizer ", kOptimizerNames.Name(s.optimizer),
               ": Megatron-LM's optimizer offload (--optimizer-cpu-offload) needs "
               "--use-precision-aware-optimizer, which optimizer_config.py allows with adam only; "
               "use --optimizer adam, or drop the offload"));
  }
  // Megatron-FSDP (--use-megatron-fsdp, --ckpt-format fsdp_dtensor): in arguments.py from
  // core_v0.14.0 (absent at core_v0.13.0, which had only --use-custom-fsdp).
  if (s.zero_stage >= 2 && o.version < MegatronVersion::kCore014) {
    out.push_back(TooOld(
        o.version, MegatronVersion::kCore014, StrCat("--zero ", s.zero_stage, " (Megatron-FSDP)"),
        "--use-megatron-fsdp and --ckpt-format fsdp_dtensor first appear in core_v0.14.0",
        "--fix zero_stage=1 (the distributed optimizer)"));
  }
  if (s.overlap_param_gather && s.zero_stage < 1) {
    out.push_back(
        StrCat("--overlap-param-gather with --zero ", s.zero_stage,
               ": Megatron-LM overlaps the parameter all-gather of its distributed optimizer or "
               "Megatron-FSDP, and plain data parallelism gathers nothing; use --zero 1 or more, "
               "or drop --overlap-param-gather"));
  }
  if (s.overlap_param_gather && !s.overlap_grad_reduce) {
    out.push_back(
        "--overlap-param-gather without --overlap-grad-reduce: Megatron-LM's validate_args "
        "requires both "
        "(\"Must use --overlap-param-gather with --overlap-grad-reduce\"); add "
        "--overlap-grad-reduce");
  }
  if (s.tp_comm_overlap && !s.sp) {
    out.push_back(
        "--tp-comm-overlap without --sp: Megatron-LM overlaps tensor-parallel communication with "
        "the "
        "GEMMs only under sequence parallelism (validate_args asserts it); add --sp");
  }
  // validate_args asserted "Expert parallelism is not supported with fp16 training." up to
  // core_v0.15.0; NVIDIA/Megatron-LM 4193f3aa ("remove fp16 assert in moe_grouped_gemm & EP",
  // December 2025) removed it, first in core_v0.16.0.
  if (s.ep > 1 && s.dtype == Dtype::kFp16 && o.version < MegatronVersion::kCore016) {
    out.push_back(TooOld(
        o.version, MegatronVersion::kCore016, StrCat("--ep ", s.ep, " with --dtype fp16"),
        "validate_args rejects expert parallelism with fp16 up to core_v0.15", "use --dtype bf16"));
  }
  if (s.grad_accumulation == GradAccumulation::kAutograd) {
    out.push_back(
        "--grad-accumulation autograd: Megatron-LM accumulates gradients in its main_grad buffer, "
        "fused into "
        "the weight-gradient GEMM (its default) or with main_grad.add_ "
        "(--no-gradient-accumulation-fusion); "
        "plain .grad accumulation was PyTorch DDP's (--DDP-impl torch), which Megatron-LM no "
        "longer has; "
        "use --grad-accumulation fused or add");
  }
  if (s.grad_reduce_in_bf16 && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp8) {
    out.push_back(
        StrCat("--grad-reduce-in-bf16 with --dtype ", kDtypeNames.Name(s.dtype),
               ": Megatron-LM applies it to bf16 training only (validate_args); use --dtype bf16 "
               "or fp8, or drop --grad-reduce-in-bf16"));
  }
}

// Megatron's MLA YaRN takes beta_fast, beta_slow and the original context from
// MLATransformerConfig's defaults (megatron/core/transformer/transformer_config.py, 32, 1 and 4096
// from core_v0.14.0), which no flag sets: --yarn-beta-fast and the like (core_v0.19.0) feed only
// non-MLA YaRN (_apply_yarn_config_from_args in megatron/training/argument_utils.py at d98e8a64).
constexpr double kMlaYarnBetaFast = 32;
constexpr double kMlaYarnBetaSlow = 1;
constexpr int64_t kMlaYarnOriginalContext = 4096;
// Llama 3 scaling in RotaryEmbedding._apply_scaling (megatron/core/models/common/embeddings/
// rotary_pos_embedding.py, core_r0.12.0 to d98e8a64): only the factor is a flag
// (--rope-scaling-factor); the frequency factors and original context are fixed at 1, 4 and 8192.
constexpr double kLlama3LowFreqFactor = 1;
constexpr double kLlama3HighFreqFactor = 4;
constexpr int64_t kLlama3OriginalContext = 8192;

void CheckRopeScaling(const ModelSpec& model, const MegatronOptions& o, Messages& out) {
  if (!model.rope_scaling.has_value()) return;
  const RopeScaling& rs = *model.rope_scaling;
  switch (rs.kind) {
    case RopeScalingKind::kLlama3:
      if (rs.low_freq_factor != kLlama3LowFreqFactor ||
          rs.high_freq_factor != kLlama3HighFreqFactor ||
          rs.original_max_position_embeddings != kLlama3OriginalContext) {
        out.push_back(StrCat(
            "rope_scaling of ", ModelRef(model), " (low_freq_factor ", rs.low_freq_factor,
            ", high_freq_factor ", rs.high_freq_factor, ", original_max_position_embeddings ",
            rs.original_max_position_embeddings,
            "): Megatron-LM's --use-rope-scaling fixes them at 1, 4 and 8192 "
            "(rotary_pos_embedding.py, _apply_scaling), so it would train a different model; "
            "plan it with another framework"));
      }
      return;
    case RopeScalingKind::kYarn:
      if (!model.mla.has_value()) {
        out.push_back(StrCat(
            "rope_scaling \"yarn\" of ", ModelRef(model),
            ": loom emits YaRN for multi-latent attention only (--rope-type yarn); Megatron-LM's "
            "YaRN for other attention (--position-embedding-type yarn, core_v0.19) is not "
            "emitted"));
      } else if (rs.beta_fast != kMlaYarnBetaFast || rs.beta_slow != kMlaYarnBetaSlow ||
                 rs.original_max_position_embeddings != kMlaYarnOriginalContext) {
        out.push_back(
            StrCat("rope_scaling of ", ModelRef(model), " (beta_fast ", rs.beta_fast,
                   ", beta_slow ", rs.beta_slow, ", original_max_position_embeddings ",
                   rs.original_max_position_embeddings,
                   "): Megatron-LM's MLA YaRN has no flag for them and uses 32, 1 and 4096 "
                   "(MLATransformerConfig), so it would train a different model"));
      } else if (o.version < MegatronVersion::kCore014) {
        out.push_back(TooOld(
            o.version, MegatronVersion::kCore014, StrCat("YaRN of ", ModelRef(model)),
            "before core_v0.14.0 MLA took YaRN's original context from --max-position-embeddings "
            "(multi_latent_attention.py), which validate_args keeps >= --seq-length; "
            "--rope-type arrives in 720c8b40",
            "plan it with --megatron-version core_v0.14 or later"));
      }
      return;
    case RopeScalingKind::kOther:
      out.push_back(StrCat(
          "rope_scaling \"", rs.type, "\" of ", ModelRef(model),
          ": Megatron-LM scales rotary positions the Llama 3 way (--use-rope-scaling) or with "
          "YaRN (MLA's --rope-type yarn) only; without it the launch would train a different "
          "model, so plan it with another framework"));
      return;
  }
}

// Model settings that Megatron-LM has no flag for: refused, since the launch would train another
// model than the file describes.
void CheckModelSettings(const ModelSpec& model, const MegatronOptions& o, Messages& out) {
  if (model.position == PositionKind::kRotary &&
      (model.rope_theta != std::floor(model.rope_theta) || model.rope_theta > 2e9)) {
    out.push_back(
        StrCat("rope_theta (", model.rope_theta, ") of ", ModelRef(model),
               ": Megatron-LM's --rotary-base is an integer (type=int in _add_network_size_args); "
               "plan it with another framework"));
  }
  CheckRopeScaling(model, o, out);
  if (!model.moe.has_value()) return;
  const MoeSpec& moe = *model.moe;
  // topk_softmax_with_capacity (megatron/core/transformer/moe/moe_utils.py): sigmoid scores are
  // always renormalised over the top k (for k > 1); softmax ones are, unless
  // --moe-router-pre-softmax.
  if (moe.score == RouterScore::kSigmoid && !moe.normalize_top_k && moe.experts_per_token > 1) {
    out.push_back(
        StrCat("norm_topk_prob false with scoring_func \"sigmoid\" of ", ModelRef(model),
               ": Megatron-LM's sigmoid router always renormalises the top-k weights "
               "(moe_utils.py, topk_softmax_with_capacity); plan it with another framework"));
  }
  // TransformerConfig.__post_init__: "moe_router_enable_expert_bias" needs the sigmoid score.
  if (moe.expert_bias && moe.score != RouterScore::kSigmoid) {
    out.push_back(StrCat(
        "topk_method \"noaux_tc\" with scoring_func \"softmax\" of ", ModelRef(model),
        ": Megatron-LM's expert bias (--moe-router-enable-expert-bias) needs the sigmoid score "
        "function (transformer_config.py); plan it with another framework"));
  }
}

// _add_distributed_args and _add_moe_args. Virtual stages are given as
// --num-virtual-stages-per-pipeline-rank, not --num-layers-per-virtual-pipeline-stage:
// validate_args accepts only the former together with --decoder-first/last-pipeline-num-layers.
}  // namespace

bool NeedsLayoutFlag(const ModelSpec& model, const Strategy& s) {
  if (!s.layout.empty()) return true;
  const std::vector<int64_t> layers = LayersPerVirtualStage(s, model.num_layers);
  for (int64_t stage = 0; stage < s.pp; ++stage) {
    for (int64_t chunk = 1; chunk < s.vpp; ++chunk) {
      if (layers[static_cast<size_t>(chunk * s.pp + stage)] != layers[static_cast<size_t>(stage)])
        return true;
    }
  }
  return false;
}

namespace {

void AddParallelism(const ModelSpec& model, const Strategy& s, Args& out) {
  Add(out, "--tensor-model-parallel-size", s.tp);
  Add(out, "--pipeline-model-parallel-size", s.pp);
  // A layout where --decoder-first/last-pipeline-num-layers cannot say it (an explicit one, or a
  // stage whose layers do not divide by vpp, which TransformerConfig refuses for those flags) is
  // --pipeline-model-parallel-layout, which sets the virtual stages itself: validate_args refuses
  // it beside --num-virtual-stages-per-pipeline-rank (megatron/training/arguments.py at d98e8a64).
  if (NeedsLayoutFlag(model, s)) {
    Add(out, "--pipeline-model-parallel-layout",
        PipelineLayoutText(LayersPerVirtualStage(s, model.num_layers)));
  } else {
    if (s.schedule == ScheduleKind::kInterleaved)
      Add(out, "--num-virtual-stages-per-pipeline-rank", s.vpp);
    if (s.first_stage_layers > 0)
      Add(out, "--decoder-first-pipeline-num-layers", s.first_stage_layers);
    if (s.last_stage_layers > 0)
      Add(out, "--decoder-last-pipeline-num-layers", s.last_stage_layers);
  }
  // ModelParallelConfig.microbatch_group_size_per_vp_stage (pp by default).
  if (s.schedule == ScheduleKind::kInterleaved && s.MicrobatchGroup() != s.pp) {
    Add(out, "--microbatch-group-size-per-virtual-pipeline-stage", s.MicrobatchGroup());
  }
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

// Sliding-window attention (_add_network_size_args from core_v0.15.0): --window-size (left,right)
// keys around each query, (window - 1, 0) for the window of Hugging Face's masks; with some layers
// at full attention, --window-attn-skip-freq N (layer number n, from 1, is windowed unless N
// divides it) or the per-layer list, 1 for a windowed layer (is_layer_window_attention in
// megatron/core/transformer/utils.py, NVIDIA/Megatron-LM d98e8a64).
void AddWindow(const ModelSpec& model, Args& out) {
  if (model.NumWindowedLayers() == 0) return;
  Add(out, "--window-size", StrCat("(", model.sliding_window - 1, ",0)"));
  if (model.NumWindowedLayers() == model.num_layers) return;
  const auto windowed = [&](int64_t layer) { return bool(model.windowed_layers[layer]); };
  for (int64_t every = 2; every <= model.num_layers; ++every) {
    bool matches = true;
    for (int64_t i = 0; i < model.num_layers && matches; ++i)
      matches = windowed(i) == ((i + 1) % every != 0);
    if (matches) {
      Add(out, "--window-attn-skip-freq", every);
      return;
    }
  }
  std::string list = "[";
  for (int64_t i = 0; i < model.num_layers; ++i)
    list += (i ? "," : "") + std::string(windowed(i) ? "1" : "0");
  Add(out, "--window-attn-skip-freq", list + "]");
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
  if (rotary) Add(out, "--rotary-base", static_cast<int64_t>(model.rope_theta));
  if (rotary && model.rope_scaling.has_value() &&
      model.rope_scaling->kind == RopeScalingKind::kLlama3) {
    Add(out, "--use-rope-scaling");
    Add(out, "--rope-scaling-factor", arg_list::ShortestDecimal(model.rope_scaling->factor));
  }
  Add(out, "--normalization", model.norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm");
  Add(out, "--norm-epsilon", arg_list::ShortestDecimal(model.norm_epsilon));
  if (model.mlp == MlpKind::kGated) Add(out, "--swiglu");
  if (!model.tie_word_embeddings) Add(out, "--untie-embeddings-and-output-weights");
  if (!model.attention_bias && !model.mlp_bias) Add(out, "--disable-bias-linear");
  if (QkvBiasOnly(model)) {
    Add(out, "--disable-bias-linear");
    Add(out, "--add-qkv-bias");
  }
  if (model.q_norm_width == model.head_dim && model.k_norm_width == model.head_dim) {
    Add(out, "--qk-layernorm");
  }
  if (rotary && model.rotary_fraction < 1) {
    Add(out, "--rotary-percent", arg_list::ShortestDecimal(model.rotary_fraction));
  }
  AddWindow(model, out);
}

// _add_regularization_args (--attention-dropout, --hidden-dropout: 0.1 by default at every tag)
// and _add_training_args (--attention-backend, core_r0.12.0 and later: auto, flash, fused,
// unfused, local). A simulation without dropout launches none. An unfused simulation launches
// Transformer Engine's unfused core attention (the backend sets NVTE_UNFUSED_ATTN=1,
// language_module.py); a fused one keeps Megatron's auto, under which Transformer Engine runs
// cuDNN's fused attention from Hopper on and FlashAttention on Ampere (get_attention_backend, as
// hardware/frameworks/megatron-core.json's fused_attention says), unless --attention named the
// kernel: cudnn launches --attention-backend fused (NVTE_FUSED_ATTN=1, NVTE_FLASH_ATTN=0), flash2
// --attention-backend flash (the reverse).
void AddAttentionAndDropout(const MegatronOptions& o, Args& out) {
  if (!o.dropout) {
    Add(out, "--attention-dropout", "0.0");
    Add(out, "--hidden-dropout", "0.0");
  }
  if (o.attention == AttentionKernel::kUnfused) {
    Add(out, "--attention-backend", "unfused");
  } else if (o.fused_family) {
    Add(out, "--attention-backend", *o.fused_family == AttentionFamily::kCudnn ? "fused" : "flash");
  }
}

// _add_moe_args (core_r0.12.0 to core_v0.15.0; TransformerConfig fields of the same names after),
// as topk_softmax_with_capacity in megatron/core/transformer/moe/moe_utils.py reads them: softmax
// over the top-k logits is Mixtral's renormalised top-k; --moe-router-pre-softmax is softmax over
// every expert without renormalising (norm_topk_prob false). Group-limited routing (b1022a32),
// the expert bias of auxiliary-loss-free balancing (c6e3b0c5) and the scaling factor all predate
// core_r0.12.0. The balance loss: aux_loss (Megatron's default type) or seq_aux_loss, with the
// coefficient of the file (Megatron's default is 0, no loss).
void AddRouter(const MoeSpec& moe, Args& out) {
  if (moe.score == RouterScore::kSigmoid) Add(out, "--moe-router-score-function", "sigmoid");
  if (moe.score == RouterScore::kSoftmax && !moe.normalize_top_k)
    Add(out, "--moe-router-pre-softmax");
  if (moe.router_groups > 0) {
    Add(out, "--moe-router-num-groups", moe.router_groups);
    Add(out, "--moe-router-group-topk", moe.router_group_top_k);
  }
  if (moe.expert_bias) Add(out, "--moe-router-enable-expert-bias");
  if (moe.routed_scaling_factor != 1.0) {
    Add(out, "--moe-router-topk-scaling-factor",
        arg_list::ShortestDecimal(moe.routed_scaling_factor));
  }
  if (moe.aux_loss_coeff > 0) {
    Add(out, "--moe-router-load-balancing-type",
        moe.sequence_aux_loss ? "seq_aux_loss" : "aux_loss");
    Add(out, "--moe-aux-loss-coeff", arg_list::ShortestDecimal(moe.aux_loss_coeff));
  }
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
        (CheckedInt(moe.num_shared_experts) * moe.shared_expert_intermediate_size).get();
    if (!shared.has_value()) {
      return Status::InvalidArgument(StrCat(
          ModelRef(model), ": the shared experts' width overflows 64 bits; fix the model file"));
    }
    Add(out, "--moe-shared-expert-intermediate-size", *shared);
    // Qwen2-MoE's sigmoid gate on the shared expert (SharedExpertMLP's gate, from core_v0.16.0).
    if (moe.shared_expert_gate) Add(out, "--moe-shared-expert-gate");
  }
  if (moe.first_dense_layers > 0) {
    Add(out, "--moe-layer-freq",
        StrCat("([0]*", moe.first_dense_layers, "+[1]*", model.num_layers - moe.first_dense_layers,
               ")"));
  }
  AddRouter(moe, out);
  if (s.ep > 1 || s.moe_capacity_factor > 0) Add(out, "--moe-token-dispatcher-type", "alltoall");
  if (s.moe_capacity_factor > 0) {
    Add(out, "--moe-expert-capacity-factor", arg_list::ShortestDecimal(s.moe_capacity_factor));
  }
  return Status::Ok();
}

// _add_network_size_args and _add_mla_args. Megatron's qk-head-dim is the part of a query/key head
// without rotary positions (q_head_dim = qk_head_dim + qk_pos_emb_head_dim); no --q-lora-rank
// projects queries directly, as q_lora_rank null does in Hugging Face's config.
// DeepSeek's latent projections are normalised (q_a_layernorm, kv_a_layernorm in
// modeling_deepseek.py); Megatron's MLA spec norms them only with --qk-layernorm
// (gpt_layer_specs.py, TELayerNormColumnParallelLinear for linear_q_up_proj and linear_kv_up_proj).
// At core_r0.12.0 TransformerConfig.__post_init__ raises "multi_latent_attention does not support
// apply_rope_fusion", and rope fusion is on by default: --no-rope-fusion there; 23e64715 (MLA RoPE
// fusion, June 2025) allows it from core_v0.13.0.
// YaRN: --rope-type (core_v0.14.0, 720c8b40) and the factor and mscales of _add_mla_args;
// --rotary-scaling-factor must be given, since its argparse default (1.0) replaces
// MLATransformerConfig's 40.
void AddMla(const ModelSpec& model, const MegatronOptions& o, Args& out) {
  if (!model.mla.has_value()) return;
  const MlaSpec& mla = *model.mla;
  Add(out, "--multi-latent-attention");
  if (mla.q_lora_rank > 0) Add(out, "--q-lora-rank", mla.q_lora_rank);
  Add(out, "--kv-lora-rank", mla.kv_lora_rank);
  Add(out, "--qk-head-dim", mla.qk_nope_head_dim);
  Add(out, "--qk-pos-emb-head-dim", mla.qk_rope_head_dim);
  Add(out, "--v-head-dim", mla.v_head_dim);
  Add(out, "--qk-layernorm");
  if (o.version < MegatronVersion::kCore013) Add(out, "--no-rope-fusion");
  const bool yarn =
      model.rope_scaling.has_value() && model.rope_scaling->kind == RopeScalingKind::kYarn;
  if (yarn && o.version >= MegatronVersion::kCore014) {
    Add(out, "--rope-type", "yarn");
    Add(out, "--rotary-scaling-factor", arg_list::ShortestDecimal(model.rope_scaling->factor));
    Add(out, "--mscale", arg_list::ShortestDecimal(model.rope_scaling->mscale));
    Add(out, "--mscale-all-dim", arg_list::ShortestDecimal(model.rope_scaling->mscale_all_dim));
  } else if (!yarn && o.version >= MegatronVersion::kCore014) {
    Add(out, "--rope-type", "rope");  // MLATransformerConfig's default is yarn
  }
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
    Add(out, "--data-parallel-sharding-strategy",
        s.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
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

Result<std::vector<std::string>> MegatronArguments(const ModelSpec& model, const Strategy& strategy,
                                                   const MegatronOptions& options) {
  Messages problems;
  CheckMegatronSchedule(strategy, problems);
  CheckArchitecture(model, problems);
  CheckModelSettings(model, options, problems);
  CheckSettings(strategy, options, problems);
  if (model.moe.has_value() && model.moe->shared_expert_gate &&
      options.version < MegatronVersion::kCore016) {
    problems.push_back(TooOld(options.version, MegatronVersion::kCore016,
                              StrCat("the shared expert's gate of ", ModelRef(model)),
                              "--moe-shared-expert-gate first appears in core_v0.16.0",
                              "plan it without --emit megatron"));
  }
  if (model.NumWindowedLayers() > 0 && options.version < MegatronVersion::kCore015) {
    problems.push_back(TooOld(options.version, MegatronVersion::kCore015,
                              StrCat("the sliding window of ", ModelRef(model)),
                              "--window-size and --window-attn-skip-freq first appear in "
                              "core_v0.15.0",
                              "plan it without --emit megatron"));
  }
  // --pipeline-model-parallel-layout: in arguments.py from core_v0.13.0 (absent at core_r0.12.0).
  if (options.version < MegatronVersion::kCore013 && strategy.pp > 0 && strategy.vpp > 0 &&
      NeedsLayoutFlag(model, strategy)) {
    problems.push_back(TooOld(options.version, MegatronVersion::kCore013,
                              "a pipeline layout with model chunks of unequal layers",
                              "--pipeline-model-parallel-layout first appears in core_v0.13.0",
                              "--fix vpp=1, or first and last stage layers that divide by vpp"));
  }
  if (!problems.empty()) return Status::InvalidArgument(arg_list::JoinLines(problems));

  Args args;
  AddParallelism(model, strategy, args);
  AddBatch(strategy, args);
  AddShape(model, strategy, args);
  AddAttentionAndDropout(options, args);
  AddMla(model, options, args);
  LOOM_RETURN_IF_ERROR(AddMoe(model, strategy, args));
  AddPrecision(strategy, args);
  AddOptimizer(strategy, args);
  AddRecompute(strategy, args);
  AddOverlap(strategy, args);
  return args;
}

Result<std::vector<std::string>> MegatronModelArguments(const ModelSpec& model,
                                                        const Strategy& strategy,
                                                        const MegatronOptions& options) {
  Args args;
  AddShape(model, strategy, args);
  AddMla(model, options, args);
  Strategy no_dispatch = strategy;
  no_dispatch.ep = 1;
  no_dispatch.moe_capacity_factor = 0;
  LOOM_RETURN_IF_ERROR(AddMoe(model, no_dispatch, args));
  return args;
}

std::vector<std::string> MegatronNotes(const ModelSpec& model, const MegatronOptions& options) {
  std::vector<std::string> notes;
  if (model.mtp_layers > 0) {
    notes.push_back(
        StrCat("num_nextn_predict_layers ", model.mtp_layers, " of ", ModelRef(model),
               ": the multi-token-prediction module is neither simulated nor emitted; add "
               "--mtp-num-layers ",
               model.mtp_layers, " to train it, at a cost the plan does not include"));
  }
  if (options.dropout) {
    notes.push_back(
        "--dropout: Megatron-LM's default rates apply (--attention-dropout 0.1, --hidden-dropout "
        "0.1); "
        "set the run's own");
  }
  return notes;
}

MegatronVersion MinimumMegatronVersion(const std::vector<std::string>& args) {
  MegatronVersion need = MegatronVersion::kCore012;
  const auto has = [&](std::string_view flag) {
    return std::find(args.begin(), args.end(), flag) != args.end();
  };
  // First tags, from arguments.py at each tag (see CheckSettings, CheckRopeScaling and AddMla).
  if (has("--pipeline-model-parallel-layout")) need = MegatronVersion::kCore013;
  if (has("--use-megatron-fsdp") || has("--rope-type")) need = MegatronVersion::kCore014;
  if (has("--fp16") && ValueOf(args, "--expert-model-parallel-size") > 1)
    need = MegatronVersion::kCore016;
  if (has("--window-size")) need = std::max(need, MegatronVersion::kCore015);
  if (has("--moe-shared-expert-gate")) need = std::max(need, MegatronVersion::kCore016);
  return need;
}

std::vector<EnvVariable> MegatronEnvironment(const std::vector<std::string>& args, Dtype dtype) {
  std::vector<EnvVariable> env;
  const bool fsdp = std::find(args.begin(), args.end(), "--use-megatron-fsdp") != args.end();
  if (!fsdp && (ValueOf(args, "--tensor-model-parallel-size") > 1 ||
                ValueOf(args, "--context-parallel-size") > 1)) {
    env.push_back({"CUDA_DEVICE_MAX_CONNECTIONS", "1"});
  }
  // PyTorch reads it at start-up and then allows TF32 in cuBLAS matmuls (torch/csrc/Context.cpp).
  if (dtype == Dtype::kTf32) env.push_back({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1"});
  return env;
}

std::string FormatMegatronCommand(const std::vector<std::string>& args,
                                  const MegatronOptions& options, Dtype dtype) {
  const bool unfused = options.attention == AttentionKernel::kUnfused;
  const bool fp32 = std::find(args.begin(), args.end(), "--bf16") == args.end() &&
                    std::find(args.begin(), args.end(), "--fp16") == args.end();
  std::string out =
      "# Megatron-LM pretrain_gpt.py: launch tp * pp * cp * dp processes and add the data, "
      "tokenizer,\n"
      "# learning-rate and checkpoint arguments of the run.\n";
  out += StrCat("# Needs Megatron-LM ", VersionName(MinimumMegatronVersion(args)),
                " or later (written for --megatron-version ", VersionName(options.version), ").\n");
  out += unfused ? "# Attention: Transformer Engine's unfused core attention (--attention-backend "
                   "unfused), as simulated.\n"
         : options.fused_family == AttentionFamily::kCudnn
             ? "# Attention: cuDNN's fused attention (--attention-backend fused), as simulated.\n"
         : options.fused_family
             ? "# Attention: FlashAttention (--attention-backend flash), as simulated at "
               "FlashAttention-2's rate.\n"
             : "# Attention: Megatron's default backend (auto): Transformer Engine runs cuDNN's "
               "fused attention\n"
               "# from Hopper on and FlashAttention on Ampere, as loom simulated.\n";
  if (fp32) {
    out += dtype == Dtype::kTf32
               ? "# TF32: Megatron-LM never enables it; TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 makes "
                 "PyTorch's matmuls TF32.\n"
               : "# fp32: Megatron-LM leaves PyTorch's TF32 switch off, so matmuls run in full "
                 "fp32, as simulated.\n";
  }
  for (const EnvVariable& v : MegatronEnvironment(args, dtype)) out += v.name + "=" + v.value + " ";
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
