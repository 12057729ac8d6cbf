// `loom validate`: run a plan's rank programs and compare the measured step with the prediction.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/validate_output.h"
#include "exec/exec_plan.h"
#include "exec/host_backend.h"
#include "exec/plan_file.h"
#include "exec/step_comparison.h"
#include "probe/mpi_launcher.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/trace.h"

namespace loom {
namespace {

struct ValidateOptions {
  std::string plan_path;
  std::string backend = "host";
  int32_t steps = 3;
  int32_t warmup = 1;
  double speedup = 1;
  double timeout_s = 0;
  double margin_ms = 0;
  std::string trace_path;
  bool json = false;
};

// The plan time a step may take before it is abandoned: ten predicted steps and a minute of real
// time, unless --timeout-s says otherwise.
SimTime StepTimeout(const ValidateOptions& o, const PlanFile& plan) {
  if (o.timeout_s > 0) return SimTime::FromSeconds(o.timeout_s * o.speedup);
  return SimTime::FromSeconds(10 * plan.prediction.step_time_s + 60 * o.speedup);
}

// Starts closer than this (plan time) are not compared for order: by default 2 ms of real time,
// well above how late a polling rank notices that a task has ended.
SimTime OrderMargin(const ValidateOptions& o) {
  return SimTime::FromSeconds((o.margin_ms > 0 ? o.margin_ms : 2.0 * o.speedup) * 1e-3);
}

Status WriteTrace(const std::string& path, const PlanFile& plan, const StepTimeline& measured) {
  Result<MemoryReport> memory = TrackMemory(plan.step.graph, measured, plan.baselines);
  if (!memory.ok()) return memory.status();
  std::ofstream trace(path, std::ios::binary);
  trace << ChromeTraceJson(plan.step.graph, measured, &*memory);
  if (!trace) return Status::IoError(path + ": cannot write the trace; check the folder exists");
  return Status::Ok();
}

// Rank 0's part: the comparison, the report and the trace.
Status Report(const ValidateOptions& o, const PlanFile& plan, const std::vector<StepTimeline>& measured,
              int32_t world, std::ostream& out) {
  Result<StepTimeline> predicted = Simulate(plan.step.graph);
  if (!predicted.ok()) return predicted.status();
  Result<StepComparison> comparison =
      CompareStep(plan.step, plan.baselines, *predicted, measured, std::nullopt, OrderMargin(o));
  if (!comparison.ok()) return comparison.status();
  if (!o.trace_path.empty()) LOOM_RETURN_IF_ERROR(WriteTrace(o.trace_path, plan, measured[comparison->median_step]));
  if (o.json) {
    nlohmann::ordered_json j = StepComparisonJson(*comparison);
    j["plan_file"] = o.plan_path;
    j["backend"] = o.backend;
    j["ranks"] = world;
    j["speedup"] = o.speedup;
    j["order_margin_s"] = OrderMargin(o).ToSeconds();
    j["source"] = plan.source;
    out << j.dump(2) << "\n";
  } else {
    out << "plan " << o.plan_path << ": " << world << " ranks, " << plan.step.graph.num_tasks() << " tasks, backend "
        << o.backend;
    if (o.backend == "host") out << " (timed waits at " << o.speedup << "x, real MPI messages and collectives)";
    out << "\n\n";
    PrintStepComparison(*comparison, out);
  }
  const OrderCheck& order = comparison->order;
  if (order.dependency_violations + order.rendezvous_violations > 0) {
    return Status::Internal("the run broke the plan's order (" + std::to_string(order.dependency_violations) +
                            " dependencies, " + std::to_string(order.rendezvous_violations) +
                            " collectives); first: " + (order.examples.empty() ? "" : order.examples[0]) +
                            "; this is a bug in loom's executor, please report it");
  }
  return Status::Ok();
}

Status Run(const ValidateOptions& o, std::ostream& out) {
  Result<PlanFile> plan = ReadPlanFile(o.plan_path);
  if (!plan.ok()) return plan.status();
  if (o.backend == "cuda") {
    return Status::Unimplemented(
        "the cuda backend is not in this loom yet: it runs only --backend host (the rank programs' order, "
        "messages and collectives on CPUs)");
  }
  // Refuse a plan that would deadlock before joining an MPI job at all.
  Result<ExecPlan> exec = PlanExecution(plan->step.graph, plan->step.graph.num_ranks());
  if (!exec.ok()) return Status::InvalidArgument(o.plan_path + ": " + exec.status().message());
  Result<std::unique_ptr<Launcher>> launcher = MakeMpiLauncher();
  if (!launcher.ok()) return launcher.status();
  if (Status world = CheckWorldSize(plan->step.graph, (*launcher)->Size()); !world.ok()) {
    return Status::InvalidArgument(o.plan_path + ": " + world.message());
  }
  HostRunOptions run;
  run.warmup_steps = o.warmup;
  run.steps = o.steps;
  run.speedup = o.speedup;
  run.timeout = StepTimeout(o, *plan);
  Result<std::vector<StepTimeline>> measured = RunOnHost(*exec, **launcher, run);
  if (!measured.ok()) return measured.status();
  if ((*launcher)->Rank() != 0) return Status::Ok();
  return Report(o, *plan, *measured, (*launcher)->Size(), out);
}

}  // namespace

void AddValidateCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run a plan's rank programs (from loom plan --emit plan) and compare the measured step with the "
      "prediction: step time, time per task class, pipeline bubble, peak memory, and whether every task ran "
      "in the order the simulator predicted. An MPI program: one process per rank of the plan.");
  ValidateOptions& o = *options;
  cmd->add_option("plan", o.plan_path, "Plan file (schema loom.plan-file/2), from loom plan --emit plan --out FILE")
      ->required();
  cmd->add_option("--backend", o.backend,
                  "host: MPI ranks on CPUs, each task a timed wait of its predicted duration, real MPI messages "
                  "between ranks and real collectives (tests the orchestration); cuda: real kernels and NCCL "
                  "(not in this loom yet)")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--steps", o.steps, "Steps measured (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Steps run first and not measured")->check(CLI::Range(0, 100))->capture_default_str();
  cmd->add_option("--speedup", o.speedup,
                  "host: run plan time this many times faster than real time (a 4 s step at 100 takes 40 ms); "
                  "measured times are reported in plan time")
      ->check(CLI::Range(1e-3, 1e6))
      ->capture_default_str();
  cmd->add_option("--timeout-s", o.timeout_s,
                  "Abandon a step after this many real seconds (default: ten predicted steps plus a minute)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--order-margin-ms", o.margin_ms,
                  "Compare the order of two tasks only if their predicted starts are this far apart, in plan time "
                  "(default: 2 ms of real time)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--trace", o.trace_path,
                  "Write the measured step (the median one) as a Chrome trace with the same ranks and streams as "
                  "loom simulate --trace, to open beside it in Perfetto");
  cmd->add_flag("--json", o.json, "Print one JSON object (schema loom.validate/1)");
  cmd->footer(
      "Example:\n"
      "  loom plan --model models/llama3-8b.json --cluster hardware/clusters/dgx-h100.json --gpus 4 \\\n"
      "      --global-batch 16 --seq 4096 --fix pp=4,tp=1 --emit plan --out plan.json\n"
      "  mpirun -np 4 loom validate plan.json --backend host --speedup 10\n"
      "Exit status: 0 when the run completed (whatever the errors), 1 for a bad plan or a failed run, 2 for a "
      "bad command line.");
  cmd->callback([options, &runner] {
    runner = [options](std::ostream& out, std::ostream&) { return Run(*options, out); };
  });
}

}  // namespace loom
