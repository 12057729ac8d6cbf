// `loom simulate`: one training step of one strategy, as a discrete-event simulation.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/goodput_output.h"
#include "cli/json_contract.h"
#include "cli/memory_output.h"
#include "cli/validators.h"
#include "core/build_info.h"
#include "core/file_io.h"
#include "core/formatted.h"
#include "core/json_reader.h"
#include "plan/deepspeed_config_in.h"
#include "plan/fit_suggestions.h"
#include "plan/goodput.h"
#include "plan/megatron_args_in.h"
#include "report/plan_view.h"
#include "report/step_views.h"
#include "sim/simulator.h"
#include "sim/stragglers.h"
#include "sim/trace.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/pipeline_layout.h"
#include "spec/scenario.h"
#include "spec/step_intervals.h"

namespace loom {
namespace {

struct SimulateOptions {
  std::string scenario_path;
  std::string megatron_args_path;  // --megatron-args: a pretrain_gpt.py launch, "-" for stdin
  std::string deepspeed_config_path;  // --deepspeed-config: with it, a Megatron-DeepSpeed launch
  std::string model_path;
  std::string cluster_path;
  std::optional<int64_t> nodes;
  Strategy strategy;
  std::string schedule = "1f1b", recompute = "none", dtype = "bf16", optimizer = "adam",
              offload = "none", cp_comm = "p2p", grad_accumulation = "fused";
  std::string trace_path;
  std::string report_path;      // --report: the HTML report
  std::string pipeline_layout;  // Megatron-core's layout syntax; empty: none
  std::string attention = "fused";
  std::string framework = kDefaultFramework;
  bool framework_given = false;
  std::optional<double> memory_headroom;  // --memory-headroom
  bool dropout = false;
  bool full = false;
  bool json = false;
  bool goodput = false;  // --goodput: the goodput section even where the cluster lacks a key
  // What-ifs (sim/stragglers.h): --straggler, --slow-link, --jitter with --draws and --seed.
  std::vector<std::string> stragglers, slow_links;
  std::string jitter;
  int32_t draws = 1000;
  uint64_t seed = 1;
  bool draws_or_seed_given = false;
  std::optional<double> restart_s;  // --restart-s
  // The flags given that a scenario file also sets (the model, the cluster, the strategy, the
  // attention and dropout): with a scenario, each overrides its key.
  std::vector<std::string> scenario_flags_given;
  nlohmann::ordered_json request;  // CommandRequest, echoed by --json
};

// What holds each stage's memory, and |fits| for a step that does not fit.
MemoryView Memory(const SimulationResult& r, const std::vector<FitSuggestion>& fits) {
  return {r.memory_by_stage, r.peak_stage, r.memory_limit_bytes, r.reserve, fits, r.step_time_s};
}

nlohmann::ordered_json ResultJson(const SimulationResult& r,
                                  const std::optional<FrameworkProfile>& framework,
                                  const std::vector<FitSuggestion>& fits,
                                  const std::optional<StepInterval>& interval) {
  nlohmann::ordered_json j;
  j["schema"] = "loom.simulate/1";
  j["framework"] =
      framework ? nlohmann::ordered_json(framework->name) : nlohmann::ordered_json("none");
  j["step_time_s"] = r.step_time_s;
  AddIntervalJson(interval, j);
  j["tokens_per_s"] = r.tokens_per_s;
  j["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["bubble_fraction"] = r.bubble_fraction;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["fits_in_memory"] = r.fits_in_memory;
  j["inside_headroom"] = r.inside_headroom;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const StageResult& s : r.stages) {
    stages.push_back({{"stage", s.stage},
                      {"peak_memory_bytes", s.peak_memory_bytes},
                      {"compute_s", s.compute_s},
                      {"bubble_s", s.bubble_s}});
  }
  j["stages"] = stages;
  j["breakdown"] = BreakdownJson(r.breakdown);
  j["memory_limit_bytes"] = r.memory_limit_bytes;
  if (!r.sm_basis.empty()) j["sm_basis"] = r.sm_basis;
  j["clock_basis"] = r.clock_basis;
  if (!r.attention_basis.empty()) j["attention_basis"] = r.attention_basis;
  if (!r.microbatch_basis.empty()) j["microbatch_basis"] = r.microbatch_basis;
  if (!r.sharded_basis.empty()) j["zero3_basis"] = r.sharded_basis;
  if (!r.layer_kernels_basis.empty()) j["layer_kernels_basis"] = r.layer_kernels_basis;
  if (!r.softmax_basis.empty()) j["softmax_basis"] = r.softmax_basis;
  j["tensor_clock"] = r.tensor_clock;
  const CriticalPathSummary& c = r.critical_path;
  j["critical_path"] = {{"tasks", c.tasks},
                        {"compute_s", c.compute_s},
                        {"tp_comm_s", c.tp_comm_s},
                        {"cp_comm_s", c.cp_comm_s},
                        {"pp_comm_s", c.pp_comm_s},
                        {"dp_comm_s", c.dp_comm_s},
                        {"optimizer_s", c.optimizer_s},
                        {"host_s", c.host_s}};
  j["memory"] = MemoryJson(Memory(r, fits));
  return j;
}

void PrintHuman(const SimulationResult& r, const std::optional<FrameworkProfile>& framework,
                const std::vector<FitSuggestion>& fits, const std::optional<StepInterval>& interval,
                std::ostream& out) {
  const auto row = [&out](const char* name) -> std::ostream& {
    return out << std::left << std::setw(22) << name;
  };
  out << std::fixed << std::setprecision(3);
  row("step time") << r.step_time_s << " s";
  if (interval) {
    out << " (" << IntervalText(interval) << ", 80 % interval of measured steps)\n";
    row("  interval basis") << interval->basis << "\n";
  } else {
    out << "\n";
  }
  row("throughput") << std::setprecision(0) << r.tokens_per_s << " tokens/s, "
                    << std::setprecision(1) << r.model_tflops_per_gpu << " model TFLOP/s per GPU\n";
  row("MFU / HFU") << r.mfu * 100 << "% / " << r.hfu * 100 << "%\n";
  row("pipeline bubble") << r.bubble_fraction * 100 << "%\n";
  row("peak memory") << HumanBytes(static_cast<double>(r.peak_memory_bytes)) << " of "
                     << HumanBytes(static_cast<double>(r.memory_limit_bytes)) << " usable: "
                     << (r.fits_in_memory    ? "fits"
                         : r.inside_headroom ? "fits only inside the " + HeadroomText(r.reserve) +
                                                   " headroom kept for fragmentation"
                                             : std::string("DOES NOT FIT"))
                     << "\n";
  out << std::setprecision(3);
  row("breakdown") << "compute " << r.breakdown.compute_s << " s, exposed comm "
                   << r.breakdown.exposed_comm_s << " s, bubble " << r.breakdown.bubble_s
                   << " s, optimizer " << r.breakdown.optimizer_s << " s, host "
                   << r.breakdown.host_s << " s\n";
  const CriticalPathSummary& c = r.critical_path;
  row("critical path") << c.tasks << " tasks: compute " << c.compute_s << " s, tp " << c.tp_comm_s
                       << " s (tp/ep collectives), cp " << c.cp_comm_s << " s, pp " << c.pp_comm_s
                       << " s, dp " << c.dp_comm_s << " s, optimizer " << c.optimizer_s
                       << " s, host " << c.host_s << " s\n";
  if (!r.sm_basis.empty()) {
    row("comm beside compute") << r.sm_basis << ": compute took " << r.breakdown.compute_slowed_s
                               << " s longer (in compute above)\n";
  }
  row("tensor clocks") << r.clock_basis << "\n";
  if (!r.attention_basis.empty()) row("fused attention") << r.attention_basis << "\n";
  if (!r.microbatch_basis.empty()) row("per micro-batch") << r.microbatch_basis << "\n";
  if (!r.sharded_basis.empty()) row("zero-3") << r.sharded_basis << "\n";
  if (!r.layer_kernels_basis.empty()) row("layer kernels") << r.layer_kernels_basis << "\n";
  if (!r.softmax_basis.empty()) row("softmax") << r.softmax_basis << "\n";
  if (framework) {
    row("host") << framework->name << " (" << framework->file << "): the GPU waits " << c.host_s
                << " s on the critical path for the host to issue work\n\n";
  } else {
    row("host") << "none: the GPU is always fed (--framework none)\n\n";
  }
  out << std::right << std::setw(6) << "stage" << std::setw(14) << "peak memory" << std::setw(12)
      << "compute s" << std::setw(12) << "bubble s"
      << "\n";
  for (const StageResult& s : r.stages) {
    out << std::setw(6) << s.stage << std::setw(14)
        << HumanBytes(static_cast<double>(s.peak_memory_bytes)) << std::setw(12) << s.compute_s
        << std::setw(12) << s.bubble_s << "\n";
  }
  out << "\n";
  PrintMemory(Memory(r, fits), out);
}

// The what-ifs a run asked for, and their answers.
struct WhatIfs {
  std::vector<SlowPart> stragglers, slow_links;
  std::optional<StragglerReport> report;
  std::optional<JitterOptions> jitter;
  std::optional<MonteCarloResult> monte_carlo;
};

std::string DescribeParts(const std::vector<SlowPart>& parts, const char* unit) {
  std::string text;
  for (const SlowPart& p : parts) {
    if (!text.empty()) text += ", ";
    text += StrCat(p.scope == SlowPart::Scope::kNode ? "node " : "GPU ", p.index, " ",
                   Fixed(p.factor, 2), unit);
  }
  return text;
}

nlohmann::ordered_json PartsJson(const std::vector<SlowPart>& parts) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const SlowPart& p : parts) {
    j.push_back({{"scope", p.scope == SlowPart::Scope::kNode ? "node" : "rank"},
                 {"index", p.index},
                 {"factor", p.factor}});
  }
  return j;
}

