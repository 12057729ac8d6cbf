#include "plan/deepspeed_config_in.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/formatted.h"
#include "plan/deepspeed_config.h"
#include "plan/deepspeed_partition.h"
#include "plan/launch_args.h"

// Flags follow megatron/arguments.py of microsoft/Megatron-DeepSpeed f4157bea; config keys and
// their defaults deepspeed/runtime/config.py, zero/config.py and engine.py of deepspeedai/DeepSpeed
// 38327e07f.
namespace loom {
namespace {

// The flags read into the strategy, the kernels or the checks below; every other flag is listed as
// not modelled.
const std::set<std::string, std::less<>>& MdsReadFlags() {
  static const std::set<std::string, std::less<>> kFlags = {
      "--tensor-model-parallel-size",
      "--pipeline-model-parallel-size",
      "--no-pipeline-parallel",
      "--sequence-parallel",
      "--enable-zbh1-pipeline",
      "--num-layers-per-virtual-pipeline-stage",
      "--ds-sequence-parallel-size",
      "--micro-batch-size",
      "--global-batch-size",
      "--seq-length",
      "--num-layers",
      "--hidden-size",
      "--ffn-hidden-size",
      "--num-attention-heads",
      "--num-key-value-heads",
      "--kv-channels",
      "--num-experts",
      "--moe-expert-parallel-size",
      "--topk",
      "--expert-interval",
      "--enable-expert-tensor-parallelism",
      "--moe-train-capacity-factor",
      "--disable-moe-token-dropping",
      "--create-moe-param-group",
      "--use-flash-attn",
      "--use-flash-attn-v1",
      "--use-flash-attn-v2",
      "--use-flash-attn-triton",
      "--use-flash-attn-builder",
      "--attention-dropout",
      "--hidden-dropout",
      "--bf16",
      "--fp16",
      "--fp8-hybrid",
      "--fp8-e4m3",
      "--transformer-impl",
      "--optimizer",
      "--cpu-optimizer",
      "--zero-stage",
      "--recompute-activations",
      "--recompute-granularity",
      "--recompute-method",
      "--recompute-num-layers",
      "--checkpoint-activations",
      "--checkpoint-num-layers",
      "--deepspeed-activation-checkpointing",
      "--partition-activations",
      "--checkpoint-in-cpu",
      "--deepspeed",
      "--deepspeed_config",
      "--deepspeed-config"};
  return kFlags;
}

// What the two files say, gathered before the strategy is made of it.
struct MdsReading {
  int64_t world = 0;
  bool pipeline_engine = true;  // DeepSpeed's PipelineEngine: without --no-pipeline-parallel
  bool bf16 = false;            // the config's bf16 (or bfloat16) enabled
  bool fp16 = false;
  std::optional<std::string> grad_accum_dtype;  // data_types.grad_accum_dtype, as DtypeEnum names
  std::optional<std::string> communication_dtype;
};

// DeepSpeed's DtypeEnum names (deepspeed/runtime/config_utils.py) as fp32, fp16 or bf16.
std::optional<std::string> MdsDtypeOf(const std::string& name) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"fp32", "fp32"},    {"float32", "fp32"}, {"float", "fp32"}, {"fp16", "fp16"},
      {"float16", "fp16"}, {"half", "fp16"},    {"bf16", "bf16"},  {"bfloat16", "bf16"}};
  const auto it = kNames.find(name);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

void ReadMdsParallelism(LaunchArgumentReader& r, MdsReading& reading, Strategy& s) {
  s.tp = r.Int("--tensor-model-parallel-size", 1);
  s.pp = r.Int("--pipeline-model-parallel-size", 1);
  reading.pipeline_engine = !r.Switch("--no-pipeline-parallel");
  if (!reading.pipeline_engine && s.pp > 1) {
    r.Error(StrCat("--no-pipeline-parallel with --pipeline-model-parallel-size ", s.pp,
                   ": Megatron-DeepSpeed asserts pp 1 without DeepSpeed's pipeline engine "
                   "(validate_args); drop one of them"));
  }
  s.sp = r.Switch("--sequence-parallel") && s.tp > 1;  // validate_args turns it off at tp 1
  if (r.Switch("--enable-zbh1-pipeline")) s.schedule = ScheduleKind::kZbH1;
  if (r.Has("--num-layers-per-virtual-pipeline-stage")) {
    r.Error(
        "--num-layers-per-virtual-pipeline-stage: DeepSpeed's pipeline engine runs one model chunk "
        "a stage; drop it (loom simulates virtual stages for Megatron-LM launches)");
  }
  if (r.Int("--ds-sequence-parallel-size", 1) > 1) {
    r.Error(
        "--ds-sequence-parallel-size: DeepSpeed-Ulysses exchanges attention heads by all-to-all, "
        "which loom does not simulate; drop it");
  }
  s.vpp = 1;
}

