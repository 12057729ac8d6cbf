#include "plan/megatron_args_in.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "core/formatted.h"
#include "plan/launch_args.h"
#include "spec/pipeline_layout.h"

namespace loom {
namespace {

bool EndsWith(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// The flags MegatronModelArguments can write (megatron_args.cc: AddShape, AddMla, AddMoe): a model
// flag in the arguments that the model does not need is a model the launch builds differently.
const std::set<std::string, std::less<>>& ModelFlags() {
  static const std::set<std::string, std::less<>> kFlags = {"--num-layers",
                                                            "--hidden-size",
                                                            "--ffn-hidden-size",
                                                            "--num-attention-heads",
                                                            "--group-query-attention",
                                                            "--num-query-groups",
                                                            "--kv-channels",
                                                            "--max-position-embeddings",
                                                            "--position-embedding-type",
                                                            "--rotary-base",
                                                            "--use-rope-scaling",
                                                            "--rope-scaling-factor",
                                                            "--normalization",
                                                            "--norm-epsilon",
                                                            "--swiglu",
                                                            "--untie-embeddings-and-output-weights",
                                                            "--disable-bias-linear",
                                                            "--add-qkv-bias",
                                                            "--qk-layernorm",
                                                            "--rotary-percent",
                                                            "--multi-latent-attention",
                                                            "--q-lora-rank",
                                                            "--kv-lora-rank",
                                                            "--qk-head-dim",
                                                            "--qk-pos-emb-head-dim",
                                                            "--v-head-dim",
                                                            "--rope-type",
                                                            "--rotary-scaling-factor",
                                                            "--mscale",
                                                            "--mscale-all-dim",
                                                            "--no-rope-fusion",
                                                            "--window-size",
                                                            "--window-attn-skip-freq",
                                                            "--num-experts",
                                                            "--moe-ffn-hidden-size",
                                                            "--moe-router-topk",
                                                            "--moe-shared-expert-intermediate-size",
                                                            "--moe-shared-expert-gate",
                                                            "--moe-layer-freq",
                                                            "--moe-router-score-function",
                                                            "--moe-router-pre-softmax",
                                                            "--moe-router-num-groups",
                                                            "--moe-router-group-topk",
                                                            "--moe-router-enable-expert-bias",
                                                            "--moe-router-topk-scaling-factor",
                                                            "--moe-router-load-balancing-type",
                                                            "--moe-aux-loss-coeff"};
  return kFlags;
}

// Megatron-LM's default of a model flag where the arguments leave it out
// (megatron/training/arguments.py: _add_network_size_args and validate_args, which sets
// kv_channels to hidden / heads and ffn_hidden_size to 4 hidden); nullopt where it has none that
// loom compares.
std::optional<std::string> ModelFlagDefault(std::string_view flag, const ModelSpec& model) {
  if (flag == "--kv-channels") return std::to_string(model.hidden_size / model.num_heads);
  if (flag == "--ffn-hidden-size") return std::to_string(4 * model.hidden_size);
  if (flag == "--norm-epsilon") return "1e-05";
  if (flag == "--normalization") return "LayerNorm";
  if (flag == "--position-embedding-type") return "learned_absolute";
  if (flag == "--rotary-base") return "10000";
  if (flag == "--rotary-percent") return "1.0";
  return std::nullopt;
}

// The flags whose values make the strategy or the kernels; every other flag is not modelled.
const std::set<std::string, std::less<>>& StrategyFlags() {
  static const std::set<std::string, std::less<>> kFlags = {
      "--tensor-model-parallel-size",
      "--pipeline-model-parallel-size",
      "--num-virtual-stages-per-pipeline-rank",
      "--num-layers-per-virtual-pipeline-stage",
      "--pipeline-model-parallel-layout",
      "--decoder-first-pipeline-num-layers",
      "--decoder-last-pipeline-num-layers",
      "--microbatch-group-size-per-virtual-pipeline-stage",
      "--sequence-parallel",
      "--context-parallel-size",
      "--cp-comm-type",
      "--expert-model-parallel-size",
      "--expert-tensor-parallel-size",
      "--micro-batch-size",
      "--global-batch-size",
      "--seq-length",
      "--bf16",
      "--fp16",
      "--fp8-format",
      "--grad-reduce-in-bf16",
      "--optimizer",
      "--use-distributed-optimizer",
      "--use-megatron-fsdp",
      "--data-parallel-sharding-strategy",
      "--ckpt-format",
      "--optimizer-cpu-offload",
      "--optimizer-offload-fraction",
      "--use-precision-aware-optimizer",
      "--overlap-cpu-optimizer-d2h-h2d",
      "--no-gradient-accumulation-fusion",
      "--recompute-granularity",
      "--recompute-method",
      "--recompute-num-layers",
      "--recompute-activations",
      "--overlap-grad-reduce",
      "--overlap-param-gather",
      "--tp-comm-overlap",
      "--attention-backend",
      "--attention-dropout",
      "--hidden-dropout",
      "--moe-token-dispatcher-type",
      "--moe-expert-capacity-factor",
      "--transformer-impl"};
  return kFlags;
}

void ReadParallelism(LaunchArgumentReader& r, const ModelSpec& model, Strategy& s) {
  s.tp = r.Int("--tensor-model-parallel-size", 1);
  s.pp = r.Int("--pipeline-model-parallel-size", 1);
  s.cp = r.Int("--context-parallel-size", 1);
  s.sp = r.Switch("--sequence-parallel");
  s.vpp = r.Int("--num-virtual-stages-per-pipeline-rank", 1);
  if (r.Has("--num-layers-per-virtual-pipeline-stage")) {
    const int64_t per_chunk = r.Int("--num-layers-per-virtual-pipeline-stage", 1);
    if (model.num_layers % (per_chunk * s.pp) != 0) {
      r.Error(StrCat("--num-layers-per-virtual-pipeline-stage ", per_chunk, " with ",
                     model.num_layers, " layers on ", s.pp,
                     " stages is not a whole number of chunks a stage"));
    } else {
      s.vpp = model.num_layers / (per_chunk * s.pp);
    }
  }
  if (std::optional<std::string> layout = r.Text("--pipeline-model-parallel-layout")) {
    Result<std::vector<int64_t>> layers = ParsePipelineLayout(*layout, s.pp);
    if (!layers.ok()) {
      r.Error("--pipeline-model-parallel-layout: " + layers.status().message());
    } else {
      s.layout = *layers;
      s.vpp = static_cast<int64_t>(s.layout.size()) / s.pp;
    }
  }
  s.schedule = s.vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  s.first_stage_layers = r.Int("--decoder-first-pipeline-num-layers", 0, 0);
  s.last_stage_layers = r.Int("--decoder-last-pipeline-num-layers", 0, 0);
  const int64_t group = r.Int("--microbatch-group-size-per-virtual-pipeline-stage", 0, 0);
  s.microbatch_group = group == s.pp ? 0 : group;
  if (std::optional<std::string> comm = r.Text("--cp-comm-type")) {
    if (*comm == "p2p") {
      s.cp_comm = CpComm::kP2p;
    } else if (*comm == "allgather") {
      s.cp_comm = CpComm::kAllGather;
    } else {
      r.Error("--cp-comm-type " + *comm +
              ": loom simulates p2p (ring attention) and allgather context parallelism, not a2a "
              "or a2a+p2p; use one of those two");
    }
  }
  s.ep = r.Int("--expert-model-parallel-size", 1);
  s.etp = r.Int("--expert-tensor-parallel-size", 0, 0);
  if (s.etp == s.tp) s.etp = 0;
}

void ReadPrecisionAndOptimizer(LaunchArgumentReader& r, Strategy& s,
                               std::vector<std::string>& notes) {
  const bool bf16 = r.Switch("--bf16"), fp16 = r.Switch("--fp16");
  if (bf16 && fp16) r.Error("--bf16 and --fp16 are both given; give one");
  s.dtype = fp16 ? Dtype::kFp16 : bf16 ? Dtype::kBf16 : Dtype::kFp32;
  if (std::optional<std::string> format = r.Text("--fp8-format")) {
    if (!bf16) r.Error("--fp8-format " + *format + " without --bf16: loom simulates fp8 over bf16");
    s.dtype = Dtype::kFp8;
    if (*format != "hybrid") {
      notes.push_back("--fp8-format " + *format +
                      ": loom simulates fp8 GEMMs at one rate, whatever the format");
    }
  }
  s.grad_reduce_in_bf16 = r.Switch("--grad-reduce-in-bf16");
  ReadOptimizerFlag(r, s);
  const bool distributed = r.Switch("--use-distributed-optimizer");
  const bool fsdp = r.Switch("--use-megatron-fsdp");
  s.zero_stage = distributed ? 1 : 0;
  const std::string sharding = r.Text("--data-parallel-sharding-strategy").value_or("");
  if (fsdp) {
    if (sharding == "optim_grads") {
      s.zero_stage = 2;
    } else if (sharding == "optim_grads_params") {
      s.zero_stage = 3;
    } else {
      r.Error("--use-megatron-fsdp with --data-parallel-sharding-strategy '" + sharding +
              "': loom simulates optim_grads (ZeRO-2) and optim_grads_params (ZeRO-3); give one");
    }
  }
  r.Text("--ckpt-format");  // the checkpoint's file format: no cost in a step
  if (r.Switch("--optimizer-cpu-offload")) {
    s.offload = Offload::kOptimizer;
    const double fraction = r.Real("--optimizer-offload-fraction").value_or(1.0);
    if (fraction != 1.0) {
      r.Error(StrCat("--optimizer-offload-fraction ", fraction,
                     ": loom simulates the whole optimizer offloaded (1.0)"));
    }
  }
  r.Switch("--use-precision-aware-optimizer");
  r.Switch("--overlap-cpu-optimizer-d2h-h2d");
  s.grad_accumulation = r.Switch("--no-gradient-accumulation-fusion") ? GradAccumulation::kAdd
                                                                      : GradAccumulation::kFused;
}

void ReadRecomputeAndOverlap(LaunchArgumentReader& r, Strategy& s,
                             std::vector<std::string>& notes) {
  s.recompute = r.Switch("--recompute-activations") ? Recompute::kSelective : Recompute::kNone;
  if (std::optional<std::string> granularity = r.Text("--recompute-granularity")) {
    if (*granularity == "selective") {
      s.recompute = Recompute::kSelective;
    } else if (*granularity == "full") {
      s.recompute = Recompute::kFull;
      const std::string method = r.Text("--recompute-method").value_or("uniform");
      const int64_t layers = r.Int("--recompute-num-layers", 1);
      if (method == "block") {
        s.recompute_layers = layers;
      } else if (method != "uniform") {
        r.Error("--recompute-method " + method + ": Megatron-LM takes uniform or block");
      } else if (layers != 1) {
        notes.push_back(StrCat("--recompute-method uniform --recompute-num-layers ", layers,
                               ": loom recomputes each layer on its own (uniform 1), the same "
                               "recompute work with a checkpoint a layer instead of one every ",
                               layers));
      }
    } else {
      r.Error("--recompute-granularity " + *granularity + ": Megatron-LM takes full or selective");
    }
  }
  s.overlap_grad_reduce = r.Switch("--overlap-grad-reduce");
  s.overlap_param_gather = r.Switch("--overlap-param-gather");
  s.tp_comm_overlap = r.Switch("--tp-comm-overlap");
  if (std::optional<double> factor = r.Real("--moe-expert-capacity-factor")) {
    s.moe_capacity_factor = *factor;
  }
  if (std::optional<std::string> dispatcher = r.Text("--moe-token-dispatcher-type")) {
    if (*dispatcher != "alltoall") {
      notes.push_back("--moe-token-dispatcher-type " + *dispatcher +
                      ": loom simulates the all-to-all dispatcher");
    }
  }
}

// --attention-backend and the dropout rates (megatron/training/arguments.py: both rates 0.1 by
// default); --transformer-impl local is Megatron's own unfused core attention.
void ReadKernels(LaunchArgumentReader& r, MegatronOptions& o, std::vector<std::string>& notes) {
  const std::string backend = r.Text("--attention-backend").value_or("auto");
  const std::string impl = r.Text("--transformer-impl").value_or("transformer_engine");
  if (backend == "unfused" || backend == "local" || impl == "local") {
    o.attention = AttentionKernel::kUnfused;
  } else if (backend == "fused") {
    o.fused_family = AttentionFamily::kCudnn;
  } else if (backend == "flash") {
    o.fused_family = AttentionFamily::kFlashAttention2;
  } else if (backend != "auto") {
    r.Error("--attention-backend " + backend +
            ": Megatron-LM takes flash, fused, unfused, local or auto");
  }
  o.dropout = ReadDropout(r, notes);
}

// The model flags of |given| against those |model| needs (MegatronModelArguments).
void CheckModel(LaunchArgumentReader& r, const std::map<std::string, GivenFlag, std::less<>>& given,
                const std::vector<std::string>& needed_words, const ModelSpec& model) {
  std::map<std::string, std::vector<std::string>, std::less<>> needed;
  std::string current;
  for (const std::string& word : needed_words) {
    if (word.rfind("--", 0) == 0) {
      current = word;
      needed[current];
    } else {
      needed[current].push_back(word);
    }
  }
  const bool rotary = model.position == PositionKind::kRotary;
  for (const auto& [flag, values] : needed) {
    if (rotary && flag == "--max-position-embeddings") continue;  // no table to size
    const auto it = given.find(flag);
    if (it == given.end()) {
      const std::optional<std::string> fallback = ModelFlagDefault(flag, model);
      if (fallback && SameValues({*fallback}, values)) continue;
      std::string want = flag;
      for (const std::string& v : values) want += " " + v;
      r.Error(StrCat("the arguments lack ", want, ", which ", ModelRef(model),
                     " needs (Megatron-LM would build another model); add it, or give the --model "
                     "the launch trains"));
    } else if (!SameValues(it->second.values, values)) {
      std::string want = flag;
      for (const std::string& v : values) want += " " + v;
      r.Error(StrCat(it->second.Text(), " builds another model than ", ModelRef(model), " (", want,
                     "); give the --model the launch trains, or fix the argument"));
    }
  }
  for (const auto& [flag, g] : given) {
    if (!ModelFlags().count(flag) || needed.count(flag)) continue;
    const std::optional<std::string> fallback = ModelFlagDefault(flag, model);
    if (fallback && SameValues(g.values, {*fallback})) continue;
    r.Error(StrCat(g.Text(), " is not in ", ModelRef(model),
                   "'s arguments (Megatron-LM would build another model); give the --model the "
                   "launch trains, or drop it"));
  }
}

}  // namespace

Result<std::vector<std::string>> ShellWords(const std::string& text, const std::string& file) {
  std::vector<std::vector<std::string>> commands(1);
  std::string word;
  bool in_word = false;
  int line = 1;
  const auto end_word = [&] {
    if (in_word) commands.back().push_back(word);
    word.clear();
    in_word = false;
  };
  // `...` or $(...), outside single quotes: a value loom cannot know without running it.
  const auto substitution_at = [&](size_t k) {
    return text[k] == '`' || (text[k] == '$' && k + 1 < text.size() && text[k + 1] == '(');
  };
  const auto substitution_error = [&] {
    return Status::InvalidArgument(
        StrCat(file, ": line ", line,
               ": a command substitution; loom reads the arguments as written, so give its value"));
  };
  const auto end_command = [&] {
    end_word();
    if (!commands.back().empty()) commands.emplace_back();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i, ++line;
        continue;
      }
      if (i + 1 < text.size()) word += text[++i], in_word = true;
      continue;
    }
    if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string::npos) {
        return Status::InvalidArgument(StrCat(file, ": line ", line, ": a ' is never closed"));
      }
      line += static_cast<int>(std::count(text.begin() + i, text.begin() + close, '\n'));
      word += text.substr(i + 1, close - i - 1), in_word = true;
      i = close;
      continue;
    }
    if (c == '"') {
      in_word = true;
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\n') ++line;
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("$`\"\\\n").find(text[j + 1]) != std::string_view::npos) {
          if (text[j + 1] != '\n') word += text[j + 1];
          ++j;
          continue;
        }
        if (substitution_at(j)) return substitution_error();
        word += text[j];
      }
      if (j == text.size()) {
        return Status::InvalidArgument(StrCat(file, ": line ", line, ": a \" is never closed"));
      }
      i = j;
      continue;
    }
    if (substitution_at(i)) return substitution_error();
    if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (std::string_view(";&|<>\n").find(c) != std::string_view::npos) {
      end_command();
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      end_word();
      continue;
    }
    word += c, in_word = true;
  }
  end_command();
  for (auto it = commands.rbegin(); it != commands.rend(); ++it) {
    if (std::any_of(it->begin(), it->end(),
                    [](const std::string& w) { return EndsWith(w, ".py"); })) {
      return *it;
    }
  }
  std::vector<std::string> words;
  for (const std::vector<std::string>& command : commands) {
    words.insert(words.end(), command.begin(), command.end());
  }
  return words;
}