void AddWhatIfJson(const WhatIfs& w, nlohmann::ordered_json& j) {
  if (w.report) {
    const StragglerReport& r = *w.report;
    nlohmann::ordered_json absorbed = nlohmann::ordered_json::array();
    for (const WaitGrowth& a : r.absorbed) {
      absorbed.push_back(
          {{"category", a.category}, {"added_wait_s", a.added_wait_s}, {"tasks", a.tasks}});
    }
    nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
    for (const CollectiveDelay& c : r.collectives) {
      collectives.push_back(
          {{"name", c.name}, {"members", c.members}, {"added_wait_s", c.added_wait_s}});
    }
    nlohmann::ordered_json idle = nlohmann::ordered_json::array();
    for (const RankIdle& i : r.most_idle)
      idle.push_back({{"rank", i.rank}, {"added_idle_s", i.added_idle_s}});
    j["what_if"] = {{"stragglers", PartsJson(w.stragglers)},
                    {"slow_links", PartsJson(w.slow_links)},
                    {"baseline_step_s", r.baseline_step_s},
                    {"step_time_s", r.step_s},
                    {"slowest_rank", r.slowest_rank},
                    {"slowest_rank_extra_work_s", r.slowest_rank_extra_work_s},
                    {"critical_extra_s", r.critical_extra_s},
                    {"absorbed", absorbed},
                    {"collectives", collectives},
                    {"ranks_waiting", r.ranks_waiting},
                    {"most_idle", idle}};
  }
  if (w.monte_carlo) {
    const MonteCarloResult& m = *w.monte_carlo;
    j["jitter"] = {{"sigma_fraction", w.jitter->sigma},
                   {"draws", w.jitter->draws},
                   {"seed", w.jitter->seed},
                   {"baseline_step_s", m.baseline_step_s},
                   {"mean_s", m.mean_s},
                   {"p50_s", m.p50_s},
                   {"p90_s", m.p90_s},
                   {"p99_s", m.p99_s},
                   {"min_s", m.min_s},
                   {"max_s", m.max_s},
                   {"mean_slowest_factor", m.mean_slowest_factor}};
  }
}