// DeepSpeed-MoE (DeepSpeed's docs/_tutorials/mixture-of-experts-nlg.md): the experts' flags against
// the model's, and their parallelism and capacity.
void ReadMdsExperts(LaunchArgumentReader& r, const ModelSpec& model, Strategy& s) {
  const auto it = r.Has("--num-experts") ? std::optional<int64_t>(r.Int("--num-experts", 1))
                                         : std::optional<int64_t>();
  const int64_t experts = model.moe ? model.moe->num_experts : 1;
  if (it.value_or(1) != experts) {
    r.Error(StrCat("--num-experts ", it.value_or(1), " builds another model than ", ModelRef(model),
                   " (", experts, " experts a layer); give the --model the launch trains"));
  }
  if (!model.moe) return;
  if (!it) {
    r.Error(StrCat("the arguments lack --num-experts ", experts, ", which ", ModelRef(model),
                   " needs; add it"));
  }
  const int64_t topk = r.Int("--topk", 1);
  if (topk != model.moe->experts_per_token) {
    r.Error(StrCat("--topk ", topk, " routes each token to another number of experts than ",
                   ModelRef(model), " (", model.moe->experts_per_token, "); fix it"));
  }
  if (const int64_t interval = r.Int("--expert-interval", 2); interval != 1) {
    r.Error(StrCat("--expert-interval ", interval,
                   " (Megatron-DeepSpeed's default is 2) puts "
                   "experts in every ",
                   interval, "th layer; ", ModelRef(model),
                   " has them in every layer: give --expert-interval 1"));
  }
  s.ep = r.Int("--moe-expert-parallel-size", 1);
  s.etp = s.tp > 1 && !r.Switch("--enable-expert-tensor-parallelism") ? 1 : 0;
  const std::optional<double> factor = r.Real("--moe-train-capacity-factor");
  // --disable-moe-token-dropping is store_false into moe_token_dropping.
  s.moe_capacity_factor = r.Switch("--disable-moe-token-dropping") ? 0.0 : factor.value_or(1.0);
  r.Switch("--create-moe-param-group");  // ZeRO's parameter groups: no cost in a step
}

// The attention kernel (ParallelAttention in megatron/model/transformer.py: CoreAttention unless a
// FlashAttention flag) and dropout (both rates 0.1 by default).
void ReadMdsKernels(LaunchArgumentReader& r, MegatronOptions& o, std::vector<std::string>& notes) {
  o.attention = AttentionKernel::kUnfused;
  if (r.Text("--transformer-impl").value_or("local") == "transformer_engine") {
    // Transformer Engine's TransformerLayer, with its own fused attention (ParallelTransformer's
    // build_layer); no FlashAttention flag reaches it.
    o.attention = AttentionKernel::kFused;
  } else if (r.Switch("--use-flash-attn-v2")) {
    o.attention = AttentionKernel::kFused;
    o.fused_family = AttentionFamily::kFlashAttention2;
  } else if (r.Switch("--use-flash-attn-triton")) {
    o.attention = AttentionKernel::kFused;
    o.fused_family = AttentionFamily::kTriton;
  } else if (r.Switch("--use-flash-attn") || r.Switch("--use-flash-attn-v1")) {
    o.attention = AttentionKernel::kFused;
    o.fused_family = AttentionFamily::kTriton;
    notes.push_back(
        "--use-flash-attn is FlashAttention 1.x, which loom simulates as the Triton port of it "
        "(--attention triton): about half FlashAttention-2's rate on an A100 (Dao 2023, Figure 4)");
  }
  if (r.Switch("--use-flash-attn-builder")) {
    r.Error(
        "--use-flash-attn-builder: DeepSpeed's op-builder FlashAttention is for accelerators other "
        "than NVIDIA's; use --use-flash-attn-v2");
  }
  o.dropout = ReadDropout(r, notes);
}

