#include "spec/scenario.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/attention_family.h"
#include "core/json_reader.h"
#include "spec/framework.h"
#include "spec/hub_cache.h"
#include "spec/pipeline_layout.h"

namespace loom {
namespace {

constexpr std::string_view kSchema = "loom.scenario/1";

// An integer key kept at its default when absent.
void ReadInt(JsonReader& r, std::string_view key, int64_t* value, IntRange range = {}) {
  if (std::optional<int64_t> v = r.OptionalInt(key, range)) *value = *v;
}

void ReadBool(JsonReader& r, std::string_view key, bool* value) {
  if (std::optional<bool> v = r.OptionalBool(key)) *value = *v;
}

// An enum key kept at its default when absent; the error lists |names|' choices.
template <typename Enum, size_t N>
void ReadEnum(JsonReader& r, std::string_view key, const EnumNames<Enum, N>& names, Enum* value) {
  std::optional<std::string> text = r.OptionalString(key);
  if (!text) return;
  if (std::optional<Enum> parsed = names.Parse(*text)) {
    *value = *parsed;
  } else {
    r.AddError(key, "is \"" + *text + "\"; it must be one of " + names.Choices());
  }
}

}  // namespace

void ReadStrategyObject(JsonReader& r, Strategy* s) {
  ReadInt(r, "tp", &s->tp);
  ReadInt(r, "pp", &s->pp);
  ReadInt(r, "dp", &s->dp);
  ReadInt(r, "cp", &s->cp);
  ReadInt(r, "ep", &s->ep);
  ReadBool(r, "sp", &s->sp);
  ReadInt(r, "vpp", &s->vpp);
  ReadInt(r, "micro_batch", &s->micro_batch);
  ReadInt(r, "global_batch", &s->global_batch);
  ReadInt(r, "seq_len", &s->seq_len);
  ReadEnum(r, "schedule", kScheduleNames, &s->schedule);
  ReadEnum(r, "recompute", kRecomputeNames, &s->recompute);
  ReadInt(r, "recompute_layers", &s->recompute_layers, {0, INT64_MAX});
  ReadInt(r, "zero_stage", &s->zero_stage, {0, 3});
  ReadEnum(r, "dtype", kDtypeNames, &s->dtype);
  ReadEnum(r, "optimizer", kOptimizerNames, &s->optimizer);
  ReadEnum(r, "offload", kOffloadNames, &s->offload);
  ReadBool(r, "allow_cross_node_tp", &s->allow_cross_node_tp);
  ReadInt(r, "etp", &s->etp, {0, INT64_MAX});
  ReadEnum(r, "cp_comm", kCpCommNames, &s->cp_comm);
  ReadInt(r, "first_stage_layers", &s->first_stage_layers, {0, INT64_MAX});
  ReadInt(r, "last_stage_layers", &s->last_stage_layers, {0, INT64_MAX});
  if (std::optional<std::string> layout = r.OptionalString("pipeline_layout")) {
    Result<std::vector<int64_t>> layers = ParsePipelineLayout(*layout, s->pp);
    if (layers.ok()) {
      s->layout = *std::move(layers);
    } else {
      r.AddError("pipeline_layout", layers.status().message() +
                                        " (Megatron-core's layout syntax, e.g. "
                                        "\"Et*7|(t*8|)*14t*7L\" for 126 layers on 16 stages)");
    }
  }
  ReadInt(r, "microbatch_group", &s->microbatch_group, {0, int64_t{1} << 20});
  if (std::optional<double> v = r.OptionalNonNegativeNumber("moe_capacity_factor"))
    s->moe_capacity_factor = *v;
  if (std::optional<double> v = r.OptionalPositiveNumber("moe_imbalance")) s->moe_imbalance = *v;
  ReadBool(r, "overlap_grad_reduce", &s->overlap_grad_reduce);
  ReadBool(r, "overlap_param_gather", &s->overlap_param_gather);
  ReadBool(r, "tp_comm_overlap", &s->tp_comm_overlap);
  ReadBool(r, "grad_reduce_in_bf16", &s->grad_reduce_in_bf16);
  ReadEnum(r, "grad_accumulation", kGradAccumulationNames, &s->grad_accumulation);
}

Result<Scenario> LoadScenario(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(nlohmann::json json, ReadJsonObjectFile(path));
  JsonReader r(json, path);
  Scenario scenario;
  scenario.file = path;
  std::string schema = r.String("schema");
  if (!schema.empty() && schema != kSchema) {
    r.AddError("schema", "is \"" + schema + "\"; this loom reads \"" + std::string(kSchema) + "\"");
  }
  scenario.model_path = ModelPathBeside(path, r.String("model"));
  scenario.cluster_path = PathBeside(path, r.String("cluster"));
  scenario.nodes = r.OptionalInt("nodes");
  ReadStrategyObject(r.Object("strategy"), &scenario.strategy);
  if (std::optional<std::string> framework = r.OptionalString("framework")) {
    scenario.framework = IsFrameworkPath(*framework) ? PathBeside(path, *framework) : *framework;
  }
  if (r.Has("attention")) scenario.attention = ReadChoice(r, "attention", AttentionChoices());
  scenario.dropout = r.OptionalBool("dropout");
  LOOM_RETURN_IF_ERROR(r.Finish(UnknownKeys::kError));
  return scenario;
}

std::string ScenarioKeyOfFlag(std::string_view flag) {
  std::string key(flag.substr(flag.compare(0, 2, "--") == 0 ? 2 : 0));
  std::replace(key.begin(), key.end(), '-', '_');
  if (key == "zero") return "strategy.zero_stage";
  if (key == "seq") return "strategy.seq_len";
  for (const char* top : {"model", "cluster", "nodes", "framework", "attention", "dropout"}) {
    if (key == top) return key;
  }
  return "strategy." + key;
}

Status InScenarioTerms(const Status& status, const std::string& file) {
  if (status.ok()) return status;
  std::string out;
  size_t start = 0;
  const std::string& message = status.message();
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    const std::string_view line(message.data() + start, end - start);
    std::string rewritten = file + ": ";
    for (size_t i = 0; i < line.size();) {
      const bool flag = line.compare(i, 2, "--") == 0 && i + 2 < line.size() &&
                        std::islower(static_cast<unsigned char>(line[i + 2])) &&
                        (i == 0 || line[i - 1] == ' ' || line[i - 1] == '(');
      if (!flag) {
        rewritten += line[i++];
        continue;
      }
      size_t j = i + 2;
      while (j < line.size() &&
             (std::islower(static_cast<unsigned char>(line[j])) ||
              std::isdigit(static_cast<unsigned char>(line[j])) || line[j] == '-')) {
        ++j;
      }
      rewritten += ScenarioKeyOfFlag(line.substr(i, j - i));
      i = j;
    }
    out += (out.empty() ? "" : "\n") + rewritten;
    start = end + 1;
  }
  return Status::InvalidArgument(out);
}