// A rank of the step graph in the user's terms.
std::string StepRankName(int32_t rank, int32_t stages) {
  return StrCat("stage ", rank % stages, " of replica ", rank / stages);
}

void PrintWhatIfs(const WhatIfs& w, int32_t stages, std::ostream& out) {
  const auto row = [&out](const char* name) -> std::ostream& {
    return out << std::left << std::setw(22) << name;
  };
  out << std::fixed << std::setprecision(3);
  if (w.report) {
    const StragglerReport& r = *w.report;
    std::string parts = DescribeParts(w.stragglers, "x kernel time");
    const std::string links = DescribeParts(w.slow_links, "x NIC bandwidth");
    if (!links.empty()) parts += (parts.empty() ? "" : "; ") + links;
    out << "\n";
    row("what-if") << parts << "\n";
    row("  step time") << r.step_s << " s against " << r.baseline_step_s << " s ("
                       << (r.step_s >= r.baseline_step_s ? "+" : "")
                       << Percent(r.step_s / r.baseline_step_s - 1) << ")\n";
    if (r.slowest_rank >= 0) {
      row("  slowest rank") << StepRankName(r.slowest_rank, stages) << ": "
                            << r.slowest_rank_extra_work_s << " s more kernel time, "
                            << r.critical_extra_s << " s of it on the critical path\n";
    }
    if (r.ranks_waiting > 0) {
      row("  ranks waiting") << r.ranks_waiting << " idle longer, the most:";
      for (size_t i = 0; i < r.most_idle.size(); ++i) {
        out << (i == 0 ? " " : ", ") << StepRankName(r.most_idle[i].rank, stages) << " +"
            << r.most_idle[i].added_idle_s << " s";
      }
      out << "\n";
    }
    for (const WaitGrowth& a : r.absorbed) {
      row("  waited in") << a.category << ": " << a.added_wait_s << " s more over " << a.tasks
                         << " tasks\n";
    }
    for (const CollectiveDelay& c : r.collectives) {
      row("  collective") << "'" << c.name << "' (" << c.members << " members): " << c.added_wait_s
                          << " s more waiting\n";
    }
  }
  if (w.monte_carlo) {
    const MonteCarloResult& m = *w.monte_carlo;
    out << "\n";
    row("jitter") << Percent(w.jitter->sigma) << " per GPU, " << w.jitter->draws << " draws (seed "
                  << w.jitter->seed << ")\n";
    row("  step time") << "p50 " << m.p50_s << " s, p90 " << m.p90_s << " s, p99 " << m.p99_s
                       << " s, mean " << m.mean_s << " s (no jitter: " << m.baseline_step_s
                       << " s)\n";
    row("  slowest GPU") << "mean factor " << Fixed(m.mean_slowest_factor, 3)
                         << ": the step follows it\n";
  }
}

// --jitter as a fraction: "2%" or "0.02".
Result<double> ParseJitter(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value)) {
    return Status::InvalidArgument("--jitter '" + text +
                                   "': give the spread of GPU speed as a percentage (2%) or a "
                                   "fraction (0.02)");
  }
  return percent ? value / 100 : value;
}

// Runs the what-ifs |options| asks for on the simulated |result|.
Result<WhatIfs> RunWhatIfs(const SimulateOptions& options, const ClusterSpec& cluster,
                           const Strategy& strategy, const SimulationResult& result) {
  WhatIfs w;
  for (const std::string& text : options.stragglers) {
    LOOM_ASSIGN_OR_RETURN(SlowPart part, ParseSlowPart(text, SlowKind::kCompute, "--straggler"));
    w.stragglers.push_back(part);
  }
  for (const std::string& text : options.slow_links) {
    LOOM_ASSIGN_OR_RETURN(SlowPart part, ParseSlowPart(text, SlowKind::kLink, "--slow-link"));
    w.slow_links.push_back(part);
  }
  const GpuFolding folding = FoldingOf(strategy, cluster.gpus_per_node,
                                       result.step.graph.num_ranks() / result.step.stages);
  if (!w.slow_links.empty() && result.step.inter_node_port.empty()) {
    return Status::InvalidArgument(
        "--slow-link: no transfer of this step crosses a NIC (every group fits in a node), so a "
        "slow NIC changes nothing; drop --slow-link, or simulate more nodes");
  }
  if (!w.stragglers.empty() || !w.slow_links.empty()) {
    LOOM_ASSIGN_OR_RETURN(
        const RankFactors factors,
        FoldSlowParts(folding, w.stragglers, w.slow_links, "--straggler", "--slow-link"));
    LOOM_ASSIGN_OR_RETURN(w.report, AnalyzeStragglers(result.step, result.timeline, factors));
  }
  if (options.jitter.empty() && options.draws_or_seed_given) {
    return Status::InvalidArgument(
        "--draws and --seed set the Monte Carlo of --jitter, which was not given; add --jitter "
        "2% (say), or drop them");
  }
  if (!options.jitter.empty()) {
    if (!options.full && strategy.dp > 1) {
      return Status::InvalidArgument(
          "--jitter draws every GPU, and the step follows the slowest replica; add --full so that "
          "all " +
          std::to_string(strategy.dp) + " data-parallel replicas are simulated");
    }
    LOOM_ASSIGN_OR_RETURN(const double sigma, ParseJitter(options.jitter));
    const unsigned cores = std::thread::hardware_concurrency();
    w.jitter = JitterOptions{sigma, options.draws, options.seed,
                             static_cast<int32_t>(std::max(1u, cores))};
    LOOM_ASSIGN_OR_RETURN(w.monte_carlo,
                          RunJitterMonteCarlo(result.step, result.timeline, folding, *w.jitter));
  }
  return w;
}