// Megatron-DeepSpeed checkpoints whole layers with --checkpoint-activations (DeepSpeed's
// checkpointing with --deepspeed-activation-checkpointing), some layers a stage with the block
// method, or the core attention with selective granularity (validate_args sets it for
// --recompute-activations).
void ReadMdsRecompute(LaunchArgumentReader& r, Strategy& s, std::vector<std::string>& notes) {
  s.recompute = r.Switch("--recompute-activations") ? Recompute::kSelective : Recompute::kNone;
  if (r.Switch("--checkpoint-activations")) {
    s.recompute = Recompute::kFull;
    if (const int64_t per = r.Int("--checkpoint-num-layers", 1); per != 1) {
      notes.push_back(StrCat("--checkpoint-num-layers ", per,
                             ": loom recomputes each layer on its own, the same recompute work "
                             "with a checkpoint a layer instead of one every ",
                             per));
    }
  } else if (std::optional<std::string> granularity = r.Text("--recompute-granularity")) {
    if (*granularity == "selective") {
      s.recompute = Recompute::kSelective;
    } else if (*granularity == "full") {
      s.recompute = Recompute::kFull;
      const std::string method = r.Text("--recompute-method").value_or("uniform");
      if (method == "block") {
        s.recompute_layers = r.Int("--recompute-num-layers", 1);
      } else if (method != "uniform") {
        r.Error("--recompute-method " + method + ": Megatron-DeepSpeed takes uniform or block");
      }
    } else {
      r.Error("--recompute-granularity " + *granularity +
              ": Megatron-DeepSpeed takes full or selective");
    }
  }
  r.Switch("--deepspeed-activation-checkpointing");
  if (r.Switch("--partition-activations") || r.Switch("--checkpoint-in-cpu")) {
    r.Error(
        "--partition-activations and --checkpoint-in-cpu split the checkpoints over the tp group "
        "or move them to the host, which loom does not simulate; drop them");
  }
}

// The model's shape flags, where given, against |model| (Megatron-DeepSpeed has no defaults for
// the first three; the MLP of DeepSpeed-MoE experts is --ffn-hidden-size wide).
void CheckMdsShape(LaunchArgumentReader& r, const ModelSpec& model,
                   std::vector<std::string>& notes) {
  const int64_t ffn = model.moe ? model.moe->expert_intermediate_size : model.intermediate_size;
  const std::pair<const char*, int64_t> shape[] = {{"--num-layers", model.num_layers},
                                                   {"--hidden-size", model.hidden_size},
                                                   {"--ffn-hidden-size", ffn},
                                                   {"--num-attention-heads", model.num_heads},
                                                   {"--num-key-value-heads", model.num_kv_heads},
                                                   {"--kv-channels", model.head_dim}};
  std::vector<std::string> absent;
  for (const auto& [flag, want] : shape) {
    if (!r.Has(flag)) {
      if (std::string_view(flag) == "--num-layers" || std::string_view(flag) == "--hidden-size")
        absent.push_back(flag);
      continue;
    }
    if (const int64_t given = r.Int(flag, want); given != want) {
      r.Error(StrCat(flag, " ", given, " builds another model than ", ModelRef(model), " (", flag,
                     " ", want, "); give the --model the launch trains, or fix the argument"));
    }
  }
  if (!absent.empty()) {
    notes.push_back(StrCat("the arguments lack ", absent.front(),
                           absent.size() > 1 ? " and " + absent.back() : "", ": loom simulates ",
                           ModelRef(model), "'s shape"));
  }
}

