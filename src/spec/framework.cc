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

// The "host_mask_us" table of |json|'s "microbatch" object: [[seq, us], ...], seq ascending.
std::vector<std::pair<int64_t, double>> ReadMaskTable(const nlohmann::json& microbatch,
                                                      JsonReader& r) {
  std::vector<std::pair<int64_t, double>> table;
  r.Allow("host_mask_us");
  const auto it = microbatch.find("host_mask_us");
  if (it == microbatch.end() || it->is_null()) return table;
  const std::string fix =
      "give [[seq, us], ...]: sequence lengths ascending from 1 to 10^7, each with the mask's "
      "host time in microseconds (0 to 10^7)";
  if (!it->is_array()) {
    r.AddError("host_mask_us", "is not an array; " + fix);
    return table;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& point = (*it)[i];
    const bool pair = point.is_array() && point.size() == 2 && point[0].is_number_integer() &&
                      point[1].is_number();
    const int64_t seq = pair ? point[0].get<int64_t>() : 0;
    const double us = pair ? point[1].get<double>() : -1;
    if (!pair || seq < 1 || seq > 10'000'000 || !(us >= 0 && us <= 1e7) ||
        (!table.empty() && seq <= table.back().first)) {
      r.AddError("host_mask_us",
                 "element " + std::to_string(i) + " is " + point.dump() + "; " + fix);
      return {};
    }
    table.emplace_back(seq, us);
  }
  return table;
}

}  // namespace