// A flag given with a scenario, over the scenario's value of its key.
struct ScenarioOverride {
  std::string flag;
  std::string key;                        // ScenarioKeyOfFlag
  nlohmann::ordered_json scenario_value;  // null where the scenario leaves the key out
  nlohmann::ordered_json given_value;
};

std::string ValueText(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "not set";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "--recompute none over strategy.recompute full, --tp 4 over strategy.tp 8".
std::string OverridesText(const std::vector<ScenarioOverride>& overrides) {
  std::string text;
  for (const ScenarioOverride& o : overrides) {
    text += StrCat(text.empty() ? "" : ", ", o.flag, " ", ValueText(o.given_value), " over ", o.key,
                   " ", ValueText(o.scenario_value));
  }
  return text;
}

nlohmann::ordered_json OverridesJson(const std::vector<ScenarioOverride>& overrides) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const ScenarioOverride& o : overrides) {
    j.push_back({{"flag", o.flag},
                 {"key", o.key},
                 {"scenario", o.scenario_value},
                 {"given", o.given_value}});
  }
  return j;
}

// The --attention choice of a launch's kernels (MegatronLaunch::options).
std::string AttentionChoiceOf(const MegatronOptions& o) {
  if (o.attention == AttentionKernel::kUnfused) return "unfused";
  if (o.fused_family) return std::string(kAttentionFamilyNames.Name(*o.fused_family));
  return "fused";
}

// The Megatron-LM launch of --megatron-args read for |model|, on the GPUs of |cluster_path| (with
// --nodes) or those torchrun states; |cluster| is loaded with the node count that makes them.
Result<MegatronLaunch> ReadLaunch(const SimulateOptions& options, const ModelSpec& model,
                                  const std::string& cluster_path, ClusterSpec& cluster) {
  for (const std::string& flag : options.scenario_flags_given) {
    if (flag == "--model" || flag == "--cluster") continue;
    return Status::InvalidArgument(
        StrCat(flag, " with --megatron-args ", options.megatron_args_path,
               ": the arguments set it; edit them, or drop --megatron-args and give every flag"));
  }
  std::string text;
  const std::string file = options.megatron_args_path == "-" ? "stdin" : options.megatron_args_path;
  if (options.megatron_args_path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    LOOM_ASSIGN_OR_RETURN(text, ReadInputFile(options.megatron_args_path,
                                              "check the path, or pass - to read the arguments "
                                              "from standard input"));
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<std::string> words, ShellWords(text, file));
  const int64_t gpus = cluster.TotalGpus().value_or(0);
  MegatronLaunch launch;
  if (options.deepspeed_config_path.empty()) {
    LOOM_ASSIGN_OR_RETURN(launch, ReadMegatronArguments(words, model, gpus, file));
  } else {
    LOOM_ASSIGN_OR_RETURN(const nlohmann::json config,
                          ReadJsonObjectFile(options.deepspeed_config_path,
                                             "check the path: the DeepSpeed config the launch's "
                                             "--deepspeed_config names"));
    LOOM_ASSIGN_OR_RETURN(launch,
                          ReadMegatronDeepSpeedLaunch(words, config, model, gpus,
                                                      {file, options.deepspeed_config_path}));
  }
  if (launch.launcher_world_size && !options.nodes &&
      *launch.launcher_world_size != cluster.TotalGpus()) {
    const int64_t per_node = cluster.gpus_per_node;
    if (per_node <= 0 || *launch.launcher_world_size % per_node != 0) {
      return Status::InvalidArgument(StrCat(file, ": torchrun's ", *launch.launcher_world_size,
                                            " GPUs are not whole nodes of ", cluster_path, " (",
                                            per_node, " GPUs a node); give --nodes"));
    }
    LOOM_ASSIGN_OR_RETURN(cluster,
                          LoadClusterSpec(cluster_path, *launch.launcher_world_size / per_node));
  }
  return launch;
}

// The strategy from the command line; enum flags were checked by CLI11 against the same names.
Strategy CommandLineStrategy(const SimulateOptions& o) {
  Strategy s = o.strategy;
  s.schedule = *kScheduleNames.Parse(o.schedule);
  s.recompute = *kRecomputeNames.Parse(o.recompute);
  s.dtype = *kDtypeNames.Parse(o.dtype);
  s.optimizer = *kOptimizerNames.Parse(o.optimizer);
  s.offload = *kOffloadNames.Parse(o.offload);
  s.cp_comm = *kCpCommNames.Parse(o.cp_comm);
  s.grad_accumulation = *kGradAccumulationNames.Parse(o.grad_accumulation);
  return s;
}