void ReadMdsPrecisionAndOptimizer(LaunchArgumentReader& r, const MdsReading& reading, Strategy& s) {
  const bool bf16 = r.Switch("--bf16"), fp16 = r.Switch("--fp16");
  if (bf16 != reading.bf16 || fp16 != reading.fp16) {
    r.Error(StrCat("the arguments say ",
                   bf16   ? "--bf16"
                   : fp16 ? "--fp16"
                          : "neither --bf16 nor --fp16",
                   " and the DeepSpeed config ",
                   reading.bf16   ? "bf16.enabled"
                   : reading.fp16 ? "fp16.enabled"
                                  : "neither bf16 nor fp16",
                   ": Megatron-DeepSpeed builds the model in the arguments' dtype and DeepSpeed "
                   "trains it in the config's; make them the same"));
  }
  s.dtype = fp16 ? Dtype::kFp16 : bf16 ? Dtype::kBf16 : Dtype::kFp32;
  const bool fp8 = r.Switch("--fp8-hybrid") || r.Switch("--fp8-e4m3");
  const std::string impl = r.Text("--transformer-impl").value_or("local");
  if (fp8) {
    if (impl != "transformer_engine") {
      r.Error(
          "--fp8-hybrid and --fp8-e4m3 need --transformer-impl transformer_engine "
          "(validate_args asserts it); add it");
    }
    if (!bf16) r.Error("--fp8-hybrid or --fp8-e4m3 without --bf16: loom simulates fp8 over bf16");
    s.dtype = Dtype::kFp8;
  }
  ReadOptimizerFlag(r, s);
}

// The batch: any two of train_batch_size, train_micro_batch_size_per_gpu and
// gradient_accumulation_steps give the third (DeepSpeedConfig._set_batch_related_parameters over
// the data-parallel size, the "world size" of a model-parallel run), and all three must make the
// equation (_batch_assertion). The arguments' --micro-batch-size and --global-batch-size, where
// given, must be the config's: Megatron-DeepSpeed feeds its data loader from them.
void ReadMdsBatch(JsonReader& c, LaunchArgumentReader& r, Strategy& s) {
  const auto number = [&](std::string_view key) -> std::optional<int64_t> {
    if (!c.Has(key)) return std::nullopt;
    return c.OptionalInt(key);
  };
  std::optional<int64_t> batch = number("train_batch_size");
  std::optional<int64_t> micro = number("train_micro_batch_size_per_gpu");
  std::optional<int64_t> steps = number("gradient_accumulation_steps");
  const int64_t dp = std::max<int64_t>(1, s.dp);
  if (!batch && !micro) {
    c.AddError("train_batch_size",
               "is absent, as is train_micro_batch_size_per_gpu; DeepSpeed needs one of them");
    return;
  }
  if (batch && micro && !steps) steps = *batch / *micro / dp;
  if (batch && steps && !micro) micro = *batch / dp / *steps;
  if (!batch) batch = *micro * steps.value_or(1) * dp;
  if (!micro) micro = *batch / dp, steps = 1;
  if (!steps) steps = 1;
  if (*micro < 1 || *steps < 1 || *batch != *micro * *steps * dp) {
    c.AddError("train_batch_size", StrCat(*batch, " is not train_micro_batch_size_per_gpu ", *micro,
                                          " * gradient_accumulation_steps ", *steps, " * dp ", dp,
                                          " (DeepSpeed asserts it); fix the batch keys"));
    return;
  }
  s.micro_batch = *micro;
  s.global_batch = *batch;
  for (const auto& [flag, value] : {std::pair<const char*, int64_t>{"--micro-batch-size", *micro},
                                    {"--global-batch-size", *batch}}) {
    if (r.Has(flag) && r.Int(flag, value) != value) {
      r.Error(StrCat(flag, " differs from the DeepSpeed config's ", value, " (",
                     std::string_view(flag) == "--micro-batch-size"
                         ? "train_micro_batch_size_per_gpu"
                         : "train_batch_size",
                     "): the data loader and the engine would disagree; make them the same"));
    }
  }
}

