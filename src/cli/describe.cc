// `loom describe`: what a model is and what its training states weigh, before any strategy.

#include <iomanip>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/json_contract.h"
#include "cli/validators.h"
#include "spec/cluster.h"
#include "spec/model.h"
#include "workload/model_states.h"

namespace loom {
namespace {

struct DescribeOptions {
  std::string model_path;
  std::string cluster_path;
  std::optional<int64_t> nodes;
  std::optional<int64_t> seq_len;
  std::string optimizer = "adam";
  bool json = false;
};

// Training dtypes shown in the model-state table.
constexpr Dtype kStateDtypes[] = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kFp32};

struct StateRow {
  Dtype dtype;
  ModelStateBytes bytes;
};

struct DescribeReport {
  ModelSpec model;
  ParameterCount params;
  int64_t seq_len = 0;
  bool seq_from_model = false;  // true when --seq was not given
  FlopsPerToken flops;
  Optimizer optimizer = Optimizer::kAdam;
  std::vector<StateRow> states;
  std::optional<ClusterSpec> cluster;
};

Result<DescribeReport> BuildReport(const DescribeOptions& options) {
  DescribeReport report;
  LOOM_ASSIGN_OR_RETURN(report.model, LoadModelSpec(options.model_path));
  LOOM_ASSIGN_OR_RETURN(report.params, CountParameters(report.model));
  report.seq_from_model = !options.seq_len.has_value();
  report.seq_len = options.seq_len.value_or(report.model.max_position_embeddings);
  report.flops = ModelFlopsPerToken(report.model, report.seq_len);
  report.optimizer = *kOptimizerNames.Parse(options.optimizer);
  for (Dtype dtype : kStateDtypes) {
    Result<ModelStateBytes> bytes = ModelStates(report.params.total, dtype, report.optimizer);
    if (!bytes.ok())
      return Status::InvalidArgument(report.model.file + ": " + bytes.status().message());
    report.states.push_back({dtype, *bytes});
  }
  if (!options.cluster_path.empty()) {
    LOOM_ASSIGN_OR_RETURN(report.cluster, LoadClusterSpec(options.cluster_path, options.nodes));
  }
  return report;
}

nlohmann::ordered_json ModelJson(const ModelSpec& m) {
  nlohmann::ordered_json j = {{"name", m.name},
                              {"file", m.file},
                              {"hidden_size", m.hidden_size},
                              {"intermediate_size", m.intermediate_size},
                              {"num_hidden_layers", m.num_layers},
                              {"num_attention_heads", m.num_heads},
                              {"num_key_value_heads", m.num_kv_heads},
                              {"head_dim", m.head_dim},
                              {"vocab_size", m.vocab_size},
                              {"mlp", m.mlp == MlpKind::kGated ? "gated" : "plain"},
                              {"position_embedding_type", kPositionNames.Name(m.position)}};
  if (m.moe) {
    j["moe"] = {{"num_experts", m.moe->num_experts},
                {"experts_per_token", m.moe->experts_per_token},
                {"expert_intermediate_size", m.moe->expert_intermediate_size},
                {"num_shared_experts", m.moe->num_shared_experts},
                {"moe_layers", m.NumMoeLayers()}};
  }
  if (m.mla) j["attention"] = "mla";
  if (m.NumWindowedLayers() > 0) {
    j["sliding_window"] = {{"window", m.sliding_window},
                           {"windowed_layers", m.NumWindowedLayers()}};
  }
  return j;
}

nlohmann::ordered_json ReportJson(const DescribeReport& r) {
  nlohmann::ordered_json j;
  j["schema"] = "loom.describe/1";
  j["model"] = ModelJson(r.model);
  j["parameters"] = {{"total", r.params.total},
                     {"active", r.params.active},
                     {"embedding", r.params.embedding},
                     {"output_head", r.params.output_head}};
  j["seq_len"] = r.seq_len;
  j["seq_len_from"] = r.seq_from_model ? "max_position_embeddings" : "--seq";
  j["flops_per_token"] = {{"forward", r.flops.forward}, {"training", r.flops.training}};
  j["optimizer"] = kOptimizerNames.Name(r.optimizer);
  nlohmann::ordered_json states = nlohmann::ordered_json::array();
  for (const StateRow& row : r.states) {
    nlohmann::ordered_json entry = {{"dtype", kDtypeNames.Name(row.dtype)},
                                    {"weight_bytes", row.bytes.weights},
                                    {"gradient_bytes", row.bytes.gradients},
                                    {"optimizer_bytes", row.bytes.optimizer},
                                    {"total_bytes", row.bytes.Total()}};
    if (r.cluster) {
      entry["min_gpus_for_model_states"] =
          MinGpusForModelStates(row.bytes, r.cluster->gpu.memory_bytes);
    }
    states.push_back(entry);
  }
  j["model_states"] = states;
  if (r.cluster) {
    const ClusterSpec& c = *r.cluster;
    j["cluster"] = {
        {"name", c.name},
        {"file", c.file},
        {"gpu", c.gpu.name},
        {"gpu_memory_bytes", c.gpu.memory_bytes},
        {"gpus_per_node", c.gpus_per_node},
        {"nodes", c.nodes ? nlohmann::ordered_json(*c.nodes) : nlohmann::ordered_json(nullptr)}};
  }
  return j;
}

std::string ArchitectureLine(const ModelSpec& m) {
  std::string line = std::to_string(m.num_layers) + " layers, hidden " +
                     std::to_string(m.hidden_size) + ", " + std::to_string(m.num_heads) + " heads";
  if (m.num_kv_heads != m.num_heads) line += " (" + std::to_string(m.num_kv_heads) + " kv)";
  line += m.mla ? ", MLA attention" : ", head dim " + std::to_string(m.head_dim);
  line += std::string(m.mlp == MlpKind::kGated ? ", gated" : ", plain") + " MLP " +
          std::to_string(m.intermediate_size) + ", vocab " + std::to_string(m.vocab_size) + ", " +
          std::string(kPositionNames.Name(m.position));
  if (m.NumWindowedLayers() > 0) {
    line += ", sliding window " + std::to_string(m.sliding_window) + " in " +
            std::to_string(m.NumWindowedLayers()) + " of " + std::to_string(m.num_layers) +
            " layers";
  }
  return line;
}

void PrintHuman(const DescribeReport& r, std::ostream& out) {
  const auto field = [&out](const char* name) -> std::ostream& {
    return out << std::left << std::setw(17) << name;
  };
  field("model") << r.model.name << " (" << r.model.file << ")\n";
  field("architecture") << ArchitectureLine(r.model) << "\n";
  if (r.model.moe) {
    const MoeSpec& moe = *r.model.moe;
    field("experts") << moe.num_experts << " routed (top " << moe.experts_per_token << ") + "
                     << moe.num_shared_experts << " shared, width " << moe.expert_intermediate_size
                     << (moe.shared_expert_intermediate_size == moe.expert_intermediate_size
                             ? ""
                             : " (shared " + std::to_string(moe.shared_expert_intermediate_size) +
                                   ")")
                     << ", in " << r.model.NumMoeLayers() << " of " << r.model.num_layers
                     << " layers\n";
  }
  field("parameters") << HumanCount(r.params.total) << " total (" << GroupedDigits(r.params.total)
                      << "), " << HumanCount(r.params.active) << " active per token\n";
  field("") << "embedding " << HumanCount(r.params.embedding) << ", output head "
            << (r.params.output_head == 0 ? "tied" : HumanCount(r.params.output_head)) << "\n";
  field("FLOPs per token") << HumanFlops(r.flops.forward) << " forward, "
                           << HumanFlops(r.flops.training) << " training, at seq " << r.seq_len
                           << (r.seq_from_model ? " (max_position_embeddings; set --seq)" : "")
                           << "\n";
  out << "\nmodel states, " << kOptimizerNames.Name(r.optimizer) << " (unsharded)\n";
  out << std::left << std::setw(7) << "dtype" << std::right << std::setw(13) << "weights"
      << std::setw(13) << "gradients" << std::setw(13) << "optimizer" << std::setw(13) << "total";
  if (r.cluster) out << std::setw(12) << "min GPUs";
  out << "\n";
  for (const StateRow& row : r.states) {
    out << std::left << std::setw(7) << kDtypeNames.Name(row.dtype) << std::right << std::setw(13)
        << HumanBytes(row.bytes.weights) << std::setw(13) << HumanBytes(row.bytes.gradients)
        << std::setw(13) << HumanBytes(row.bytes.optimizer) << std::setw(13)
        << HumanBytes(row.bytes.Total());
    if (r.cluster)
      out << std::setw(12) << MinGpusForModelStates(row.bytes, r.cluster->gpu.memory_bytes);
    out << "\n";
  }
  out << "fp8 training keeps bf16 weights and fp32 master weights (Transformer Engine); its fp8 "
         "copies "
         "are transient.\n";
  if (r.cluster) {
    out << "\ncluster " << r.cluster->name << ": " << r.cluster->gpus_per_node << " x "
        << r.cluster->gpu.name << " (" << HumanBytes(r.cluster->gpu.memory_bytes) << ") per node"
        << (r.cluster->nodes ? ", " + Counted(*r.cluster->nodes, "node") : "") << "\n"
        << "min GPUs: the fewest GPUs whose memory holds the model states fully sharded (ZeRO-3 or "
           "TP x PP);\n"
        << "          activations, buffers and the CUDA context need more (see `loom simulate`).\n";
  }
}

}  // namespace

void AddDescribeCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<DescribeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "describe", "Parameters, FLOPs per token and model-state memory of a model (HF config.json)");
  InputFile(cmd->add_option("--model", options->model_path, kModelOptionHelp))->required();
  CLI::Option* cluster = InputFile(cmd->add_option(
      "--cluster", options->cluster_path,
      "Cluster file (see hardware/clusters/); adds the fewest GPUs that hold the model states"));
  cmd->add_option("--nodes", options->nodes, "Number of nodes, overriding the cluster file's")
      ->check(Positive())
      ->needs(cluster);
  cmd->add_option(
         "--seq", options->seq_len,
         "Sequence length for FLOPs per token (default: the model's max_position_embeddings)")
      ->check(Positive());
  cmd->add_option("--optimizer", options->optimizer, "Optimizer whose states are counted")
      ->transform(Choice(kOptimizerNames.Names()))
      ->capture_default_str();
  cmd->add_flag("--json", options->json,
                "Print one JSON object (schema loom.describe/1) instead of tables");
  cmd->footer(
      "Examples:\n"
      "  loom describe --model models/llama3-70b.json\n"
      "  loom describe --model models/deepseek-v3.json --cluster hardware/clusters/dgx-h100.json "
      "--seq 4096\n"
      "  loom describe --model path/to/hf/config.json --json\n"
      "  loom describe --model ~/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/<hash>");
  cmd->callback([options, cmd, &runner] {
    runner = [options, cmd](std::ostream& out, std::ostream& err) -> Status {
      LOOM_ASSIGN_OR_RETURN(DescribeReport report, BuildReport(*options));
      for (const std::string& warning : report.model.warnings)
        err << "loom: warning: " << warning << "\n";
      if (options->json) {
        out << JsonText(Stamped(ReportJson(report), CommandRequest(*cmd))) << "\n";
      } else {
        PrintHuman(report, out);
      }
      return Status::Ok();
    };
  });
}

}  // namespace loom
