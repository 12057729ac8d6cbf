// Reading a mixture of experts from a config.json: Mixtral (num_local_experts), DeepSeek
// (n_routed_experts, n_shared_experts, first_k_dense_replace) and Qwen MoE (num_experts,
// shared_expert_intermediate_size, decoder_sparse_step, mlp_only_layers) keys.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "spec/model_reader.h"

namespace loom {
namespace model_reader {
namespace {

// Keys that only a mixture of experts has: an error without an expert count, since reading
// such a model as dense would silently undercount it.
constexpr std::string_view kMoeOnlyKeys[] = {"num_experts_per_tok", "moe_intermediate_size"};

std::optional<int64_t> ReadExpertCount(JsonReader& r) {
  std::optional<int64_t> local = r.OptionalInt("num_local_experts", kExpertRange);
  std::optional<int64_t> routed = r.OptionalInt("n_routed_experts", kExpertRange);
  std::optional<int64_t> qwen = r.OptionalInt("num_experts", kExpertRange);
  int keys =
      int{r.Has("num_local_experts")} + int{r.Has("n_routed_experts")} + int{r.Has("num_experts")};
  if (keys > 1) {
    r.AddError("n_routed_experts",
               "and num_local_experts or num_experts are set together; keep one: num_local_experts "
               "(Mixtral), n_routed_experts (DeepSeek) or num_experts (Qwen MoE)");
    return std::nullopt;
  }
  if (keys == 0) {
    for (std::string_view key : kMoeOnlyKeys) {
      if (r.Has(key)) {
        r.AddError(key,
                   "is set but the expert count is not; add \"num_local_experts\" (Mixtral), "
                   "\"n_routed_experts\" (DeepSeek) or \"num_experts\" (Qwen), or remove it for a "
                   "dense model");
      }
    }
  }
  return local ? local : routed ? routed : qwen;
}

// DeepSeek's router keys (modeling_deepseek.py, MoEGate): scoring_func, topk_method (greedy,
// group_limited_greedy, noaux_tc), n_group, topk_group, norm_topk_prob, routed_scaling_factor; the
// balance loss of Mixtral (router_aux_loss_coef) or DeepSeek (aux_loss_alpha, seq_aux).
void ReadRouting(JsonReader& r, bool normalize_default, MoeSpec* spec) {
  std::optional<std::string> score = r.OptionalOneOf("scoring_func", {"softmax", "sigmoid"});
  spec->score = score == "sigmoid" ? RouterScore::kSigmoid : RouterScore::kSoftmax;
  std::optional<std::string> method =
      r.OptionalOneOf("topk_method", {"greedy", "group_limited_greedy", "noaux_tc"});
  std::optional<int64_t> groups = r.OptionalInt("n_group", kExpertRange);
  std::optional<int64_t> group_top_k = r.OptionalInt("topk_group", kExpertRange);
  if (method == "group_limited_greedy" || method == "noaux_tc") {
    if (!groups || !group_top_k) {
      r.AddError(groups ? "topk_group" : "n_group",
                 "is missing; topk_method " + Quote(*method) +
                     " routes within groups of experts: add "
                     "\"n_group\" (the groups) and \"topk_group\" (the groups a token may reach)");
    } else if (*group_top_k > *groups) {
      r.AddError("topk_group", "(" + std::to_string(*group_top_k) + ") exceeds n_group (" +
                                   std::to_string(*groups) +
                                   "); a token reaches at most every group");
    } else {
      spec->router_groups = *groups;
      spec->router_group_top_k = *group_top_k;
    }
  }
  spec->expert_bias = method == "noaux_tc";
  spec->normalize_top_k = r.OptionalBool("norm_topk_prob").value_or(normalize_default);
  spec->routed_scaling_factor =
      r.OptionalPositiveNumber("routed_scaling_factor", kRopeFactorRange).value_or(1.0);
  std::optional<double> mixtral_loss =
      r.OptionalNonNegativeNumber("router_aux_loss_coef", {0, 1e3});
  std::optional<double> deepseek_loss = r.OptionalNonNegativeNumber("aux_loss_alpha", {0, 1e3});
  spec->aux_loss_coeff = mixtral_loss.value_or(deepseek_loss.value_or(0.0));
  spec->sequence_aux_loss = r.OptionalBool("seq_aux").value_or(false);
}

// Qwen MoE places its dense layers by decoder_sparse_step and mlp_only_layers
// (Qwen2MoeDecoderLayer: layer i is MoE unless i is in mlp_only_layers, and only if (i + 1) %
// decoder_sparse_step == 0). loom models dense layers only in front (first_k_dense_replace): the
// count of leading dense layers, or nullopt with an error naming the key where they are anywhere
// else.
std::optional<int64_t> ReadQwenDenseLayers(JsonReader& r, const nlohmann::json& config) {
  std::optional<int64_t> step = r.OptionalInt("decoder_sparse_step", kLayerRange);
  if (step && *step != 1) {
    r.AddError("decoder_sparse_step",
               "is " + std::to_string(*step) +
                   "; loom models a mixture of experts in every layer after the "
                   "leading dense ones, not every " +
                   std::to_string(*step) +
                   "th: it cannot count this model (set it "
                   "to 1 only if the checkpoint really has experts in every layer)");
  }
  r.Allow("mlp_only_layers");
  auto it = config.find("mlp_only_layers");
  if (it == config.end() || it->is_null()) return 0;
  const std::string fix =
      "; loom models dense layers only in front: a list [0, 1, ..., k-1] (or [])";
  if (!it->is_array()) {
    r.AddError("mlp_only_layers", "is not a list of layer indices" + fix);
    return std::nullopt;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() != static_cast<int64_t>(i)) {
      r.AddError("mlp_only_layers",
                 "is " + it->dump() + fix + ", which this model's layers are not");
      return std::nullopt;
    }
  }
  return static_cast<int64_t>(it->size());
}

// DeepSeek's n_shared_experts experts of the routed width, or Qwen2-MoE's one shared expert of
// shared_expert_intermediate_size scaled by a sigmoid gate (Qwen2MoeSparseMoeBlock:
// shared_expert_gate, hidden -> 1, no bias). REQUIRES: spec->expert_intermediate_size is set.
void ReadSharedExperts(JsonReader& r, MoeSpec* spec) {
  std::optional<int64_t> shared = r.OptionalInt("n_shared_experts", {0, kExpertRange.max});
  std::optional<int64_t> width =
      r.OptionalInt("shared_expert_intermediate_size", {0, kMlpRange.max});
  spec->num_shared_experts = shared.value_or(0);
  spec->shared_expert_intermediate_size = spec->expert_intermediate_size;
  if (!width || *width == 0) return;
  if (shared && *shared > 0) {
    r.AddError("shared_expert_intermediate_size",
               "and n_shared_experts are both set; keep one: "
               "n_shared_experts (DeepSeek) or shared_expert_intermediate_size (Qwen2-MoE)");
  }
  spec->num_shared_experts = 1;
  spec->shared_expert_intermediate_size = *width;
  spec->shared_expert_gate = true;
}

}  // namespace

std::optional<MoeSpec> ReadMoe(JsonReader& r, const nlohmann::json& config,
                               const std::optional<ModelFamily>& family, const ModelSpec& m,
                               std::optional<int64_t> layers) {
  std::optional<int64_t> top_k = r.OptionalInt("num_experts_per_tok", kExpertRange);
  std::optional<int64_t> width = r.OptionalInt("moe_intermediate_size", kMlpRange);
  std::optional<int64_t> dense = r.OptionalInt("first_k_dense_replace", {0, kLayerRange.max});
  std::optional<int64_t> freq = r.OptionalInt("moe_layer_freq");
  std::optional<int64_t> experts = ReadExpertCount(r);
  if (!experts) {
    r.Allow("n_shared_experts");  // 0 in dense configs of MoE families
    if (r.OptionalInt("shared_expert_intermediate_size").value_or(0) > 0) {
      r.AddError(
          "shared_expert_intermediate_size",
          "is set but the expert count is not; add \"num_experts\" or remove it for a dense model");
    }
    return std::nullopt;
  }
  if (r.Has("decoder_sparse_step") || r.Has("mlp_only_layers")) {
    std::optional<int64_t> qwen_dense = ReadQwenDenseLayers(r, config);
    if (dense && qwen_dense && *qwen_dense > 0) {
      r.AddError("mlp_only_layers", "and first_k_dense_replace are both set; keep one");
    } else if (qwen_dense) {
      dense = *qwen_dense;
    }
  }
  if (freq && *freq != 1) {
    r.AddError("moe_layer_freq",
               "is " + std::to_string(*freq) +
                   "; loom supports only 1 (every layer "
                   "after first_k_dense_replace is a MoE layer); set it to 1 or remove it");
  }
  if (!r.Has("num_experts_per_tok")) {
    (void)r.Int("num_experts_per_tok");  // records "is missing; add ..."
  } else if (top_k && *top_k > *experts) {
    r.AddError("num_experts_per_tok",
               "(" + std::to_string(*top_k) + ") exceeds the number of experts (" +
                   std::to_string(*experts) + "); a token is sent to at most all of them");
  }
  if (dense && layers && *dense >= *layers) {
    r.AddError("first_k_dense_replace",
               "(" + std::to_string(*dense) + ") must be less than num_hidden_layers (" +
                   std::to_string(*layers) + "), or the model has no MoE layer");
  }
  MoeSpec spec;
  ReadRouting(r, family ? family->normalize_top_k : true, &spec);
  spec.num_experts = *experts;
  spec.experts_per_token = top_k.value_or(1);
  spec.expert_intermediate_size = width.value_or(m.intermediate_size);
  ReadSharedExperts(r, &spec);
  spec.first_dense_layers = dense.value_or(0);
  return spec;
}

}  // namespace model_reader
}  // namespace loom