// zero_optimization (deepspeed/runtime/zero/config.py): stage 0 by default; overlap_comm off
// below stage 3 and on at it; ZeRO-3 prefetches parameters unless stage3_prefetch_bucket_size is 0.
void ReadMdsZero(JsonReader& c, LaunchArgumentReader& r, Strategy& s,
                 std::vector<std::string>& notes) {
  if (!c.Has("zero_optimization")) return;
  JsonReader& z = c.Object("zero_optimization");
  s.zero_stage = z.OptionalInt("stage", {0, 3}).value_or(0);
  // Both read at every stage, so that neither is listed as not modelled where it has no effect.
  const bool overlap = z.OptionalBool("overlap_comm").value_or(s.zero_stage == 3);
  const double prefetch = z.OptionalNonNegativeNumber("stage3_prefetch_bucket_size").value_or(5e7);
  s.overlap_grad_reduce = s.zero_stage >= 1 && overlap;
  s.overlap_param_gather = s.zero_stage == 3 && prefetch > 0;
  z.Allow("reduce_scatter");
  z.Allow("contiguous_gradients");
  const auto device = [&](std::string_view key) -> std::string {
    if (!z.Has(key)) return "none";
    JsonReader& o = z.Object(key);
    const std::string where = o.OptionalOneOf("device", {"none", "cpu", "nvme"}).value_or("none");
    o.Allow("pin_memory");
    if (where == "nvme") o.AddError("device", "nvme: loom simulates offload to the host; use cpu");
    return where;
  };
  const bool optimizer = device("offload_optimizer") == "cpu";
  const bool params = device("offload_param") == "cpu";
  if (params && !optimizer) {
    z.AddError("offload_param",
               "without offload_optimizer: loom simulates the parameters "
               "offloaded with the optimizer; offload both, or neither");
  }
  s.offload = params      ? Offload::kOptimizerAndParams
              : optimizer ? Offload::kOptimizer
                          : Offload::kNone;
  const bool cpu_adam = r.Switch("--cpu-optimizer");
  if (optimizer && !cpu_adam) {
    r.Error(
        "offload_optimizer without --cpu-optimizer: Megatron-DeepSpeed then hands DeepSpeed a GPU "
        "optimizer, which ZeRO-Offload refuses (zero_force_ds_cpu_optimizer); add --cpu-optimizer");
  } else if (cpu_adam && !optimizer) {
    r.Error(
        "--cpu-optimizer without zero_optimization.offload_optimizer.device cpu: the optimizer "
        "states would stay on the GPU for a CPU optimizer; offload them, or drop the flag");
  }
  if (r.Has("--zero-stage") && r.Int("--zero-stage", s.zero_stage, 0) != s.zero_stage) {
    notes.push_back(StrCat(
        "--zero-stage differs from zero_optimization.stage ", s.zero_stage,
        ": DeepSpeed runs the config's stage (pretrain_gpt.py reads --zero-stage only to build the "
        "model under deepspeed.zero.Init at stage 3)"));
  }
}

// The gradients' dtype: DeepSpeed sums bf16 gradients in bf16 (loom's 2-byte gradients,
// grad_reduce_in_bf16) except where an fp32 buffer holds them: BF16_Optimizer's, whose dtype is
// grad_accum_dtype (without ZeRO, or at ZeRO-1 without offload when it is fp32), and ZeRO-3's
// partitions of grad_accum_dtype (engine.py, _do_optimizer_sanity_check and get_data_types:
// grad_accum_dtype is fp32 by default for bf16 without ZeRO, the model dtype otherwise).
void ReadMdsGradientDtype(JsonReader& c, const MdsReading& reading, Strategy& s,
                          std::vector<std::string>& notes) {
  s.grad_accumulation = DeepSpeedGradAccumulation(s);
  if (!reading.bf16) return;
  const std::string accum = reading.grad_accum_dtype.value_or(s.zero_stage == 0 ? "fp32" : "bf16");
  bool fp32_sum = false;
  if (s.zero_stage == 0) {
    fp32_sum = accum == "fp32";
    if (!fp32_sum && !reading.pipeline_engine) {
      c.AddError("data_types",
                 "grad_accum_dtype bf16 without ZeRO and without the pipeline engine: DeepSpeed "
                 "raises NotImplementedError (the bf16 optimizer sums in fp32 there); use fp32");
    }
  } else if (s.zero_stage == 1) {
    fp32_sum = accum == "fp32" && s.offload == Offload::kNone;
  } else if (s.zero_stage == 3) {
    fp32_sum = accum == "fp32";
  }
  s.grad_reduce_in_bf16 = !fp32_sum;
  const std::string comm = reading.communication_dtype.value_or("bf16");
  if ((comm == "bf16") != s.grad_reduce_in_bf16) {
    notes.push_back(StrCat("communication_data_type ", comm,
                           reading.communication_dtype ? "" : " (DeepSpeed's default for bf16)",
                           ": DeepSpeed sums these gradients in ", fp32_sum ? "fp32" : "bf16",
                           " (ZeRO-", s.zero_stage,
                           "); loom reduces them in the dtype it sums them in"));
  }
}