double MicroBatchHost::MaskUs(int64_t seq) const {
  if (host_mask_us.empty() || seq <= 0) return 0;
  const auto squared = [](int64_t s) { return static_cast<double>(s) * static_cast<double>(s); };
  const double x = squared(seq);
  const auto& [first_seq, first_us] = host_mask_us.front();
  if (seq <= first_seq) return first_us * x / squared(first_seq);
  for (size_t i = 1; i < host_mask_us.size(); ++i) {
    const auto& [s0, u0] = host_mask_us[i - 1];
    const auto& [s1, u1] = host_mask_us[i];
    if (seq <= s1) return u0 + (u1 - u0) * (x - squared(s0)) / (squared(s1) - squared(s0));
  }
  const auto& [last_seq, last_us] = host_mask_us.back();
  return last_us * x / squared(last_seq);
}

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
  if (r.Has("microbatch")) {
    JsonReader& m = r.Object("microbatch");
    MicroBatchHost mb;
    mb.batch_ops = static_cast<int32_t>(m.Int("batch_ops", {0, 10'000}));
    mb.loss_ops = static_cast<int32_t>(m.Int("loss_ops", {0, 10'000}));
    if (const nlohmann::json& object = json.at("microbatch"); object.is_object())
      mb.host_mask_us = ReadMaskTable(object, m);
    mb.sync = RequiredBool(m, "sync");
    mb.source = m.String("source");
    p.microbatch = mb;
  }
  if (r.Has("zero3")) {
    JsonReader& z = r.Object("zero3");
    ShardedFetch f;
    f.synchronous = RequiredBool(z, "synchronous_fetch");
    f.list_collective_us_per_rank = NonNegative(z, "list_collective_us_per_rank");
    f.gradient_reduction = ReadEnum(z, "gradient_reduction", ShardedFetch::kReductionNames);
    f.list_all_gather = z.OptionalBool("list_all_gather").value_or(true);
    f.list_reduce_scatter = z.OptionalBool("list_reduce_scatter").value_or(false);
    if (f.list_reduce_scatter && f.gradient_reduction == ShardedFetch::Reduction::kAllReduce) {
      z.AddError("list_reduce_scatter",
                 "is true with gradient_reduction \"all_reduce\"; set gradient_reduction to "
                 "\"reduce_scatter\" or remove list_reduce_scatter");
    }
    f.max_reuse_distance = z.OptionalInt("max_reuse_distance", {0, int64_t{1} << 50}).value_or(0);
    f.max_live_parameters = z.OptionalInt("max_live_parameters", {0, int64_t{1} << 50}).value_or(0);
    f.persistence_threshold =
        z.OptionalInt("persistence_threshold", {0, int64_t{1} << 40}).value_or(0);
    f.persistent_gather_us_per_rank =
        z.OptionalNonNegativeNumber("persistent_gather_us_per_rank", {0, 1e6}).value_or(0.0);
    if (f.persistent_gather_us_per_rank > 0 && f.persistence_threshold == 0) {
      z.AddError("persistent_gather_us_per_rank",
                 "is set without persistence_threshold; add the threshold below which weights "
                 "persist (DeepSpeed's stage3_param_persistence_threshold, 100000 by default), or "
                 "remove it");
    }
    f.source = z.String("source");
    p.zero3 = f;
  }
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
  if (r.Has("layer_kernels")) {
    JsonReader& k = r.Object("layer_kernels");
    ModuleKernels m;
    m.linear_bias_grads = RequiredBool(k, "linear_bias_grads");
    m.qkv_split_grad_copy = RequiredBool(k, "qkv_split_grad_copy");
    m.attention_unpad = RequiredBool(k, "attention_unpad");
    m.fp8_weight_cast_every_microbatch =
        k.OptionalBool("fp8_weight_cast_every_microbatch").value_or(false);
    m.query_key_layer_scaling = k.OptionalBool("query_key_layer_scaling").value_or(false);
    p.layer_kernels_source = k.String("source");
    p.layer_kernels = m;
  }
  if (r.Has("memory")) {
    JsonReader& m = r.Object("memory");
    p.allocator_headroom = m.OptionalNonNegativeNumber("allocator_headroom", {0, 0.9});
    if (!p.allocator_headroom) {
      m.AddError("allocator_headroom",
                 "is missing: give the share of the GPU's memory the allocator loses to "
                 "fragmentation (0.15 is PyTorch's caching allocator as GMLake measured it), or "
                 "remove the memory object");
    }
    p.allocator_headroom_source = m.String("source");
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
  if (const std::optional<MicroBatchHost>& m = p.microbatch) {
    nlohmann::ordered_json mb;
    mb["batch_ops"] = m->batch_ops;
    mb["loss_ops"] = m->loss_ops;
    if (!m->host_mask_us.empty()) {
      nlohmann::ordered_json table = nlohmann::ordered_json::array();
      for (const auto& [seq, us] : m->host_mask_us) table.push_back({seq, us});
      mb["host_mask_us"] = table;
    }
    mb["sync"] = m->sync;
    mb["source"] = m->source;
    j["microbatch"] = mb;
  }
  if (const std::optional<ShardedFetch>& z = p.zero3) {
    nlohmann::ordered_json zero3;
    zero3["synchronous_fetch"] = z->synchronous;
    zero3["list_collective_us_per_rank"] = z->list_collective_us_per_rank;
    zero3["gradient_reduction"] = ShardedFetch::kReductionNames.Name(z->gradient_reduction);
    zero3["list_all_gather"] = z->list_all_gather;
    zero3["list_reduce_scatter"] = z->list_reduce_scatter;
    zero3["max_reuse_distance"] = z->max_reuse_distance;
    zero3["max_live_parameters"] = z->max_live_parameters;
    zero3["persistence_threshold"] = z->persistence_threshold;
    zero3["persistent_gather_us_per_rank"] = z->persistent_gather_us_per_rank;
    zero3["source"] = z->source;
    j["zero3"] = zero3;
  }
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
  if (const std::optional<ModuleKernels>& k = p.layer_kernels) {
    j["layer_kernels"] = {{"linear_bias_grads", k->linear_bias_grads},
                          {"qkv_split_grad_copy", k->qkv_split_grad_copy},
                          {"attention_unpad", k->attention_unpad},
                          {"fp8_weight_cast_every_microbatch", k->fp8_weight_cast_every_microbatch},
                          {"query_key_layer_scaling", k->query_key_layer_scaling},
                          {"source", p.layer_kernels_source}};
  }
  if (p.allocator_headroom) {
    j["memory"] = {{"allocator_headroom", *p.allocator_headroom},
                   {"source", p.allocator_headroom_source}};
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