// The scenario with the flags given beside it, each over its key (ScenarioKeyOfFlag); the
// strategy keys are read back as the scenario's own are, so that a flag's value is checked as the
// key's would be.
Status ApplyScenario(const SimulateOptions& options, std::string& model_path,
                     std::string& cluster_path, std::optional<int64_t>& nodes, Strategy& strategy,
                     std::string& framework_name, std::string& attention, bool& dropout,
                     std::vector<ScenarioOverride>& overrides) {
  LOOM_ASSIGN_OR_RETURN(Scenario scenario, LoadScenario(options.scenario_path));
  model_path = scenario.model_path;
  cluster_path = scenario.cluster_path;
  if (!nodes) nodes = scenario.nodes;
  if (!options.framework_given && scenario.framework) framework_name = *scenario.framework;
  if (scenario.attention) attention = *scenario.attention;
  if (scenario.dropout) dropout = *scenario.dropout;
  nlohmann::ordered_json merged = StrategyJson(scenario.strategy);
  const nlohmann::ordered_json from_flags = StrategyJson(CommandLineStrategy(options));
  for (const std::string& flag : options.scenario_flags_given) {
    ScenarioOverride o{flag, ScenarioKeyOfFlag(flag), nullptr, nullptr};
    if (flag == "--model") {
      o.scenario_value = scenario.model_path, o.given_value = model_path = options.model_path;
    } else if (flag == "--cluster") {
      o.scenario_value = scenario.cluster_path, o.given_value = cluster_path = options.cluster_path;
    } else if (flag == "--attention") {
      if (scenario.attention) o.scenario_value = *scenario.attention;
      o.given_value = attention = options.attention;
    } else if (flag == "--dropout") {
      if (scenario.dropout) o.scenario_value = *scenario.dropout;
      o.given_value = dropout = options.dropout;
    } else {
      const std::string field = o.key.substr(std::string("strategy.").size());
      if (field != "pipeline_layout" && !from_flags.contains(field)) {
        return Status::Internal(flag + " has no scenario key (" + o.key +
                                " is not among StrategyJson's); this is a bug in loom");
      }
      if (merged.contains(field)) o.scenario_value = merged[field];
      o.given_value = field == "pipeline_layout" ? nlohmann::ordered_json(options.pipeline_layout)
                                                 : from_flags.at(field);
      merged[field] = o.given_value;
    }
    overrides.push_back(std::move(o));
  }
  // Read back: the flags' values through the scenario's reader (a --pipeline-layout against the
  // scenario's --pp, say), its errors naming the scenario and the keys the flags set.
  strategy = Strategy{};
  const nlohmann::json object = nlohmann::json::parse(merged.dump());  // JsonReader's JSON type
  JsonReader r(object, options.scenario_path + " with " + JoinedList(options.scenario_flags_given));
  ReadStrategyObject(r, &strategy);
  return r.Finish(UnknownKeys::kError);
}