// The precision keys of the config: bf16 (or its alias bfloat16) and fp16 {enabled}, and the
// gradient dtypes.
void ReadMdsConfigPrecision(JsonReader& c, MdsReading& reading) {
  const auto enabled = [&](std::string_view key) {
    if (!c.Has(key)) return false;
    return c.Object(key).OptionalBool("enabled").value_or(false);
  };
  const bool bf16 = enabled("bf16"), bfloat16 = enabled("bfloat16");  // its alias: read both
  reading.bf16 = bf16 || bfloat16;
  reading.fp16 = enabled("fp16");
  if (reading.bf16 && reading.fp16) c.AddError("fp16", "and bf16 are both enabled; enable one");
  const auto dtype = [&](JsonReader& o, std::string_view key) -> std::optional<std::string> {
    const std::optional<std::string> name = o.OptionalString(key);
    if (!name) return std::nullopt;
    std::optional<std::string> d = MdsDtypeOf(*name);
    if (!d)
      o.AddError(key, StrCat("\"", *name, "\" is not a dtype DeepSpeed takes; use fp32 or bf16"));
    return d;
  };
  reading.communication_dtype = dtype(c, "communication_data_type");
  if (c.Has("data_types"))
    reading.grad_accum_dtype = dtype(c.Object("data_types"), "grad_accum_dtype");
}

// activation_checkpointing (deepspeed/runtime/activation_checkpointing/config.py): loom simulates
// checkpoints of whole layers kept on the GPU, unpartitioned.
void ReadMdsActivationCheckpointing(JsonReader& c) {
  if (!c.Has("activation_checkpointing")) return;
  JsonReader& a = c.Object("activation_checkpointing");
  for (const char* key : {"partition_activations", "cpu_checkpointing"}) {
    if (a.OptionalBool(key).value_or(false)) {
      a.AddError(key, "true: loom simulates checkpoints kept whole on the GPU; set it false");
    }
  }
  a.Allow("contiguous_memory_optimization");
  a.Allow("synchronize_checkpoint_boundary");
}

}  // namespace