Result<MegatronLaunch> ReadMegatronArguments(const std::vector<std::string>& words,
                                             const ModelSpec& model, int64_t world_size,
                                             const std::string& file) {
  LOOM_ASSIGN_OR_RETURN(LaunchArguments parsed, SplitLaunchArguments(words, file));
  MegatronLaunch launch;
  launch.launcher_world_size = parsed.launcher_world_size;
  launch.notes = parsed.notes;
  const std::map<std::string, GivenFlag, std::less<>>& given = parsed.given;
  LaunchArgumentReader r(given, file);
  if (r.Has("--deepspeed")) {
    r.Error(
        "--deepspeed: a Megatron-DeepSpeed launch, whose batch, precision and ZeRO are in its "
        "DeepSpeed config; give that file with --deepspeed-config (the one --deepspeed_config "
        "names)");
  }
  Strategy& s = launch.strategy;
  ReadParallelism(r, model, s);
  s.micro_batch = r.Int("--micro-batch-size", 1);
  s.global_batch = r.Int("--global-batch-size", s.micro_batch);
  if (!r.Has("--seq-length")) r.Error("the arguments lack --seq-length; add it");
  s.seq_len = r.Int("--seq-length", 1);
  ReadPrecisionAndOptimizer(r, s, launch.notes);
  ReadRecomputeAndOverlap(r, s, launch.notes);
  ReadKernels(r, launch.options, launch.notes);
  const int64_t world = launch.launcher_world_size.value_or(world_size);
  // Each size is at most 2^30 (LaunchArgumentReader::kMaxValue): the product fits in 128 bits.
  const __int128 product = static_cast<__int128>(s.tp) * s.pp * s.cp;
  const int64_t model_parallel = product > world ? 0 : static_cast<int64_t>(product);
  if (world <= 0) {
    r.Error(
        "neither the launch (torchrun's --nnodes and --nproc_per_node, as numbers) nor the "
        "cluster says how many GPUs run it; give --nodes");
  } else if (model_parallel <= 0 || world % model_parallel != 0) {
    r.Error(StrCat("tp ", s.tp, " x pp ", s.pp, " x cp ", s.cp, " does not divide the ", world,
                   " GPUs of the launch", launch.launcher_world_size ? " (torchrun's)" : "",
                   "; Megatron-LM makes the data-parallel size of what is left"));
  } else {
    s.dp = world / model_parallel;
  }
  if (r.errors().empty()) {
    Result<std::vector<std::string>> needed = MegatronModelArguments(model, s, launch.options);
    if (!needed.ok()) return needed.status();
    CheckModel(r, given, *needed, model);
  }
  LOOM_RETURN_IF_ERROR(r.Finish());
  for (const std::string& flag : parsed.order) {
    if (!StrategyFlags().count(flag) && !ModelFlags().count(flag)) {
      launch.not_modelled.push_back(given.at(flag).Text());
    }
  }
  return launch;
}

}  // namespace loom
