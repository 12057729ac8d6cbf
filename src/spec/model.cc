#include "spec/model.h"

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "spec/hub_cache.h"
#include "spec/model_family.h"
#include "spec/model_reader.h"

namespace loom {
namespace {

using model_reader::kEpsilonRange;
using model_reader::kExpertRange;
using model_reader::kHeadRange;
using model_reader::kLayerRange;
using model_reader::kMlpRange;
using model_reader::kPositionRange;
using model_reader::kRopeFactorRange;
using model_reader::kRopeThetaRange;
using model_reader::kVocabRange;
using model_reader::kWidthRange;
using model_reader::Quote;
using model_reader::ReadMoe;
using model_reader::ReadSlidingWindow;

constexpr std::string_view kModelSchema = "loom.model/1";

struct Activation {
  std::string_view name;
  MlpKind mlp;
};

// Hugging Face ACT2FN names loom accepts. The gated kinds have a third (gate) matrix:
// SwiGLU, Shazeer 2020 "GLU Variants Improve Transformer", as in Llama and Mixtral.
// These kinds decide the MLP only for a file without a known model_type: Gemma's gated MLP runs
// gelu_pytorch_tanh (GemmaMLP), so a known model_type decides it (spec/model_family.h).
constexpr Activation kActivations[] = {
    {"gelu", MlpKind::kPlain},
    {"gelu_new", MlpKind::kPlain},
    {"gelu_pytorch_tanh", MlpKind::kPlain},
    {"gelu_fast", MlpKind::kPlain},
    {"relu", MlpKind::kPlain},
    {"silu", MlpKind::kGated},
    {"swiglu", MlpKind::kGated},
};

std::string ActivationChoices() {
  std::string out;
  for (const Activation& a : kActivations)
    out += (out.empty() ? "\"" : ", \"") + std::string(a.name) + "\"";
  return out;
}

// Keys that rules between keys depend on; nullopt where absent or invalid (already reported),
// so that a bad value is reported once and not again by every rule that uses it.
struct RuleInputs {
  std::optional<int64_t> hidden;
  std::optional<int64_t> heads;
  std::optional<int64_t> kv_heads;
  std::optional<int64_t> head_dim;
  std::optional<int64_t> layers;
};

// Required integer in |range|: nullopt, with the error recorded, when missing or invalid.
std::optional<int64_t> RequiredInt(JsonReader& r, std::string_view key, IntRange range = {}) {
  if (!r.Has(key)) {
    (void)r.Int(key, range);  // records "is missing; add ..."
    return std::nullopt;
  }
  return r.OptionalInt(key, range);
}

void ReadHeader(JsonReader& r) {
  std::optional<std::string> schema = r.OptionalString("schema");
  if (schema && *schema != kModelSchema) {
    r.AddError("schema", "is " + Quote(*schema) + "; this loom reads " + Quote(kModelSchema) +
                             " (or a Hugging Face config.json without \"schema\")");
  }
  // Where a loom-authored file's numbers come from (a paper, a table); not used.
  (void)r.OptionalString("loom_source");
}

RuleInputs ReadDimensions(JsonReader& r, ModelSpec* m) {
  RuleInputs in;
  in.hidden = RequiredInt(r, "hidden_size", kWidthRange);
  in.heads = RequiredInt(r, "num_attention_heads", kHeadRange);
  in.kv_heads = r.OptionalInt("num_key_value_heads", kHeadRange);
  in.head_dim = r.OptionalInt("head_dim", kWidthRange);
  in.layers = RequiredInt(r, "num_hidden_layers", kLayerRange);
  m->hidden_size = in.hidden.value_or(1);
  m->num_heads = in.heads.value_or(1);
  m->num_kv_heads = in.kv_heads.value_or(m->num_heads);
  m->num_layers = in.layers.value_or(1);
  m->intermediate_size = r.Int("intermediate_size", kMlpRange);
  m->vocab_size = r.Int("vocab_size", kVocabRange);
  m->max_position_embeddings = r.Int("max_position_embeddings", kPositionRange);
  if (in.heads && in.kv_heads && *in.heads % *in.kv_heads != 0) {
    r.AddError("num_key_value_heads",
               "(" + std::to_string(*in.kv_heads) + ") does not divide num_attention_heads (" +
                   std::to_string(*in.heads) +
                   "); each key/value head serves a whole group of query heads");
  }
  return in;
}

// head_dim as given, else hidden_size / num_attention_heads (Hugging Face's default).
void ResolveHeadDim(JsonReader& r, const RuleInputs& in, ModelSpec* m) {
  if (in.head_dim) {
    m->head_dim = *in.head_dim;
    return;
  }
  if (r.Has("head_dim") || !in.hidden || !in.heads) return;  // already reported
  if (*in.hidden % *in.heads == 0) {
    m->head_dim = *in.hidden / *in.heads;
  } else if (m->mla) {
    m->head_dim = m->mla->v_head_dim;  // MLA sizes its heads by its own keys
  } else {
    r.AddError("head_dim", "is missing and hidden_size (" + std::to_string(*in.hidden) +
                               ") is not divisible by num_attention_heads (" +
                               std::to_string(*in.heads) +
                               "); add \"head_dim\": <width of one attention head>");
  }
}

// The activation: Gemma's hidden_activation overrides hidden_act (GemmaConfig); a known family
// supplies the default and decides the MLP's gating, the activation name decides it otherwise.
void ReadActivation(JsonReader& r, const std::optional<ModelFamily>& family, ModelSpec* m) {
  r.Allow("hidden_act");
  std::optional<std::string> name = r.OptionalString("hidden_activation");
  std::string key = "hidden_activation";
  if (!r.Has("hidden_activation")) {
    name = r.OptionalString("hidden_act");
    key = "hidden_act";
  }
  if (!r.Has(key) && family) name = std::string(family->activation);
  if (!r.Has(key) && !family) {
    r.AddError("hidden_act", "is missing; add \"hidden_act\" with one of " + ActivationChoices());
    return;
  }
  if (!name) return;
  for (const Activation& a : kActivations) {
    if (a.name == *name) {
      m->hidden_act = *name;
      m->mlp = family ? family->mlp : a.mlp;
      return;
    }
  }
  r.AddError(key,
             "is " + Quote(*name) + "; loom knows " + ActivationChoices() +
                 " (without a known model_type, gelu and relu kinds: 2-matrix MLP; silu, swiglu: "
                 "gated 3-matrix MLP)");
}

// The norm's epsilon key says which norm a Hugging Face model uses; there is no safe default.
void ReadNorm(JsonReader& r, const std::optional<ModelFamily>& family, ModelSpec* m) {
  std::optional<double> eps;
  for (std::string_view key : {"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon"}) {
    std::optional<double> value = r.OptionalPositiveNumber(key, kEpsilonRange);
    if (value) eps = value;
  }
  m->norm_epsilon = eps.value_or(m->norm_epsilon);
  bool rms = r.Has("rms_norm_eps");
  bool layer = r.Has("layer_norm_eps") || r.Has("layer_norm_epsilon");
  if (family) {
    m->norm_weights = family->norm_weights;
    m->norms_per_layer = family->norms_per_layer;
  }
  if (!rms && !layer && family && family->norm) {  // OLMo 1: a fixed LayerNorm, no epsilon key
    m->norm = *family->norm;
    return;
  }
  if (rms && layer) {
    r.AddError("rms_norm_eps",
               "and layer_norm_eps/layer_norm_epsilon are both set; keep only the one "
               "of the model's norm (rms_norm_eps: RMSNorm, layer_norm_eps: LayerNorm)");
  } else if (!rms && !layer) {
    r.AddError("rms_norm_eps",
               "is missing, and so are layer_norm_eps and layer_norm_epsilon; add "
               "\"rms_norm_eps\": 1e-5 for RMSNorm (Llama) or \"layer_norm_eps\": 1e-5 "
               "for LayerNorm (GPT)");
  }
  m->norm = layer && !rms ? NormKind::kLayerNorm : NormKind::kRmsNorm;
}

// Megatron's position_embedding_type; without it, rope_theta implies rotary positions.
void ReadPosition(JsonReader& r, const std::optional<ModelFamily>& family, ModelSpec* m) {
  m->rope_theta = r.OptionalPositiveNumber("rope_theta", kRopeThetaRange).value_or(m->rope_theta);
  if (family && family->model_type == "gpt_neox") {
    // GPTNeoXConfig (transformers models/gpt_neox/configuration_gpt_neox.py): rotary_emb_base,
    // rotary_pct = 0.25 and use_parallel_residual = True by default. Neither changes a count or a
    // FLOP loom charges; a framework that emits the model must say them (plan/megatron_args.cc).
    m->rope_theta =
        r.OptionalPositiveNumber("rotary_emb_base", kRopeThetaRange).value_or(m->rope_theta);
    m->rotary_fraction = r.OptionalPositiveNumber("rotary_pct", {1e-3, 1.0}).value_or(0.25);
    m->parallel_residual = r.OptionalBool("use_parallel_residual").value_or(true);
  }
  if (r.Has("partial_rotary_factor")) {  // Phi, StableLM, GLM and others
    m->rotary_fraction =
        r.OptionalPositiveNumber("partial_rotary_factor", {1e-3, 1.0}).value_or(1.0);
  }
  std::optional<std::string> name = r.OptionalString("position_embedding_type");
  if (r.Has("position_embedding_type")) {
    if (!name) return;  // wrong type, already reported
    std::optional<PositionKind> kind = kPositionNames.Parse(*name);
    if (kind) {
      m->position = *kind;
    } else {
      r.AddError("position_embedding_type",
                 "is " + Quote(*name) + "; it must be one of " + kPositionNames.Choices());
    }
  } else if (r.Has("rope_theta")) {
    m->position = PositionKind::kRotary;
  } else if (family) {
    m->position = family->position;
  } else {
    r.AddError("position_embedding_type",
               "is missing and there is no rope_theta; add "
               "\"position_embedding_type\": \"rope\" or \"learned_absolute\"");
  }
}

// rope_scaling: null, or Llama 3.1's "llama3" or DeepSeek's "yarn" scaling of the rotary
// frequencies (transformers' modeling_rope_utils.py: _compute_llama3_parameters,
// _compute_yarn_parameters).
void ReadRopeScaling(JsonReader& r, ModelSpec* m) {
  if (!r.Has("rope_scaling")) {
    r.Allow("rope_scaling");  // null: no scaling
    return;
  }
  JsonReader& rs = r.Object("rope_scaling");
  std::optional<std::string> kind = rs.OptionalString("rope_type");
  std::optional<std::string> old_kind = rs.OptionalString("type");
  if (!kind) kind = old_kind;
  RopeScaling scaling;
  scaling.type = kind.value_or("");
  if (kind == "llama3") {
    scaling.kind = RopeScalingKind::kLlama3;
    scaling.factor = rs.PositiveNumber("factor", kRopeFactorRange);
    scaling.original_max_position_embeddings =
        rs.Int("original_max_position_embeddings", kPositionRange);
    scaling.low_freq_factor = rs.PositiveNumber("low_freq_factor", kRopeFactorRange);
    scaling.high_freq_factor = rs.PositiveNumber("high_freq_factor", kRopeFactorRange);
  } else if (kind == "yarn") {
    // transformers' defaults for the keys a yarn config may leave out.
    scaling.kind = RopeScalingKind::kYarn;
    scaling.factor = rs.PositiveNumber("factor", kRopeFactorRange);
    scaling.original_max_position_embeddings =
        rs.Int("original_max_position_embeddings", kPositionRange);
    scaling.beta_fast = rs.OptionalPositiveNumber("beta_fast", kRopeFactorRange).value_or(32);
    scaling.beta_slow = rs.OptionalPositiveNumber("beta_slow", kRopeFactorRange).value_or(1);
    scaling.mscale = rs.OptionalNonNegativeNumber("mscale", kRopeFactorRange).value_or(1);
    scaling.mscale_all_dim =
        rs.OptionalNonNegativeNumber("mscale_all_dim", kRopeFactorRange).value_or(0);
  } else {
    // Kept, not refused: the step costs the same, and an emitter names what it cannot launch.
    scaling.kind = RopeScalingKind::kOther;
    scaling.factor = rs.OptionalPositiveNumber("factor", kRopeFactorRange).value_or(1);
  }
  m->rope_scaling = scaling;
}

// Absent keys take the defaults of the model_type's config class; without a known model_type,
// untied embeddings and no biases, as loom-authored files always say them.
void ReadBiases(JsonReader& r, const std::optional<ModelFamily>& family, ModelSpec* m) {
  m->tie_word_embeddings =
      r.OptionalBool("tie_word_embeddings").value_or(family && family->tie_word_embeddings);
  m->attention_bias = r.OptionalBool("attention_bias").value_or(family && family->attention_bias);
  m->attention_output_bias = m->attention_bias;
  if (family && family->qkv_bias_only) {  // Qwen2Attention hard-codes these, whatever the key says
    m->attention_bias = true;
    m->attention_output_bias = false;
  }
  m->mlp_bias = r.OptionalBool("mlp_bias").value_or(family && family->mlp_bias);
}

constexpr std::string_view kMlaOnlyKeys[] = {"q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                                             "v_head_dim"};

// DeepSeek-V2 multi-head latent attention, signalled by kv_lora_rank.
std::optional<MlaSpec> ReadMla(JsonReader& r) {
  std::optional<int64_t> kv_lora = r.OptionalInt("kv_lora_rank", kWidthRange);
  std::optional<int64_t> q_lora =
      r.OptionalInt("q_lora_rank", kWidthRange);  // null: direct q projection
  if (!r.Has("kv_lora_rank")) {
    for (std::string_view key : kMlaOnlyKeys) {
      r.Allow(key);
      if (r.Has(key)) {
        r.AddError(key,
                   "is a multi-head latent attention key but kv_lora_rank is missing; add "
                   "\"kv_lora_rank\" (DeepSeek MLA) or remove it");
      }
    }
    return std::nullopt;
  }
  MlaSpec spec;
  spec.kv_lora_rank = kv_lora.value_or(1);
  spec.q_lora_rank = q_lora.value_or(0);
  spec.qk_rope_head_dim = r.Int("qk_rope_head_dim", kWidthRange);
  spec.qk_nope_head_dim = r.Int("qk_nope_head_dim", kWidthRange);
  spec.v_head_dim = r.Int("v_head_dim", kWidthRange);
  return spec;
}

// The family of the file's model_type (else of its first architecture); a model_type loom does not
// know is a warning, since the keys alone then decide the MLP's gating, biases and ties.
std::optional<ModelFamily> ReadFamily(JsonReader& r, ModelSpec* m) {
  std::optional<std::string> type = r.OptionalString("model_type");
  std::vector<std::string> architectures = r.OptionalStringList("architectures");
  if (!type && !architectures.empty()) {
    std::string from_architecture = ModelTypeOfArchitecture(architectures.front());
    if (!from_architecture.empty()) type = from_architecture;
  }
  if (!type) return std::nullopt;
  m->model_type = *type;
  std::optional<ModelFamily> family = FindModelFamily(*type);
  if (!family) {
    m->warnings.push_back(r.file() + ": model_type " + Quote(*type) + " is not one loom knows (" +
                          KnownModelTypes() +
                          "); its MLP gating (from hidden_act), biases and tied embeddings are "
                          "read from the keys alone, "
                          "with no defaults of its config class: compare the parameter count `loom "
                          "describe` prints with the "
                          "model card");
  }
  return family;
}

// Keys that change what a model holds in ways loom does not model: refused, never ignored, so a
// model is never silently miscounted.
void RefuseUnmodelledKeys(JsonReader& r) {
  for (std::string_view key : {"text_config", "vision_config", "audio_config"}) {
    r.Allow(key);
    if (r.Has(key)) {
      r.AddError(
          key,
          "is set: this is a multimodal config, and loom counts decoder-only language models; "
          "use a text-only checkpoint's config.json (for Gemma 3: gemma-3-1b, or a config whose "
          "model_type is \"gemma3_text\" with every key of the text model written out)");
    }
  }
  for (std::string_view key : {"qk_layernorm", "use_qk_norm"}) {
    std::optional<bool> on = r.OptionalBool(key);
    if (on.value_or(false)) {
      r.AddError(key,
                 "is true: query/key norms of this model_type are not modelled by loom, so its "
                 "count would "
                 "be short; loom knows them only for qwen3, qwen3_moe, gemma3_text and olmo2");
    }
  }
}

// Query/key norm widths of the family (resolved after head_dim).
void SetQkNorms(const std::optional<ModelFamily>& family, ModelSpec* m) {
  if (!family || family->qk_norm == QkNorm::kNone) return;
  bool whole = family->qk_norm == QkNorm::kWholeProjection;
  m->q_norm_width = whole ? m->num_heads * m->head_dim : m->head_dim;
  m->k_norm_width = whole ? m->num_kv_heads * m->head_dim : m->head_dim;
}

// A Hugging Face snapshot folder's model name: models--org--name/snapshots/<hash> -> name.
std::string SnapshotName(const std::filesystem::path& dir) {
  std::filesystem::path clean = dir.lexically_normal();
  if (clean.filename().empty()) clean = clean.parent_path();
  std::string repo = clean.parent_path().parent_path().filename().string();
  if (clean.parent_path().filename() == "snapshots" && repo.rfind("models--", 0) == 0) {
    return repo.substr(repo.rfind("--") + 2);
  }
  return clean.filename().string();
}

}  // namespace

std::string ModelRef(const ModelSpec& model) {
  if (!model.file.empty()) return model.file;
  return model.name.empty() ? std::string("the model") : model.name;
}

Result<ModelSpec> LoadModelSpec(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && IsHubModelName(path)) {
    Result<std::string> snapshot = ResolveHubModel(path, FindHubCache());
    if (!snapshot.ok() && std::filesystem::is_regular_file(path + ".json", ec)) {
      return Status::NotFound(
          path + ": no such file or folder; did you mean " + path +
          ".json? (Read as a Hugging Face hub name instead: " + snapshot.status().message() + ")");
    }
    if (!snapshot.ok()) return snapshot.status();
    return LoadModelSpec(*snapshot);
  }
  if (!std::filesystem::is_directory(path, ec)) {
    LOOM_ASSIGN_OR_RETURN(nlohmann::json config, ReadJsonObjectFile(path));
    return ParseModelSpec(config, path);
  }
  std::string file = (std::filesystem::path(path) / "config.json").string();
  if (!std::filesystem::is_regular_file(file, ec)) {
    return Status::InvalidArgument(
        path +
        ": is a directory without a config.json; point --model at a Hugging Face "
        "snapshot folder (the one holding config.json, e.g. "
        "~/.cache/huggingface/hub/models--org--name/snapshots/<hash>) or at a "
        "config .json file");
  }
  LOOM_ASSIGN_OR_RETURN(nlohmann::json config, ReadJsonObjectFile(file));
  LOOM_ASSIGN_OR_RETURN(ModelSpec spec, ParseModelSpec(config, file));
  spec.name = SnapshotName(path);
  return spec;
}

Result<ModelSpec> ParseModelSpec(const nlohmann::json& config, const std::string& file) {
  if (!config.is_object()) {
    return Status::InvalidArgument(
        file + ": the top level is a JSON " + std::string(config.type_name()) +
        "; it must be an object of \"key\": value pairs (a config.json)");
  }
  JsonReader r(config, file);
  ModelSpec m;
  m.file = file;
  m.name = std::filesystem::path(file).stem().string();
  ReadHeader(r);
  std::optional<ModelFamily> family = ReadFamily(r, &m);
  RefuseUnmodelledKeys(r);
  RuleInputs in = ReadDimensions(r, &m);
  ReadActivation(r, family, &m);
  ReadNorm(r, family, &m);
  ReadPosition(r, family, &m);
  ReadRopeScaling(r, &m);
  ReadBiases(r, family, &m);
  m.mtp_layers = r.OptionalInt("num_nextn_predict_layers", {0, kLayerRange.max}).value_or(0);
  m.moe = ReadMoe(r, config, family, m, in.layers);
  m.mla = ReadMla(r);
  ReadSlidingWindow(r, &m);
  ResolveHeadDim(r, in, &m);
  SetQkNorms(family, &m);
  // qk_head_dim (written by transformers' DeepseekV3Config) is two edits from v_head_dim.
  LOOM_RETURN_IF_ERROR(r.Finish(UnknownKeys::kRejectTypos, {"qk_head_dim"}));
  Result<ParameterCount> count = CountParameters(m);
  if (!count.ok()) return count.status();
  return m;
}

}  // namespace loom
