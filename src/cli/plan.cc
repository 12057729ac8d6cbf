// `loom plan`: search the strategy space, simulate the survivors, rank them and emit the winner
// as launch arguments.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/goodput_output.h"
#include "cli/json_contract.h"
#include "cli/plan_csv.h"
#include "cli/plan_output.h"
#include "cli/plan_progress.h"
#include "cli/validators.h"
#include "core/file_io.h"
#include "core/formatted.h"
#include "core/interrupt.h"
#include "plan/deepspeed_config.h"
#include "plan/explain.h"
#include "plan/megatron_args.h"
#include "plan/planner.h"
#include "program/plan_file.h"
#include "report/plan_view.h"
#include "sim/simulated_plan.h"
#include "spec/cluster.h"
#include "spec/framework.h"
#include "spec/model.h"
#include "spec/scenario.h"

namespace loom {
namespace {

struct PlanCommandOptions {
  std::string model_path, cluster_path;
  int64_t gpus = 0, global_batch = 0, seq_len = 0;
  std::string dtype = "bf16", optimizer = "adam", objective = "time", grad_accumulation = "auto";
  std::vector<std::string> fix;
  int64_t top = 10;
  int32_t threads = 0;
  std::string explain;
  std::string emit;
  std::string out;     // --emit plan's file; none: the plan file goes to stdout
  std::string report;  // --report: the HTML report of the search
  std::string csv;     // --csv: every strategy of the search with its verdict
  bool out_given = false, pick_given = false;  // whether --out and --pick are on the command line
  double risk = 0.5;        // --risk: the quantile of the step time plans are ranked by
  bool risk_given = false;  // whether --risk is on the command line
  bool megatron_version_given = false;
  int64_t pick = 1;
  std::string attention = "fused";
  std::string megatron_version = "latest";
  std::string framework = "auto";
  std::optional<double> memory_headroom;  // --memory-headroom
  std::optional<double> restart_s;  // --restart-s
  bool dropout = false;
  bool exhaustive = false;
  bool json = false;
  std::optional<double> price, tokens, max_step_time;  // --price, --tokens, --max-step-time
  int64_t min_gpus = 0, max_gpus = 0;                  // 0: --gpus
  bool distinct = false;
  bool progress = false;           // --progress: also when stderr is not a terminal
  nlohmann::ordered_json request;  // CommandRequest, echoed by --json
};

// --grad-accumulation's choices: the modes, and auto (the --emit framework's own).
std::vector<std::string> WithAuto(std::vector<std::string> modes) {
  modes.insert(modes.begin(), "auto");
  return modes;
}

// The cluster with enough nodes for |gpus| and for |max_gpus| (--max-gpus; 0 when not given).
Result<ClusterSpec> ClusterFor(const std::string& path, int64_t gpus, int64_t max_gpus) {
  LOOM_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterSpec(path, std::nullopt));
  const int64_t per_node = cluster.gpus_per_node;
  if (gpus > per_node && gpus % per_node != 0) {
    return Status::InvalidArgument("--gpus " + std::to_string(gpus) + ": not a whole number of " +
                                   path + "'s nodes (" + std::to_string(per_node) +
                                   " GPUs each); use " +
                                   std::to_string(gpus / per_node * per_node) + " or " +
                                   std::to_string((gpus / per_node + 1) * per_node));
  }
  const int64_t nodes = std::max<int64_t>(1, std::max(gpus, max_gpus) / per_node);
  // Node groups hold the ranks in the file's order and have no GPU beyond their last node.
  if (!cluster.node_groups.empty() && nodes > cluster.nodes.value_or(0)) {
    const int64_t total = cluster.TotalGpus().value_or(0);
    return Status::InvalidArgument((max_gpus > gpus ? "--max-gpus " + std::to_string(max_gpus)
                                                    : "--gpus " + std::to_string(gpus)) +
                                   ": more GPUs than the " + std::to_string(total) + " of " + path +
                                   "'s node_groups; use " + std::to_string(total) +
                                   " or fewer, or add nodes to a group");
  }
  cluster.nodes = nodes;
  return cluster;
}

// Progress on stderr: on a terminal once the search has run for a second, and with --progress
// wherever stderr goes.
std::function<void(const PlanProgress&)> Progress(std::ostream& err, bool forced,
                                                  Objective objective) {
  const bool terminal = &err == &std::cerr && isatty(STDERR_FILENO) != 0;
  if (!terminal && !forced) return nullptr;
  auto printer = std::make_shared<ProgressPrinter>(err, ProgressStyle{terminal, forced}, objective);
  return [printer](const PlanProgress& p) { (*printer)(p); };
}

// --min-gpus and --max-gpus around --gpus: the GPU counts a search may cover.
Status CheckGpuRange(const PlanCommandOptions& o) {
  if (o.min_gpus > o.gpus) {
    return Status::InvalidArgument("--min-gpus " + std::to_string(o.min_gpus) +
                                   ": more than --gpus " + std::to_string(o.gpus) +
                                   "; the search goes down from --gpus to --min-gpus, "
                                   "so give a --min-gpus at most --gpus (or raise --gpus)");
  }
  if (o.max_gpus > 0 && o.max_gpus < o.gpus) {
    return Status::InvalidArgument(
        "--max-gpus " + std::to_string(o.max_gpus) + ": fewer than --gpus " +
        std::to_string(o.gpus) +
        "; the search goes up from --gpus to --max-gpus, "
        "so give a --max-gpus at least --gpus (or lower --gpus, with --min-gpus for "
        "smaller counts)");
  }
  return Status::Ok();
}

// What the Megatron-LM launch must run as loom simulated it, and the release it is written for.
MegatronOptions MegatronOptionsOf(const PlanCommandOptions& o) {
  MegatronOptions m;
  m.attention = AttentionKernelOf(o.attention);
  m.fused_family = kAttentionFamilyNames.Parse(o.attention);
  m.dropout = o.dropout;
  m.version = kMegatronVersionNames.Parse(o.megatron_version).value_or(MegatronVersion::kLatest);
  return m;
}

// What --emit can express: the strategy's launch settings, or why there are none. A plan file
// holds any strategy the simulator runs.
Status Expressible(const std::string& emit, const ModelSpec& model, const Strategy& s,
                   const MegatronOptions& megatron) {
  if (emit == "plan") return Status::Ok();
  if (emit == "megatron") {
    Result<std::vector<std::string>> args = MegatronArguments(model, s, megatron);
    return args.ok() ? Status::Ok() : args.status();
  }
  // The attention the ranking simulated, as Emit passes it (MegatronOptions carries it for both).
  Result<DeepSpeedPlan> plan = DeepSpeedConfig(model, s, DeepSpeedOptions{megatron.attention});
  return plan.ok() ? Status::Ok() : plan.status();
}

// Writes the plan file of |strategy| (plan |rank|) to --out: its rank programs as the planner
// simulated them, one data-parallel replica with its tp and cp GPUs folded; validate unfolds it to
// every GPU.
Result<EmitResult> EmitPlanFile(const PlanCommandOptions& o, const PlanHeader& header,
                                const Strategy& strategy, int64_t rank) {
  const SimulationOptions& simulation = header.options.simulation;
  nlohmann::ordered_json source = {
      {"model", o.model_path},
      {"cluster", o.cluster_path},
      {"gpus", o.gpus},
      {"strategy", StrategyJson(strategy)},
      {"simulation",
       {{"attention", o.attention}, {"dropout", simulation.kernels.dropout}, {"full", simulation.full}}},
      {"request", o.request}};
  LOOM_ASSIGN_OR_RETURN(PlanFile plan, MakePlanFile(header.model, header.cluster, strategy,
                                                    simulation, std::move(source)));
  EmitResult emitted;
  if (!o.out_given) {
    emitted.file_text = PlanFileText(plan);
  } else {
    LOOM_RETURN_IF_ERROR(WritePlanFile(plan, o.out));
  }
  const int32_t programs = plan.step.graph.num_ranks();
  const int64_t ranks = int64_t{plan.step.stages} * plan.gpus.lanes();  // one process per GPU
  const int32_t tasks = plan.step.graph.num_tasks();
  // Without --out the file went to stdout, wherever the shell sent it.
  const std::string file = o.out_given ? o.out : "plan.json";
  const std::string validate =
      "mpirun -np " + std::to_string(ranks) + " loom validate " + file + " --backend host";
  emitted.rank = rank;
  emitted.heading = "plan file of plan " + std::to_string(rank);
  emitted.text =
      (!o.out_given
           ? std::string(
                 "wrote the plan file to stdout (save it: loom plan ... --emit plan > plan.json)")
           : "wrote " + o.out) +
      ": " + std::to_string(programs) + " rank programs (" + std::to_string(plan.step.stages) +
      " stages x " + std::to_string(plan.step.replicas) + " replicas, tp " +
      std::to_string(plan.gpus.tp) + " cp " + std::to_string(plan.gpus.cp) + " folded), " +
      std::to_string(tasks) + " tasks, for " + std::to_string(ranks) +
      " GPUs\nrun them on every GPU and compare them with the prediction:\n  " + validate + "\n";
  emitted.json = {{"format", "plan"},
                  {"rank", rank},
                  {"plan_file", o.out},
                  {"ranks", ranks},
                  {"rank_programs", programs},
                  {"stages", plan.step.stages},
                  {"replicas", plan.step.replicas},
                  {"tasks", tasks},
                  {"validate", validate}};
  return emitted;
}

// The launch settings (or the plan file) of plan |rank| (1-based).
Result<EmitResult> Emit(const PlanCommandOptions& o, const PlanHeader& header,
                        const PlanReport& report, int64_t rank) {
  if (rank > static_cast<int64_t>(report.ranked.size())) {
    return Status::InvalidArgument("--pick " + std::to_string(rank) + ": only " +
                                   std::to_string(report.ranked.size()) +
                                   " plans are ranked; raise --top");
  }
  const std::string& emit = o.emit;
  const ModelSpec& model = header.model;
  const Strategy& s = report.ranked[rank - 1].strategy;
  if (emit == "plan") return EmitPlanFile(o, header, s, rank);
  EmitResult emitted;
  emitted.rank = rank;
  if (emit == "megatron") {
    const MegatronOptions megatron = MegatronOptionsOf(o);
    LOOM_ASSIGN_OR_RETURN(std::vector<std::string> args, MegatronArguments(model, s, megatron));
    emitted.text = FormatMegatronCommand(args, megatron, s.dtype);
    emitted.notes = MegatronNotes(model, megatron);
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const EnvVariable& v : MegatronEnvironment(args, s.dtype)) env[v.name] = v.value;
    emitted.json = {
        {"format", "megatron"},
        {"rank", rank},
        {"megatron_version", kMegatronVersionNames.Name(megatron.version)},
        {"minimum_megatron_version", kMegatronVersionNames.Name(MinimumMegatronVersion(args))},
        {"env", env},
        {"arguments", args},
        {"notes", emitted.notes}};
    return emitted;
  }
  DeepSpeedOptions ds_options;
  ds_options.attention = AttentionKernelOf(o.attention);
  LOOM_ASSIGN_OR_RETURN(DeepSpeedPlan ds, DeepSpeedConfig(model, s, ds_options));
  std::string env_text;
  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const auto& [name, value] : ds.env) {
    env_text += "  export " + name + "=" + value + "\n";
    env[name] = value;
  }
  std::string args;
  for (const std::string& a : ds.launcher_args)
    args += (a.rfind("--", 0) == 0 && !args.empty() ? " \\\n    " : " ") + a;
  emitted.text = (env_text.empty() ? "" : "environment of every process:\n" + env_text + "\n") +
                 "ds_config.json:\n" + JsonText(ds.config) +
                 "\n\nMegatron-DeepSpeed pretrain_gpt.py arguments:\n   " + args + "\n";
  emitted.notes = ds.notes;
  emitted.json = {{"format", "deepspeed"},
                  {"rank", rank},
                  {"env", env},
                  {"config", ds.config},
                  {"launcher_args", ds.launcher_args}};
  return emitted;
}

