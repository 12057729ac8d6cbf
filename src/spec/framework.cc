#include "spec/framework.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/formatted.h"
#include "core/json_reader.h"

namespace loom {
namespace {

constexpr std::string_view kSchema = "loom.framework/1";

double NonNegative(JsonReader& r, std::string_view key) {
  if (!r.Has(key)) {
    r.AddError(
        key, "is missing; give the host time in microseconds (0 where the framework spends none)");
    return 0;
  }
  return r.OptionalNonNegativeNumber(key, {0, 1e7}).value_or(0);  // at most 10 s per op
}

bool RequiredBool(JsonReader& r, std::string_view key) {
  if (!r.Has(key)) {
    r.AddError(key, "is missing; say true or false");
    return false;
  }
  return r.OptionalBool(key).value_or(false);
}

}  // namespace

Result<FrameworkProfile> LoadFrameworkProfile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(nlohmann::json json, ReadJsonObjectFile(path));
  JsonReader r(json, path);
  FrameworkProfile p;
  p.file = path;
  const std::string schema = r.String("schema");
  if (!schema.empty() && schema != kSchema) {
    r.AddError("schema", "is \"" + schema + "\"; this loom reads \"" + std::string(kSchema) + "\"");
  }
  p.name = r.String("name");
  p.source = r.String("source");
  JsonReader& host = r.Object("host");
  p.forward_us_per_op = NonNegative(host, "forward_us_per_op");
  p.backward_us_per_op = NonNegative(host, "backward_us_per_op");
  p.optimizer_us_per_layer = NonNegative(host, "optimizer_us_per_layer");
  p.optimizer_us_fixed = NonNegative(host, "optimizer_us_fixed");
  p.scale = host.OptionalPositiveNumber("scale", {1e-3, 1e3}).value_or(1.0);
  p.fitted_on = host.OptionalStringList("fitted_on");
  if (r.Has("cuda_graphs")) {
    JsonReader& graphs = r.Object("cuda_graphs");
    p.cuda_graph_layers = RequiredBool(graphs, "layers");
    p.graph_launch_us = NonNegative(graphs, "launch_us");
  }
  JsonReader& sync = r.Object("sync");
  p.sync_after_p2p = RequiredBool(sync, "after_p2p");
  p.sync_before_optimizer = RequiredBool(sync, "before_optimizer");
  if (r.Has("fused_attention")) {
    JsonReader& a = r.Object("fused_attention");
    FusedAttentionRule rule;
    rule.family = ReadEnum(a, "family", kAttentionFamilyNames);
    rule.from_compute_capability = a.OptionalPositiveNumber("from_compute_capability", {1, 100});
    if (rule.from_compute_capability) {
      if (!a.Has("family_from")) {
        a.AddError("family_from",
                   "is missing; from_compute_capability needs the family those GPUs run (" +
                       kAttentionFamilyNames.Choices() + "), or remove from_compute_capability");
      } else {
        rule.family_from = ReadEnum(a, "family_from", kAttentionFamilyNames);
      }
    } else if (a.Has("family_from")) {
      a.AddError("family_from",
                 "is set without from_compute_capability; add the compute capability from which "
                 "it applies (9.0 for Hopper), or remove it");
    }
    rule.source = a.String("source");
    p.fused_attention = rule;
  }
  if (r.Has("tensor_parallel")) {
    JsonReader& tp = r.Object("tensor_parallel");
    p.tp_backward_overlap = RequiredBool(tp, "backward_overlap");
    p.tp_backward_overlap_source = tp.String("source");
  }
  LOOM_RETURN_IF_ERROR(r.Finish(UnknownKeys::kError));
  return p;
}

bool IsFrameworkPath(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
}