Status Run(const SimulateOptions& options, std::ostream& out, std::ostream& err) {
  std::string model_path = options.model_path, cluster_path = options.cluster_path;
  std::optional<int64_t> nodes = options.nodes;
  Strategy strategy = CommandLineStrategy(options);
  std::string framework_name = options.framework;
  std::string attention = options.attention;
  bool dropout = options.dropout;
  std::vector<ScenarioOverride> overrides;
  if (!options.megatron_args_path.empty() && !options.scenario_path.empty()) {
    return Status::InvalidArgument(
        "--megatron-args with a scenario: each sets the strategy; give one of them");
  }
  if (!options.deepspeed_config_path.empty() && options.megatron_args_path.empty()) {
    return Status::InvalidArgument(
        "--deepspeed-config " + options.deepspeed_config_path +
        " without --megatron-args: loom reads a DeepSpeed config with the Megatron-DeepSpeed "
        "launch that runs it (the config has no tensor- or pipeline-parallel size); give "
        "--megatron-args FILE");
  }
  // A Megatron-DeepSpeed launch runs on Megatron-DeepSpeed's host stack unless told otherwise.
  if (!options.deepspeed_config_path.empty() && !options.framework_given) {
    framework_name = kDeepSpeedFramework;
  }
  if (!options.scenario_path.empty()) {
    LOOM_RETURN_IF_ERROR(ApplyScenario(options, model_path, cluster_path, nodes, strategy,
                                       framework_name, attention, dropout, overrides));
  } else if (!options.pipeline_layout.empty()) {
    LOOM_ASSIGN_OR_RETURN(strategy.layout,
                          ParsePipelineLayout(options.pipeline_layout, strategy.pp));
  }
  if (options.scenario_path.empty() && (model_path.empty() || cluster_path.empty())) {
    return Status::InvalidArgument(
        "simulate needs --model and --cluster, or a scenario file; see loom simulate --help");
  }
  LOOM_ASSIGN_OR_RETURN(ModelSpec model, LoadModelSpec(model_path));
  for (const std::string& warning : model.warnings) err << "loom: warning: " << warning << "\n";
  LOOM_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterSpec(cluster_path, nodes));
  std::optional<MegatronLaunch> launch;
  if (!options.megatron_args_path.empty()) {
    LOOM_ASSIGN_OR_RETURN(launch, ReadLaunch(options, model, cluster_path, cluster));
    strategy = launch->strategy;
    attention = AttentionChoiceOf(launch->options);
    dropout = launch->options.dropout;
  }
  LOOM_RETURN_IF_ERROR(ApplyRestartTime(options.restart_s, cluster));
  LOOM_ASSIGN_OR_RETURN(std::optional<FrameworkProfile> framework,
                        ResolveFramework(framework_name, cluster_path));
  SimulationOptions sim_options;
  sim_options.framework = framework;
  sim_options.memory_headroom = options.memory_headroom;
  sim_options.full = options.full;
  SetAttention(attention, sim_options);
  sim_options.kernels.dropout = dropout;
  if (!options.scenario_path.empty()) {
    // The scenario's strategy: its errors name the scenario file and its keys, not flags (a key a
    // flag set is named with the flag's value).
    LOOM_RETURN_IF_ERROR(
        InScenarioTerms(ValidateStrategy(strategy, model, cluster), options.scenario_path)
            .WithSuffix(overrides.empty() ? "" : " (with " + OverridesText(overrides) + ")"));
  }
  LOOM_ASSIGN_OR_RETURN(PreparedStep prepared,
                        PrepareTrainingStep(model, cluster, strategy, sim_options));
  LOOM_ASSIGN_OR_RETURN(SimulationResult result, SimulatePreparedStep(model, cluster, prepared));
  if (!options.trace_path.empty()) {
    LOOM_ASSIGN_OR_RETURN(TraceContext context,
                          StepTraceContext(prepared, model, sim_options.kernels));
    context.model = model_path;
    context.cluster = cluster_path;
    context.strategy_json = StrategyJson(strategy).dump();
    context.loom_version = LoomBuildVersion();
    const TraceRun run{&result.timeline, &result.memory, "", 0};
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(options.trace_path,
                                             ChromeTraceJson(result.step, {&run, 1}, context),
                                             "pass another --trace"));
  }
  if (!options.report_path.empty()) {
    std::string source =
        options.scenario_path.empty() ? model_path + " on " + cluster_path : options.scenario_path;
    if (!overrides.empty()) source += " with " + OverridesText(overrides);
    // The Gantt names the ranks as the trace does.
    LOOM_ASSIGN_OR_RETURN(const TraceContext context,
                          StepTraceContext(prepared, model, sim_options.kernels));
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(
        options.report_path,
        SimulationReport("loom simulate: " + source, StrategySummary(strategy), result, &context),
        "pass another --report"));
  }
  std::vector<FitSuggestion> fits;
  if (!result.fits_in_memory) {
    FitOptions fit;
    fit.simulation = sim_options;
    LOOM_ASSIGN_OR_RETURN(fits, SuggestFits(model, cluster, strategy, fit));
  }
  // Only a cluster with a "reliability" object gets a goodput: the output of one without stays
  // as it was.
  std::optional<GoodputEstimate> goodput;
  if (cluster.reliability) {
    LOOM_ASSIGN_OR_RETURN(goodput, EstimateGoodput(model, cluster, strategy));
  }
  LOOM_ASSIGN_OR_RETURN(const WhatIfs what_ifs, RunWhatIfs(options, cluster, strategy, result));
  // How sure: the regime's spread of measured against predicted steps (spec/step_intervals.h).
  const std::optional<StepInterval> interval =
      ShippedStepInterval(cluster, framework, strategy, result.step_time_s);
  if (options.json) {
    nlohmann::ordered_json body = ResultJson(result, framework, fits, interval);
    if (!overrides.empty()) body["scenario_overrides"] = OverridesJson(overrides);
    if (launch) {
      body["megatron_args"] = {
          {"file", options.megatron_args_path},
          {"deepspeed_config", options.deepspeed_config_path.empty()
                                   ? nlohmann::ordered_json(nullptr)
                                   : nlohmann::ordered_json(options.deepspeed_config_path)},
          {"strategy", StrategyJson(strategy)},
          {"attention", attention},
          {"dropout", dropout},
          {"not_modelled", launch->not_modelled},
          {"notes", launch->notes}};
    }
    if (goodput) body["goodput"] = GoodputJson(*goodput, result.tokens_per_s, cluster);
    AddWhatIfJson(what_ifs, body);
    out << JsonText(Stamped(body, options.request)) << "\n";
  } else {
    if (!overrides.empty()) {
      out << std::left << std::setw(22) << "scenario" << options.scenario_path << " with "
          << OverridesText(overrides) << "\n";
    }
    if (launch) {
      out << std::left << std::setw(22) << "megatron args" << options.megatron_args_path
          << (options.deepspeed_config_path.empty() ? "" : " with " + options.deepspeed_config_path)
          << ": " << StrategySummary(strategy) << ", attention " << attention
          << (dropout ? ", dropout" : "") << "\n";
      if (!launch->not_modelled.empty()) {
        out << std::setw(22) << "  not modelled" << JoinedList(launch->not_modelled) << "\n";
      }
      for (const std::string& note : launch->notes)
        out << std::setw(22) << "  note" << note << "\n";
    }
    PrintHuman(result, framework, fits, interval, out);
    // The section where the file's reliability data make a goodput, or where asked (--goodput,
    // --restart-s): not lines of "unknown" under every simulation on such a cluster.
    if (goodput && (goodput->goodput || options.goodput || options.restart_s)) {
      PrintGoodput(*goodput, result.tokens_per_s, cluster, out);
    }
    PrintWhatIfs(what_ifs, result.step.stages, out);
  }
  return Status::Ok();
}