Status Run(const PlanCommandOptions& o, std::ostream& out, std::ostream& err) {
  // Flags that only mean something with another: refused rather than silently ignored.
  if (o.out_given && o.emit != "plan") {
    return Status::InvalidArgument("--out " + o.out +
                                   ": only --emit plan writes a file; add --emit plan, or drop "
                                   "--out (--emit megatron and deepspeed print their settings)");
  }
  if (o.emit == "plan" && o.json && !o.out_given) {
    return Status::InvalidArgument(
        "--emit plan --json: the JSON report takes stdout, so the plan file needs a file of "
        "its own; add --out FILE (e.g. --out plan.json)");
  }
  if (o.megatron_version_given && o.emit != "megatron") {
    return Status::InvalidArgument(
        "--megatron-version " + o.megatron_version +
        ": names the Megatron-LM release that --emit megatron writes for; add --emit "
        "megatron, or drop --megatron-version");
  }
  if (o.risk_given && o.objective == "memory-headroom") {
    return Status::InvalidArgument(
        "--risk " + Fixed(o.risk, 2) +
        ": ranks by a quantile of the step time, and --objective memory-headroom ranks by the "
        "peak memory; drop --risk, or rank by --objective time, cost or goodput");
  }
  if (o.pick_given && o.emit.empty()) {
    return Status::InvalidArgument(
        "--pick " + std::to_string(o.pick) +
        ": picks the plan that --emit emits; add --emit megatron, deepspeed or plan");
  }
  LOOM_RETURN_IF_ERROR(CheckGpuRange(o));
  LOOM_ASSIGN_OR_RETURN(ModelSpec model, LoadModelSpec(o.model_path));
  for (const std::string& warning : model.warnings) err << "loom: warning: " << warning << "\n";
  LOOM_ASSIGN_OR_RETURN(ClusterSpec cluster, ClusterFor(o.cluster_path, o.gpus, o.max_gpus));
  LOOM_RETURN_IF_ERROR(ApplyRestartTime(o.restart_s, cluster));
  SearchRequest request;
  request.gpus = o.gpus;
  request.global_batch = o.global_batch;
  request.seq_len = o.seq_len;
  request.dtype = *kDtypeNames.Parse(o.dtype);
  request.optimizer = *kOptimizerNames.Parse(o.optimizer);
  // auto: the emitted framework's own: DeepSpeed's per ZeRO stage, else Megatron-LM's fused.
  request.deepspeed_accumulation = o.grad_accumulation == "auto" && o.emit == "deepspeed";
  request.deepspeed_stage_split = o.emit == "deepspeed";
  request.grad_accumulation = o.grad_accumulation == "auto"
                                  ? GradAccumulation::kFused
                                  : *kGradAccumulationNames.Parse(o.grad_accumulation);
  LOOM_ASSIGN_OR_RETURN(request.fixed, ParseConstraints(JoinedList(o.fix, ","), "--fix"));
  request.min_gpus = o.min_gpus;
  request.max_gpus = o.max_gpus;
  PlanOptions options;
  options.top_k = o.top;
  options.objective = *kObjectiveNames.Parse(o.objective);
  options.risk = o.risk;
  options.max_step_time_s = o.max_step_time;
  options.distinct = o.distinct;
  options.training.tokens = o.tokens;
  options.training.price_per_gpu_hour_usd = o.price ? o.price : cluster.price_per_gpu_hour_usd;
  options.training.price_source = o.price                          ? "--price"
                                  : cluster.price_per_gpu_hour_usd ? cluster.file
                                                                   : "";
  // More threads than cores only contend: each simulation is CPU-bound.
  const int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  options.threads = o.threads == 0 ? 0 : std::min(o.threads, cores);
  options.prune = !o.exhaustive;
  SetAttention(o.attention, options.simulation);
  // What the emitted launch runs is what the ranking simulates: loom validate's executors run
  // cuDNN's fused attention (exec/cuda/op_runner.cc, sdpa_graph.h); Megatron-DeepSpeed's
  // --use-flash-attn-v2 runs FlashAttention-2 and it has no flag for cuDNN's.
  // Neither Megatron-LM, nor loom validate's executors, nor a DeepSpeed config runs the Triton
  // port: a launch of it would not run what was ranked.
  if (o.attention == "triton" && !o.emit.empty()) {
    return Status::InvalidArgument(
        "--attention triton with --emit " + o.emit +
        ": the launch would not run the Triton FlashAttention (Megatron-LM's --attention-backend "
        "has no such kernel, loom validate runs cuDNN's); rank without --emit, or give "
        "--attention fused, flash2 or cudnn");
  }
  if (o.emit == "plan") {
    if (o.attention == "flash2") {
      return Status::InvalidArgument(
          "--attention flash2 with --emit plan: loom validate's executors run cuDNN's fused "
          "attention, not FlashAttention-2; give --attention fused or cudnn");
    }
    if (o.attention == "fused") options.simulation.fused_attention = AttentionFamily::kCudnn;
  }
  if (o.emit == "deepspeed") {
    if (o.attention == "cudnn") {
      return Status::InvalidArgument(
          "--attention cudnn with --emit deepspeed: Megatron-DeepSpeed has no flag for cuDNN's "
          "fused attention (its --use-flash-attn-v2 runs FlashAttention-2); give --attention "
          "fused or flash2");
    }
    if (o.attention == "fused")
      options.simulation.fused_attention = AttentionFamily::kFlashAttention2;
  }
  options.simulation.kernels.dropout = o.dropout;
  if (o.emit == "plan" && o.framework != "auto" && o.framework != "none") {
    return Status::InvalidArgument(
        "--framework " + o.framework +
        " with --emit plan: a plan file is run by loom "
        "validate, whose executors issue the work from C++, not a framework's host "
        "thread; leave --framework out (or give none) with --emit plan");
  }
  // auto: none for loom's own executors (--emit plan), the stack a DeepSpeed config is written
  // for (--emit deepspeed), else Megatron-LM's megatron-core.
  const std::string framework_name = o.framework != "auto"   ? o.framework
                                     : o.emit == "plan"      ? "none"
                                     : o.emit == "deepspeed" ? kDeepSpeedFramework
                                                             : kDefaultFramework;
  LOOM_ASSIGN_OR_RETURN(options.simulation.framework,
                        ResolveFramework(framework_name, o.cluster_path));
  options.simulation.memory_headroom = o.memory_headroom;
  options.progress = Progress(err, o.progress, options.objective);
  if (!o.emit.empty()) {
    // Rank only what the launch settings can express, so that the winner is emitted.
    options.admit = [emit = o.emit, &model, megatron = MegatronOptionsOf(o)](const Strategy& s) {
      return Expressible(emit, model, s, megatron);
    };
    options.admit_rule = "--emit " + o.emit;
  }
  const PlanHeader header{model, cluster, request, options};
  if (!o.explain.empty() && !o.report.empty()) {
    return Status::InvalidArgument("--report " + o.report +
                                   ": the report draws a search's ranked plans, which "
                                   "--explain does not rank; drop --explain, or drop --report");
  }
  if (!o.explain.empty() && !o.csv.empty()) {
    return Status::InvalidArgument("--csv " + o.csv +
                                   ": the file lists a search's strategies, and --explain judges "
                                   "one plan; drop --explain, or drop --csv");
  }
  if (!o.explain.empty()) {
    LOOM_ASSIGN_OR_RETURN(Explanation explanation,
                          Explain(model, cluster, request, options, o.explain));
    if (o.json) {
      out << JsonText(Stamped(ExplanationJson(header, explanation), o.request)) << "\n";
    } else {
      PrintExplanation(header, explanation, out);
    }
    return Status::Ok();
  }
  // From here a SIGINT or SIGTERM stops the search at the next strategy and the plans found so far
  // are printed, marked interrupted (RunLoom's exit status says which signal); a second one kills.
  const InterruptibleScope interruptible;
  options.stop_requested = InterruptRequested;
  std::optional<PlanCsv> csv;
  if (!o.csv.empty()) {
    csv.emplace();
    options.on_verdict = [&csv](const Strategy& s, const StrategyVerdict& v) { csv->Add(s, v); };
  }
  const auto start = std::chrono::steady_clock::now();
  LOOM_ASSIGN_OR_RETURN(PlanReport report, Plan(model, cluster, request, options));
  if (csv) {
    // Written whole even when interrupted: the strategies not reached say so.
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(o.csv, csv->text(), "pass another --csv"));
    err << "loom: wrote " << o.csv << ": " << GroupedDigits(csv->rows())
        << (csv->rows() == 1 ? " strategy" : " strategies") << ", one a row\n";
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string interrupted_by = report.interrupted ? SignalName(InterruptSignal()) : "";
  std::optional<EmitResult> emitted;
  if (!o.emit.empty() && !report.ranked.empty() && !report.interrupted) {
    LOOM_ASSIGN_OR_RETURN(emitted, Emit(o, header, report, o.pick));
  }
  if (!o.report.empty()) {
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(
        o.report,
        PlanSearchReport("loom plan: " + model.name + " on " + Counted(o.gpus, "GPU") + " (" +
                             o.cluster_path + ")",
                         "global batch " + std::to_string(o.global_batch) + ", seq " +
                             std::to_string(o.seq_len) + ", objective " + o.objective,
                         report, options.objective),
        "pass another --report"));
  }
  if (o.json) {
    out << JsonText(Stamped(PlanJson(header, report, wall_s, emitted, interrupted_by), o.request))
        << "\n";
  } else {
    // --emit plan without --out: stdout holds the plan file alone, the table goes to stderr.
    std::ostream& table = o.emit == "plan" && !o.out_given ? err : out;
    PrintPlan(header, report, wall_s, table, interrupted_by);
    if (emitted) PrintEmitted(*emitted, table);
    if (emitted && !emitted->file_text.empty()) out << emitted->file_text;
    if (report.interrupted && !o.emit.empty()) {
      table << "--emit " << o.emit
            << ": nothing emitted, since the best plan of a partial search may not be the "
            << "best; run the search to the end, or pin the plan with --fix\n";
    }
  }
  if (report.ranked.empty() && !report.interrupted) {
    if (o.max_step_time) {
      std::ostringstream limit;
      limit << *o.max_step_time;
      return Status::InvalidArgument(
          "no strategy fits in memory with a step within --max-step-time " + limit.str() +
          " s; the table above says why (rule "
          "--max-step-time). Raise --max-step-time, or try more GPUs or a smaller "
          "--global-batch");
    }
    std::string headroom;
    for (const Rejection& r : report.rejections) {
      if (r.rule == "memory headroom") {
        headroom = "; " + std::to_string(r.count) +
                   " come within the fragmentation headroom (rule memory headroom): a lower "
                   "--memory-headroom may admit them where your allocator fragments less";
      }
    }
    return Status::InvalidArgument(
        "no strategy fits in memory; the table above says why. Try more GPUs, a smaller "
        "--global-batch or --seq, or --fix recompute=full" +
        headroom);
  }
  return Status::Ok();
}

}  // namespace