nlohmann::ordered_json StrategyJson(const Strategy& s) {
  nlohmann::ordered_json out = {
      {"tp", s.tp},
      {"pp", s.pp},
      {"dp", s.dp},
      {"cp", s.cp},
      {"ep", s.ep},
      {"etp", s.etp},
      {"sp", s.sp},
      {"vpp", s.vpp},
      {"micro_batch", s.micro_batch},
      {"global_batch", s.global_batch},
      {"seq_len", s.seq_len},
      {"schedule", kScheduleNames.Name(s.schedule)},
      {"recompute", kRecomputeNames.Name(s.recompute)},
      {"recompute_layers", s.recompute_layers},
      {"zero_stage", s.zero_stage},
      {"dtype", kDtypeNames.Name(s.dtype)},
      {"optimizer", kOptimizerNames.Name(s.optimizer)},
      {"offload", kOffloadNames.Name(s.offload)},
      {"allow_cross_node_tp", s.allow_cross_node_tp},
      {"cp_comm", kCpCommNames.Name(s.cp_comm)},
      {"first_stage_layers", s.first_stage_layers},
      {"last_stage_layers", s.last_stage_layers},
      {"microbatch_group", s.microbatch_group},
      {"moe_capacity_factor", s.moe_capacity_factor},
      {"moe_imbalance", s.moe_imbalance},
      {"overlap_grad_reduce", s.overlap_grad_reduce},
      {"overlap_param_gather", s.overlap_param_gather},
      {"tp_comm_overlap", s.tp_comm_overlap},
      {"grad_reduce_in_bf16", s.grad_reduce_in_bf16},
      {"grad_accumulation", kGradAccumulationNames.Name(s.grad_accumulation)}};
  // Only a given layout is written: an absent key reads back as none.
  if (!s.layout.empty()) out["pipeline_layout"] = PipelineLayoutText(s.layout);
  return out;
}

}  // namespace loom