Result<std::optional<FrameworkProfile>> ResolveFramework(const std::string& name_or_path,
                                                         const std::string& cluster_file) {
  if (name_or_path == "none") return std::optional<FrameworkProfile>();
  if (name_or_path.empty()) {
    return Status::InvalidArgument(
        "the framework is empty: name one of hardware/frameworks/ (megatron-core, ...), "
        "a framework file, or none");
  }
  std::string path = name_or_path;
  if (!IsFrameworkPath(name_or_path)) {
    const std::filesystem::path folder =
        std::filesystem::path(cluster_file).parent_path().parent_path() / "frameworks";
    path = (folder / (name_or_path + ".json")).lexically_normal().string();
    if (!std::filesystem::exists(path)) {
      std::string known;
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
        if (entry.path().extension() != ".json") continue;
        known += (known.empty() ? "" : ", ") + entry.path().stem().string();
      }
      return Status::NotFound("framework '" + name_or_path + "': no " + path +
                              " (the frameworks folder beside " + cluster_file +
                              "'s folder); known: " + (known.empty() ? "none" : known) +
                              "; or give a framework file's path, or none");
    }
  }
  LOOM_ASSIGN_OR_RETURN(FrameworkProfile profile, LoadFrameworkProfile(path));
  return std::optional<FrameworkProfile>(std::move(profile));
}

nlohmann::ordered_json FrameworkJson(const FrameworkProfile& p) {
  nlohmann::ordered_json j;
  j["schema"] = kSchema;
  j["name"] = p.name;
  j["source"] = p.source;
  nlohmann::ordered_json host;
  host["forward_us_per_op"] = p.forward_us_per_op;
  host["backward_us_per_op"] = p.backward_us_per_op;
  host["optimizer_us_per_layer"] = p.optimizer_us_per_layer;
  host["optimizer_us_fixed"] = p.optimizer_us_fixed;
  host["scale"] = p.scale;
  if (!p.fitted_on.empty()) host["fitted_on"] = p.fitted_on;
  j["host"] = host;
  j["cuda_graphs"] = {{"layers", p.cuda_graph_layers}, {"launch_us", p.graph_launch_us}};
  j["sync"] = {{"after_p2p", p.sync_after_p2p}, {"before_optimizer", p.sync_before_optimizer}};
  if (const std::optional<FusedAttentionRule>& a = p.fused_attention) {
    nlohmann::ordered_json attention;
    attention["family"] = kAttentionFamilyNames.Name(a->family);
    if (a->from_compute_capability) {
      attention["from_compute_capability"] = *a->from_compute_capability;
      attention["family_from"] = kAttentionFamilyNames.Name(a->family_from);
    }
    attention["source"] = a->source;
    j["fused_attention"] = attention;
  }
  if (p.tp_backward_overlap || !p.tp_backward_overlap_source.empty()) {
    j["tensor_parallel"] = {{"backward_overlap", p.tp_backward_overlap},
                            {"source", p.tp_backward_overlap_source}};
  }
  return j;
}

FusedAttentionChoice ChooseFusedAttention(const FrameworkProfile* framework, const GpuSpec& gpu) {
  if (framework == nullptr || !framework->fused_attention) {
    return {AttentionFamily::kFlashAttention2,
            std::string(framework == nullptr ? "no framework" : framework->file + " names none") +
                ": FlashAttention-2 (--attention cudnn for cuDNN's)"};
  }
  const FusedAttentionRule& rule = *framework->fused_attention;
  const std::string file = framework->file;
  if (!rule.from_compute_capability) {
    return {rule.family, file + ": " + std::string(kAttentionFamilyNames.Name(rule.family))};
  }
  const std::string from = Fixed(*rule.from_compute_capability, 1);
  if (!gpu.compute_capability) {
    return {rule.family, file + ": " + std::string(kAttentionFamilyNames.Name(rule.family)) + " (" +
                             gpu.file + " gives no compute_capability, so not its family from " +
                             from + ")"};
  }
  const bool from_on = *gpu.compute_capability >= *rule.from_compute_capability;
  const AttentionFamily family = from_on ? rule.family_from : rule.family;
  return {family, file + ": " + std::string(kAttentionFamilyNames.Name(family)) +
                      " (compute capability " + Fixed(*gpu.compute_capability, 1) +
                      (from_on ? " >= " : " < ") + from + ")"};
}

}  // namespace loom