Result<MegatronLaunch> ReadMegatronDeepSpeedLaunch(const std::vector<std::string>& words,
                                                   const nlohmann::json& config,
                                                   const ModelSpec& model, int64_t world_size,
                                                   const MegatronDeepSpeedFiles& files) {
  LOOM_ASSIGN_OR_RETURN(LaunchArguments parsed, SplitLaunchArguments(words, files.args));
  MegatronLaunch launch;
  launch.launcher_world_size = parsed.launcher_world_size;
  launch.notes = parsed.notes;
  LaunchArgumentReader r(parsed.given, files.args);
  if (!r.Switch("--deepspeed")) {
    r.Error(
        "the arguments lack --deepspeed: Megatron-DeepSpeed runs without DeepSpeed (and its "
        "config) "
        "then; add it, or drop --deepspeed-config to read a Megatron-LM launch");
  }
  const auto file_name = [](const std::string& path) { return path.substr(path.rfind('/') + 1); };
  for (const char* flag : {"--deepspeed_config", "--deepspeed-config"}) {
    std::optional<std::string> named = r.Text(flag);
    if (named && file_name(*named) != file_name(files.config)) {
      launch.notes.push_back(StrCat(flag, " ", *named, ": loom read ", files.config,
                                    " in its place (--deepspeed-config)"));
    }
  }
  MdsReading reading;
  Strategy& s = launch.strategy;
  ReadMdsParallelism(r, reading, s);
  if (!r.Has("--seq-length")) r.Error("the arguments lack --seq-length; add it");
  s.seq_len = r.Int("--seq-length", 1);
  reading.world = launch.launcher_world_size.value_or(world_size);
  const __int128 product = static_cast<__int128>(s.tp) * s.pp;  // each at most 2^30
  if (reading.world <= 0) {
    r.Error(
        "neither the launch (torchrun's or deepspeed's --nnodes and --nproc_per_node, as numbers) "
        "nor the cluster says how many GPUs run it; give --nodes");
  } else if (product > reading.world || reading.world % static_cast<int64_t>(product) != 0) {
    r.Error(StrCat("tp ", s.tp, " x pp ", s.pp, " does not divide the ", reading.world,
                   " GPUs of the launch; Megatron-DeepSpeed makes the data-parallel size of what "
                   "is left"));
  } else {
    s.dp = reading.world / static_cast<int64_t>(product);
  }
  // DeepSpeed's PipelineModule splits the layers itself, unevenly where pp does not divide them.
  if (s.pp > 1 && model.num_layers % s.pp != 0)
    s.layout = MegatronDeepSpeedStageLayers(model, s.pp);
  ReadMdsExperts(r, model, s);
  ReadMdsKernels(r, launch.options, launch.notes);
  ReadMdsRecompute(r, s, launch.notes);
  CheckMdsShape(r, model, launch.notes);

  JsonReader c(config, files.config);
  ReadMdsConfigPrecision(c, reading);
  ReadMdsPrecisionAndOptimizer(r, reading, s);
  ReadMdsBatch(c, r, s);
  ReadMdsZero(c, r, s, launch.notes);
  ReadMdsActivationCheckpointing(c);
  if (c.Has("optimizer")) {
    JsonReader& o = c.Object("optimizer");
    if (std::optional<std::string> type = o.OptionalString("type")) {
      std::string lower = *type;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      const bool sgd = lower == "sgd";
      if (sgd != (s.optimizer == Optimizer::kSgd)) {
        launch.notes.push_back(
            StrCat("optimizer.type ", *type,
                   ": Megatron-DeepSpeed builds its own optimizer from "
                   "--optimizer and hands it to deepspeed.initialize; loom simulates that one"));
      }
    }
  }
  c.OptionalBool("zero_allow_untested_optimizer");
  if (c.Has("pipeline")) {
    JsonReader& p = c.Object("pipeline");
    p.OptionalBool("pipe_partitioned");
    p.OptionalBool("grad_partitioned");
  }
  ReadMdsGradientDtype(c, reading, s, launch.notes);
  if (reading.pipeline_engine && r.Text("--transformer-impl").value_or("local") != "local") {
    r.Error(
        "--transformer-impl transformer_engine under DeepSpeed's pipeline engine: GPTModelPipe "
        "builds Megatron-DeepSpeed's own layers there, without Transformer Engine (and without "
        "fp8); add --no-pipeline-parallel (pp 1)");
  }
  if (reading.pipeline_engine && s.pp == 1) {
    if (s.zero_stage >= 2) {
      r.Error(StrCat("ZeRO-", s.zero_stage,
                     " without --no-pipeline-parallel: DeepSpeed's pipeline engine (which "
                     "Megatron-DeepSpeed runs unless told not to) refuses ZeRO-2 and 3; add "
                     "--no-pipeline-parallel"));
    } else {
      launch.notes.push_back(
          "without --no-pipeline-parallel Megatron-DeepSpeed runs DeepSpeed's pipeline engine with "
          "one stage; loom simulates the step without it");
    }
  }
  const Status args_status = r.Finish();
  const Status config_status = c.Finish(UnknownKeys::kRejectTypos);
  if (!args_status.ok() || !config_status.ok()) {
    std::string message = args_status.ok() ? "" : args_status.message();
    if (!config_status.ok()) message += (message.empty() ? "" : "\n") + config_status.message();
    return Status::InvalidArgument(message);
  }

  // What DeepSpeed and Megatron-DeepSpeed cannot run as loom would simulate it, by the emitter's
  // rules: the reading must be a launch DeepSpeedConfig writes.
  DeepSpeedOptions options;
  options.attention = launch.options.attention;
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s, options);
  if (!plan.ok()) {
    return Status::InvalidArgument(
        StrCat(files.args, " with ", files.config,
               ": loom cannot simulate this launch as Megatron-DeepSpeed runs it:\n",
               plan.status().message()));
  }
  for (const std::string& flag : parsed.order) {
    if (!MdsReadFlags().count(flag)) launch.not_modelled.push_back(parsed.given.at(flag).Text());
  }
  for (const auto& [key, value] : c.UnreadKeys()) {
    launch.not_modelled.push_back(StrCat(files.config, ": ", key, " ", value->dump()));
  }
  return launch;
}

}  // namespace loom