void AddPlanCommand(CLI::App& app, CommandRunner& runner) {
  auto o = std::make_shared<PlanCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Search the parallelisation strategies of a model on a cluster, simulate them and rank "
      "them.\n"
      "Every factorisation of --gpus into tp * cp * pp * dp (ep inside dp * cp) is tried with each "
      "micro-batch\n"
      "size, schedule, recomputation, ZeRO stage, offload and overlap setting; strategy rules and "
      "a memory bound\n"
      "prune them, the rest are simulated best-first until none can beat the --top-th plan.");
  InputFile(cmd->add_option("--model", o->model_path, kModelOptionHelp))->required();
  InputFile(cmd->add_option("--cluster", o->cluster_path, "Cluster file (see hardware/clusters/)"))
      ->required();
  cmd->add_option("--gpus", o->gpus, "GPUs to spread the model over")
      ->required()
      ->check(Between(1, 1 << 20));
  cmd->add_option("--global-batch", o->global_batch, "Sequences per step")
      ->required()
      ->check(Between(1, 1 << 30));
  cmd->add_option("--seq", o->seq_len, "Sequence length in tokens")
      ->required()
      ->check(Between(1, 1 << 27));
  cmd->add_option("--dtype", o->dtype, "Training dtype")
      ->transform(Choice(kDtypeNames.Names()))
      ->capture_default_str();
  cmd->add_option("--optimizer", o->optimizer, "Optimizer")
      ->transform(Choice(kOptimizerNames.Names()))
      ->capture_default_str();
  cmd->add_option("--grad-accumulation", o->grad_accumulation,
                  "How the training code sums micro-batches' weight gradients: fused "
                  "(Megatron-LM's default), "
                  "add (--no-gradient-accumulation-fusion; DeepSpeed with ZeRO), autograd (PyTorch "
                  "DDP's .grad; "
                  "DeepSpeed without ZeRO) or auto (the --emit framework's own: DeepSpeed's for "
                  "each ZeRO stage "
                  "with --emit deepspeed, else fused)")
      ->transform(Choice(WithAuto(kGradAccumulationNames.Names())))
      ->capture_default_str();
  cmd->add_option(
      "--fix", o->fix,
      "Pin settings, key=value[,key=value] (keys: tp pp dp cp ep etp vpp micro_batch schedule "
      "recompute "
      "recompute_layers zero_stage sp offload cp_comm overlap_grad_reduce overlap_param_gather "
      "tp_comm_overlap first_stage_layers last_stage_layers)");
  cmd->add_option("--top", o->top, "Plans to rank and show")
      ->capture_default_str()
      ->check(Positive());
  cmd->add_option("--objective", o->objective,
                  "time: step time (s); cost: GPU-hours per 10^9 tokens, loom's one unit of cost "
                  "(dollars beside it "
                  "with a price); memory-headroom: the lowest peak memory, then time; goodput: "
                  "the most effective tokens/s, tokens/s x the expected share of wall time that "
                  "trains once failures (the cluster file's \"reliability\" rates for the plan's "
                  "GPUs, nodes and NICs), checkpoints (written every Daly-optimal interval, "
                  "their size from the dtype and optimizer) and restarts are paid for; a larger "
                  "job fails more often, so give --min-gpus to let a smaller one win. Every "
                  "objective answers for "
                  "--gpus GPUs: at one GPU count cost ranks as time does, so to weigh smaller or "
                  "larger jobs give "
                  "--min-gpus or --max-gpus (loom never widens the question on its own)")
      ->transform(Choice(kObjectiveNames.Names()))
      ->capture_default_str();
  CLI::Option* risk = cmd->add_option(
      "--risk", o->risk,
      "Rank by this quantile of the step time a plan would measure: loom's prediction as the "
      "median, spread as loom's errors on the measured steps of the corpus spread in the plan's "
      "regime (GPU, framework, the parallelism in play; README, Fidelity). 0.5 ranks by loom's "
      "prediction; 0.9 by the bad case, for a cautious user: a plan whose regime loom predicts "
      "less surely falls behind. Within 0.05 and 0.95; the time, cost and goodput objectives "
      "take it");
  risk->capture_default_str();
  cmd->add_option("--restart-s", o->restart_s, kRestartHelp)->check(NonNegative());
  cmd->add_option("--min-gpus", o->min_gpus,
                  "Also search --gpus / 2, / 4, ... down to no fewer than this many GPUs (whole "
                  "nodes, or under a "
                  "node); default: --gpus alone")
      ->check(Between(1, 1 << 20));
  cmd->add_option("--max-gpus", o->max_gpus,
                  "Also search --gpus * 2, * 4, ... up to no more than this many GPUs; default: "
                  "--gpus alone")
      ->check(Between(1, 1 << 20));
  cmd->add_option(
         "--max-step-time", o->max_step_time,
         "Reject plans whose step takes longer than this many seconds (counted under the rule "
         "--max-step-time)")
      ->check(Between(1e-6, 1e6));
  cmd->add_option("--price", o->price,
                  "US dollars per GPU-hour (overrides the cluster file's price_per_gpu_hour_usd): "
                  "adds $/Btok, "
                  "dollars per 10^9 tokens, and with --tokens the dollars to train")
      ->check(Between(1e-3, 1e4));
  cmd->add_option("--tokens", o->tokens,
                  "Tokens to train on (e.g. 15e12): adds each plan's days to train over whole "
                  "steps of the global "
                  "batch, and dollars with a price (--json: also steps and GPU-hours)")
      ->check(Between(1, 1e18));
  cmd->add_flag("--distinct", o->distinct,
                "Show plans that differ only in one setting that moves the step (and the "
                "objective) by under 1 % "
                "as one row, listing the others as its variants; --top counts rows");
  cmd->add_flag("--progress", o->progress,
                "Write the search's progress to stderr even when it is not a terminal (a line "
                "every 2 s and one "
                "per phase: strategies bounded, candidates simulated and bounded out, the best "
                "plan so far, ETA)");
  cmd->add_option("--threads", o->threads,
                  "Simulation threads (0: every core; more than the cores count as the cores)")
      ->check(Between(0, 4096))
      ->capture_default_str();
  cmd->add_option("--explain", o->explain,
                  "Show where one strategy (key=value list, as --fix; unset keys take loom "
                  "simulate's defaults) "
                  "lands among the plans and what dominates its step");
  cmd->add_option(
         "--emit", o->emit,
         "Rank only plans that Megatron-LM (megatron: pretrain_gpt.py arguments) or DeepSpeed "
         "(deepspeed: "
         "ds_config.json and Megatron-DeepSpeed arguments) can run, and print the launch settings "
         "of one; "
         "or (plan: any plan) write one's rank programs to a plan file (--out) for loom validate")
      ->transform(Choice({"megatron", "deepspeed", "plan"}));
  CLI::Option* pick =
      cmd->add_option("--pick", o->pick, "With --emit: the rank of the plan to emit")
          ->capture_default_str()
          ->check(Positive());
  cmd->add_option(
      "--csv", o->csv,
      "Write every strategy the search saw to this CSV file, one row each: its settings, its "
      "verdict (rule, memory bound, step-time bound, bounded out, simulated, rejected after "
      "simulation, not reached), the rule that rejected it, its score bound and, where simulated, "
      "its step time, score, tokens/s, MFU and peak memory");
  CLI::Option* out = cmd->add_option(
      "--out", o->out,
      "With --emit plan: the plan file to write (schema loom.plan-file/3); without it "
      "the plan file goes to stdout and the ranked table to stderr (needed with --json)");
  CLI::Option* megatron_version =
      cmd->add_option(
             "--megatron-version", o->megatron_version,
             "With --emit megatron: the Megatron-LM release to write arguments for (core_v0.12 ... "
             "core_v0.19, or latest: main); plans that need a newer release are refused, naming it")
          ->transform(Choice(kMegatronVersionNames.Names()))
          ->capture_default_str();
  cmd->add_option("--framework", o->framework,
                  std::string(kFrameworkHelp) +
                      "; auto: none with --emit plan (loom validate's executors), " +
                      kDeepSpeedFramework +
                      " with --emit deepspeed (the Megatron-DeepSpeed and DeepSpeed its config is "
                      "written for), else " +
                      kDefaultFramework)
      ->capture_default_str();
  cmd->add_option("--memory-headroom", o->memory_headroom, kMemoryHeadroomHelp)
      ->check(Between(0, 0.9));
  cmd->add_option("--attention", o->attention, kAttentionHelp)
      ->transform(Choice(kAttentionChoices))
      ->capture_default_str();
  cmd->add_flag("--dropout", o->dropout, "Apply dropout and keep its masks");
  cmd->add_flag("--exhaustive", o->exhaustive,
                "Simulate every valid strategy, without the memory and time bounds (slow; for "
                "checking them)");
  cmd->add_option("--report", o->report,
                  "Write an HTML report of the search (one file, opens offline in a browser): the "
                  "ranked plans' step "
                  "time against peak memory and GPUs, and the strategies rejected by each rule");
  cmd->add_flag("--json", o->json,
                "Print one JSON object (schema loom.plan/1; loom.explain/1 with --explain)");
  cmd->footer(
      "Examples:\n"
      "  loom plan --model models/llama3-70b.json --cluster hardware/clusters/dgx-h100.json \\\n"
      "      --gpus 512 --global-batch 1024 --seq 8192\n"
      "  loom plan ... --fix tp=8,schedule=interleaved --top 20 --emit megatron\n"
      "  loom plan ... --emit megatron --megatron-version core_v0.13   (arguments an older tree "
      "parses)\n"
      "  loom plan ... --emit plan --out plan.json && mpirun -np <ranks> loom validate plan.json "
      "--backend host\n"
      "  loom plan ... --emit plan > plan.json        (the plan file on stdout, the table on "
      "stderr)\n"
      "  loom plan ... --explain tp=8,pp=4,dp=16,micro_batch=1,recompute=selective,sp=true\n\n"
      "Interrupted (Ctrl-C, SIGINT; or SIGTERM), the search stops at the next strategy and prints "
      "the best plans\n"
      "simulated so far, marked INTERRUPTED and partial (in --json: search.interrupted, with how "
      "many strategies\n"
      "were bounded and candidates simulated), emits nothing and exits with status 130 (SIGINT) or "
      "143 (SIGTERM).\n"
      "A second signal ends it at once.");
  cmd->callback([o, cmd, out, pick, risk, megatron_version, &runner] {
    o->request = CommandRequest(*cmd);
    o->out_given = out->count() > 0;
    o->risk_given = risk->count() > 0;
    o->pick_given = pick->count() > 0;
    o->megatron_version_given = megatron_version->count() > 0;
    runner = [o](std::ostream& out, std::ostream& err) { return Run(*o, out, err); };
  });
}

}  // namespace loom