void AddStrategyOptions(CLI::App* cmd, SimulateOptions& o) {
  cmd->add_option("--tp", o.strategy.tp, "Tensor-parallel size")->capture_default_str();
  cmd->add_option("--pp", o.strategy.pp, "Pipeline-parallel size (stages)")->capture_default_str();
  cmd->add_option("--dp", o.strategy.dp, "Data-parallel size")->capture_default_str();
  cmd->add_option("--cp", o.strategy.cp, "Context-parallel size")->capture_default_str();
  cmd->add_option("--ep", o.strategy.ep, "Expert-parallel size")->capture_default_str();
  cmd->add_option("--vpp", o.strategy.vpp,
                  "Model chunks per stage (interleaved: 2+, zb-v/dualpipev: 2)")
      ->capture_default_str();
  cmd->add_flag("--sp", o.strategy.sp, "Sequence parallelism over the tp group");
  cmd->add_option("--micro-batch", o.strategy.micro_batch, "Sequences per micro-batch")
      ->capture_default_str();
  cmd->add_option("--global-batch", o.strategy.global_batch, "Sequences per step")
      ->capture_default_str();
  cmd->add_option("--seq", o.strategy.seq_len, "Sequence length")->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "Pipeline schedule")
      ->transform(Choice(kScheduleNames.Names()))
      ->capture_default_str();
  cmd->add_option("--recompute", o.recompute, "Activation recomputation")
      ->transform(Choice(kRecomputeNames.Names()))
      ->capture_default_str();
  cmd->add_option("--recompute-layers", o.strategy.recompute_layers,
                  "With --recompute full: layers per model chunk recomputed (0: all)")
      ->capture_default_str();
  cmd->add_option("--zero", o.strategy.zero_stage, "ZeRO stage 0-3")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Training dtype")
      ->transform(Choice(kDtypeNames.Names()))
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "Optimizer")
      ->transform(Choice(kOptimizerNames.Names()))
      ->capture_default_str();
  cmd->add_option("--offload", o.offload, "Offload")
      ->transform(Choice(kOffloadNames.Names()))
      ->capture_default_str();
  cmd->add_flag("--allow-cross-node-tp", o.strategy.allow_cross_node_tp,
                "Accept tp larger than a node");
  cmd->add_option(
         "--etp", o.strategy.etp,
         "Expert tensor-parallel size: ranks each expert's MLP is split over (0: the tp size)")
      ->capture_default_str();
  cmd->add_option("--cp-comm", o.cp_comm,
                  "Context-parallel K/V exchange: p2p (ring attention, overlapped) or all_gather")
      ->transform(Choice(kCpCommNames.Names()))
      ->capture_default_str();
  cmd->add_option("--first-stage-layers", o.strategy.first_stage_layers,
                  "Transformer layers on the first pipeline stage (0: even split)")
      ->capture_default_str();
  cmd->add_option("--last-stage-layers", o.strategy.last_stage_layers,
                  "Transformer layers on the last pipeline stage (0: even split)")
      ->capture_default_str();
  cmd->add_option(
      "--pipeline-layout", o.pipeline_layout,
      "Every model chunk's layers in Megatron-core's --pipeline-model-parallel-layout syntax: "
      "\"|\" between virtual stages (stage-major per chunk), E the embedding, t a layer, L the "
      "loss, "
      "(...)*n and t*n repeat; e.g. \"E|(t|)*126L\" is Llama 3 405B's 126 layers on --pp 16 "
      "--vpp 8 with the first chunk holding only the embedding and the last only the loss; with "
      "--schedule zb-v or dualpipev the virtual stages run down the stages and back, so stage 0 "
      "holds the first and the last");
  cmd->add_option(
         "--microbatch-group", o.strategy.microbatch_group,
         "Interleaved schedule: micro-batches run through one chunk before the next (Megatron-LM's "
         "--microbatch-group-size-per-virtual-pipeline-stage; 0: pp, depth-first)")
      ->check(Between(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--moe-capacity-factor", o.strategy.moe_capacity_factor,
                  "Expert capacity over the mean load; tokens beyond it are dropped (0: dropless)")
      ->check(NonNegative())
      ->capture_default_str();
  cmd->add_option("--moe-imbalance", o.strategy.moe_imbalance,
                  "Tokens of the busiest expert over the mean (1: a balanced router)")
      ->check(Between(1, 1e6))
      ->capture_default_str();
  cmd->add_flag("--overlap-grad-reduce", o.strategy.overlap_grad_reduce,
                "Reduce gradient buckets during the backward pass, not after it");
  cmd->add_flag("--overlap-param-gather", o.strategy.overlap_param_gather,
                "All-gather updated weights under the next step's forward (needs --zero 1+)");
  cmd->add_flag(
      "--tp-comm-overlap", o.strategy.tp_comm_overlap,
      "Pipeline tensor-parallel all-gathers and reduce-scatters with their GEMMs (needs --sp)");
  cmd->add_flag("--grad-reduce-in-bf16", o.strategy.grad_reduce_in_bf16,
                "Accumulate and reduce bf16 (or fp8 training's) gradients in bf16 (default: fp32, "
                "as Megatron-LM)");
  cmd->add_option(
         "--grad-accumulation", o.grad_accumulation,
         "How micro-batches' weight gradients are summed: fused (into the fp32 main_grad by the "
         "wgrad GEMM, Megatron-LM's default), add (--no-gradient-accumulation-fusion: a separate "
         "main_grad.add_) or autograd (.grad in the param dtype, PyTorch DDP)")
      ->transform(Choice(kGradAccumulationNames.Names()))
      ->capture_default_str();
}

}  // namespace

void AddSimulateCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* cmd =
      app.add_subcommand("simulate", "Simulate one training step of one parallelisation strategy");
  InputFile(cmd->add_option(
      "scenario", options->scenario_path,
      "Scenario file (schema loom.scenario/1) naming model, cluster and strategy; a flag "
      "given beside it overrides the key it stands for (--tp: strategy.tp)"));
  InputFile(cmd->add_option("--model", options->model_path, kModelOptionHelp));
  InputFile(cmd->add_option(
      "--megatron-args", options->megatron_args_path,
      "A Megatron-LM launch (a torchrun ... pretrain_gpt.py script, or its arguments; - reads "
      "standard input) to simulate as it runs: its parallelism, batch, schedule, recompute, "
      "precision, optimizer, ZeRO/FSDP, overlap and attention flags make the strategy, its model "
      "flags must be --model's, and the flags loom does not model are listed. With --model and "
      "--cluster; the GPUs are torchrun's --nnodes x --nproc_per_node, else the cluster's"));
  InputFile(cmd->add_option(
      "--deepspeed-config", options->deepspeed_config_path,
      "With --megatron-args: the DeepSpeed config (ds_config.json) of a Megatron-DeepSpeed launch "
      "(its arguments hold --deepspeed --deepspeed_config FILE). The config gives the batch, "
      "precision and ZeRO, the arguments the rest; where both say a thing they must agree. The "
      "host stack is then megatron-deepspeed-2024 unless --framework says otherwise"));
  InputFile(
      cmd->add_option("--cluster", options->cluster_path, "Cluster file (see hardware/clusters/)"));
  cmd->add_option("--nodes", options->nodes, "Number of nodes, overriding the cluster file's")
      ->check(Positive());
  AddStrategyOptions(cmd, *options);
  cmd->add_option("--attention", options->attention, kAttentionHelp)
      ->transform(Choice(kAttentionChoices))
      ->capture_default_str();
  cmd->add_flag("--dropout", options->dropout,
                "Apply dropout (Megatron-LM's GPT default) and keep its masks");
  cmd->add_option("--framework", options->framework, kFrameworkHelp)
      ->each([options](const std::string&) { options->framework_given = true; })
      ->capture_default_str();
  cmd->add_option("--memory-headroom", options->memory_headroom, kMemoryHeadroomHelp)
      ->check(Between(0, 0.9));
  cmd->add_option(
      "--trace", options->trace_path,
      "Write a Chrome trace (open it in Perfetto) to this file: slices named by pass, micro-batch "
      "and "
      "chunk (\"F mb3 c1\"), sends and collectives with bytes and peers, flow arrows for sends and "
      "cross-stream dependencies, ranks named by their Megatron-LM global rank");
  cmd->add_option("--report", options->report_path,
                  "Write an HTML report (one file, opens offline in a browser): the pipeline "
                  "Gantt, memory per stage "
                  "and the step breakdown; FILE.html#gantt, #memory or #breakdown shows one view");
  cmd->add_flag("--full", options->full, "Simulate every data-parallel replica, not one");
  cmd->add_option(
      "--straggler", options->stragglers,
      "What if a GPU is slow: rank=GPU:FACTOR (GPU in Megatron-LM's global rank order) or "
      "node=NODE:FACTOR, its kernels taking FACTOR times as long (1.2: 20% slower); repeat for "
      "more. Prints the step with it, the slow rank's extra work, and where the other ranks "
      "wait for it (a slow GPU outside replica 0 needs --full)");
  cmd->add_option("--slow-link", options->slow_links,
                  "What if a NIC is degraded: rank=GPU:FRACTION or node=NODE:FRACTION of its "
                  "bandwidth left (0.5: half); transfers across it take as long as it allows");
  cmd->add_option(
      "--jitter", options->jitter,
      "Monte Carlo of GPU-to-GPU speed spread: each draw gives every GPU a log-normal kernel "
      "time factor of this spread (2% or 0.02) for the whole step; prints p50/p90/p99 step "
      "time over --draws draws (needs --full when --dp > 1)");
  cmd->add_option("--draws", options->draws, "Monte Carlo draws for --jitter")
      ->check(Between(1, 1000000))
      ->each([options](const std::string&) { options->draws_or_seed_given = true; })
      ->capture_default_str();
  cmd->add_option("--seed", options->seed,
                  "Seed of the --jitter draws: the same seed gives the same draws")
      ->each([options](const std::string&) { options->draws_or_seed_given = true; })
      ->capture_default_str();
  cmd->add_option("--restart-s", options->restart_s, kRestartHelp)->check(NonNegative());
  cmd->add_flag("--goodput", options->goodput,
                "Print the goodput section even where the cluster's reliability object lacks a key "
                "it needs (the section then names the key)");
  cmd->add_flag("--json", options->json,
                "Print one JSON object (schema loom.simulate/1; \"goodput\" when the cluster has "
                "a reliability object)");
  cmd->footer(
      "Examples:\n"
      "  loom simulate --model models/gpt3-175b.json --cluster hardware/clusters/dgx-a100.json \\\n"
      "      --tp 8 --pp 16 --dp 8 --vpp 2 --schedule interleaved --sp --micro-batch 1 "
      "--global-batch 1536\n"
      "  loom simulate scenarios/gpt3-175b-1024gpu.json --trace step.json --json\n"
      "  # what one 10%-slow node and 2% GPU-to-GPU jitter cost 16,384 GPUs:\n"
      "  loom simulate scenarios/llama3-405b-16384gpu.json --full --straggler node=1000:1.1 "
      "--jitter 2%\n"
      "\n"
      "What-ifs: --straggler and --slow-link rerun the step with those GPUs or NICs slowed and say "
      "who waited for them; --jitter draws every GPU's speed --draws times (a replay of the "
      "simulated step per draw) and prints the step's p50/p90/p99. README.md, What-ifs.\n"
      "\n"
      "Goodput: when the cluster file has a \"reliability\" object (hardware/README.md), a last "
      "section says how often a job of this many GPUs fails (MTBF: the component rates times the "
      "GPUs, nodes and NICs it spans), what a checkpoint of the weights and optimizer states "
      "costs to write and read at the file's storage bandwidth, how much training to do between "
      "checkpoints (Daly's optimum, Young's beside it) and the expected goodput, the share of wall "
      "time that trains, with the effective tokens/s it leaves. Where the file lacks a key the "
      "goodput needs (the restart time, say), the section appears with --goodput (naming the key "
      "instead of guessing it) or once --restart-s gives the time; --json always has it.");
  cmd->callback([options, cmd, &runner] {
    // Flags that override a scenario's keys (ApplyScenario); --nodes, --framework and the output
    // flags are not among them (the first two override their keys as they always did).
    static const std::set<std::string> kWithScenario = {
        "--nodes",   "--framework",       "--trace",     "--report", "--full",
        "--json",    "--straggler",       "--slow-link", "--jitter", "--draws",
        "--seed",    "--restart-s",       "--help",      "scenario", "--megatron-args",
        "--goodput", "--deepspeed-config"};
    options->request = CommandRequest(*cmd);
    options->scenario_flags_given.clear();
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() == 0 || kWithScenario.count(option->get_name()) > 0) continue;
      options->scenario_flags_given.push_back(option->get_name());
    }
    runner = [options](std::ostream& out, std::ostream& err) { return Run(*options, out, err); };
  });
}

}  // namespace loom
