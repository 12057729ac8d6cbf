// `loom validate`: run a plan's rank programs and compare the measured step with the prediction.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/json_contract.h"
#include "cli/validate_output.h"
#include "cli/validators.h"
#include "core/build_info.h"
#include "core/file_io.h"
#include "device/mpi_launcher.h"
#include "exec/device_program.h"
#include "exec/exec_plan.h"
#include "exec/host_backend.h"
#include "program/plan_file.h"
#include "program/unfold.h"
#include "report/validate_view.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/step_comparison.h"
#include "sim/task_label.h"
#include "sim/trace.h"

#ifdef LOOM_HAVE_CUDA
#include "exec/cuda/cuda_backend.h"
#endif

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
  std::string report_path;  // --report: the HTML report
  bool json = false;
  int32_t one_gpu = -1;  // --one-gpu: run this GPU's program alone
  int32_t gpus = 0;      // the plan's GPUs, for what --one-gpu says
  nlohmann::ordered_json request;  // CommandRequest, echoed by --json
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

// The trace's context from what the plan file carries: its source's model, cluster and strategy
// (for people), the group sizes of the GPUs (its layout), the chunks and micro-batches read off
// its graph, the layers and payloads of its workload.
TraceContext PlanTraceContext(const PlanFile& plan) {
  TraceContext context;
  const auto text = [&](const char* key) {
    const auto it = plan.source.find(key);
    return it == plan.source.end() ? std::string()
           : it->is_string()       ? it->get<std::string>()
                                   : it->dump();
  };
  context.model = text("model");
  context.cluster = text("cluster");
  if (const auto it = plan.source.find("strategy"); it != plan.source.end() && it->is_object()) {
    context.strategy_json = it->dump();
  }
  // validate runs the step unfolded: a graph rank is one GPU.
  context.tp = plan.gpus.tp;
  context.cp = plan.gpus.cp;
  context.dp = plan.gpus.dp;
  context.unfolded = true;
  context.loom_version = LoomBuildVersion();
  context.chunk_of_virtual_stage = ChunkOfVirtualStages(plan.step);
  context.layers_per_virtual_stage = plan.workload.chunks.layers;
  context.payloads = &plan.workload.payloads;
  context.pass_collectives = PassCollectiveBytesOf(plan.workload.chunks);
  return context;
}

// One file with the predicted step (processes "predicted rank ...") and the measured one
// ("measured rank ...", pids after the predicted ones), each with its memory over time.
Status WriteTrace(const std::string& path, const PlanFile& plan, const StepTimeline& predicted,
                  const StepTimeline& measured) {
  LOOM_ASSIGN_OR_RETURN(MemoryReport predicted_memory,
                        TrackMemory(plan.step.graph, predicted, plan.baselines));
  LOOM_ASSIGN_OR_RETURN(MemoryReport measured_memory,
                        TrackMemory(plan.step.graph, measured, plan.baselines));
  const std::vector<TraceRun> runs = {
      {&predicted, &predicted_memory, "predicted ", 0},
      {&measured, &measured_memory, "measured ", plan.step.graph.num_ranks()}};
  return WriteFileAtomically(path, ChromeTraceJson(plan.step, runs, PlanTraceContext(plan)),
                             "pass another --trace");
}

// What a backend measured, on rank 0.
struct Measured {
  std::vector<StepTimeline> steps;
  // Per rank, the device's peak (cuda backend); none: the memory events replayed at the measured
  // times (host backend).
  std::optional<std::vector<int64_t>> peak_bytes;
  std::string device;                         // the GPU and its libraries (cuda backend)
  std::vector<ClassComparison> work_classes;  // (cuda backend)
};

// Rank 0's part: the comparison, the report and the trace.
Status Report(const ValidateOptions& o, const PlanFile& plan, const Measured& measured,
              int32_t world, std::ostream& out) {
  LOOM_ASSIGN_OR_RETURN(StepTimeline predicted, Simulate(plan.step.graph));
  LOOM_ASSIGN_OR_RETURN(StepComparison compared,
                        CompareStep(plan.step, plan.baselines, predicted, measured.steps,
                                    measured.peak_bytes, OrderMargin(o)));
  compared.work_classes = measured.work_classes;
  if (!o.trace_path.empty()) {
    LOOM_RETURN_IF_ERROR(
        WriteTrace(o.trace_path, plan, predicted, measured.steps[compared.median_step]));
  }
  if (!o.report_path.empty()) {
    const std::string subtitle = std::to_string(world) + (world == 1 ? " rank" : " ranks") +
                                 ", backend " + o.backend +
                                 (measured.device.empty() ? "" : " on " + measured.device) + ", " +
                                 std::to_string(compared.steps) + " steps measured";
    LOOM_RETURN_IF_ERROR(WriteFileAtomically(
        o.report_path,
        ValidationReport("loom validate: " + o.plan_path, subtitle, plan.step, predicted,
                         measured.steps[compared.median_step], compared),
        "pass another --report"));
  }
  if (o.json) {
    nlohmann::ordered_json j = StepComparisonJson(compared);
    j["plan_file"] = o.plan_path;
    j["backend"] = o.backend;
    j["ranks"] = world;
    if (o.one_gpu >= 0) j["one_gpu"] = o.one_gpu;
    if (o.backend == "host") j["speedup"] = o.speedup;
    if (!measured.device.empty()) j["device"] = measured.device;
    j["order_margin_s"] = OrderMargin(o).ToSeconds();
    j["source"] = plan.source;
    out << JsonText(Stamped(j, o.request)) << "\n";
  } else {
    out << "plan " << o.plan_path << ": " << world << " ranks, " << plan.step.graph.num_tasks()
        << " tasks, backend " << o.backend;
    if (o.backend == "host")
      out << " (timed waits at " << o.speedup << "x, real MPI messages and collectives)";
    if (!measured.device.empty()) out << " on " << measured.device;
    if (o.one_gpu >= 0) {
      out << "\nGPU " << o.one_gpu << " of " << o.gpus
          << " alone: its kernels run, its sends, collectives and offload copies are stand-ins "
             "that wait their predicted time, and nothing waits for the other GPUs; compare its "
             "kernel classes (gemm, attention, memory, optimizer)";
    }
    out << "\n\n";
    PrintStepComparison(compared, out);
  }
  const OrderCheck& order = compared.order;
  if (order.dependency_violations + order.rendezvous_violations > 0) {
    return Status::Internal(
        "the run broke the plan's order (" + std::to_string(order.dependency_violations) +
        " dependencies, " + std::to_string(order.rendezvous_violations) +
        " collectives); first: " + (order.examples.empty() ? "" : order.examples[0]) +
        "; this is a bug in loom's executor, please report it");
  }
  return Status::Ok();
}

// The cuda backend on this process's rank: real kernels, NCCL, device memory.
Result<Measured> RunCuda(const ValidateOptions& o, const PlanFile& plan, const ExecPlan& exec,
                         Launcher& launcher) {
#ifdef LOOM_HAVE_CUDA
  LOOM_ASSIGN_OR_RETURN(DeviceProgram program,
                        BuildDeviceProgram(plan, exec, launcher.Rank(), o.one_gpu >= 0));
  CudaRunOptions run;
  run.warmup_steps = o.warmup;
  run.steps = o.steps;
  run.timeout = StepTimeout(o, plan);
  LOOM_ASSIGN_OR_RETURN(CudaRunResult result, RunOnCuda(exec, program, launcher, run));
  return Measured{std::move(result.steps), std::move(result.peak_bytes_per_rank), result.device,
                  std::move(result.work_classes)};
#else
  (void)o, (void)plan, (void)exec, (void)launcher;
  return Status::Internal("RunCuda called in a loom built without CUDA");
#endif
}

// Refuses what the cuda backend cannot run before MPI starts or a GPU is touched.
Status CheckCudaBackend(const ValidateOptions& o, const PlanFile& plan, const ExecPlan& exec) {
#ifndef LOOM_HAVE_CUDA
  (void)o, (void)plan, (void)exec;
  return Status::Unavailable(
      "this loom was built without CUDA (configuring found no nvcc, cuBLASLt, cuDNN or NCCL), so "
      "it has no cuda "
      "backend; build it where the CUDA toolkit is installed, or use --backend host");
#else
  Result<DeviceProgram> first = BuildDeviceProgram(plan, exec, 0, o.one_gpu >= 0);
  return first.ok() ? Status::Ok() : first.status().WithContext(o.plan_path);
#endif
}

Status Run(ValidateOptions o, std::ostream& out) {
  LOOM_ASSIGN_OR_RETURN(const PlanFile folded, ReadPlanFile(o.plan_path));
  // Every GPU runs its own program: its kernels, its collectives on its real groups.
  LOOM_ASSIGN_OR_RETURN(PlanFile plan, UnfoldPlan(folded));
  o.gpus = plan.step.graph.num_ranks();
  if (o.one_gpu >= 0) {
    if (o.backend != "cuda") {
      return Status::InvalidArgument(
          "--one-gpu runs one GPU's kernels alone on a GPU: add --backend cuda (the host backend "
          "runs every GPU's program under mpirun)");
    }
    LOOM_ASSIGN_OR_RETURN(plan, OneGpuPlan(plan, o.one_gpu));
  }
  // Refuse a plan that would deadlock before joining an MPI job at all.
  Result<ExecPlan> exec = PlanExecution(plan.step.graph, plan.step.graph.num_ranks());
  if (!exec.ok()) return Status::InvalidArgument(o.plan_path + ": " + exec.status().message());
  if (o.backend == "cuda") LOOM_RETURN_IF_ERROR(CheckCudaBackend(o, plan, *exec));
  // A plan of one rank runs in this process, without mpirun (and without MPI at all).
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Launcher> launcher, MakeProcessLauncher());
  if (Status world = CheckWorldSize(plan.step.graph, launcher->Size()); !world.ok()) {
    return Status::InvalidArgument(o.plan_path + ": " + world.message());
  }
  Measured measured;
  if (o.backend == "cuda") {
    Result<Measured> cuda = RunCuda(o, plan, *exec, *launcher);
    if (!cuda.ok()) return OnRank(launcher->Rank(), cuda.status());
    measured = std::move(cuda).value();
  } else {
    HostRunOptions run;
    run.warmup_steps = o.warmup;
    run.steps = o.steps;
    run.speedup = o.speedup;
    run.timeout = StepTimeout(o, plan);
    Result<std::vector<StepTimeline>> host = RunOnHost(*exec, *launcher, run);
    if (!host.ok()) return OnRank(launcher->Rank(), host.status());
    measured.steps = std::move(host).value();
  }
  if (launcher->Rank() != 0) return Status::Ok();
  return Report(o, plan, measured, launcher->Size(), out);
}

}  // namespace

void AddValidateCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate",
                                     "Run a plan's rank programs (from loom plan --emit plan) and "
                                     "compare the measured step with the "
                                     "prediction: step time, time per task class, pipeline bubble, "
                                     "peak memory, and whether every task ran "
                                     "in the order the simulator predicted. The plan's tensor-, "
                                     "context- and expert-parallel groups are unfolded: every GPU "
                                     "runs its own program, its collectives on its real groups. An "
                                     "MPI program: one process per GPU of the plan (mpirun -np N, "
                                     "N = tp x cp x dp x pp, as loom plan prints it); a plan of one "
                                     "GPU runs without mpirun.");
  ValidateOptions& o = *options;
  InputFile(
      cmd->add_option("plan", o.plan_path,
                      "Plan file (schema loom.plan-file/3), from loom plan --emit plan --out FILE"))
      ->required();
  cmd->add_option("--backend", o.backend,
                  "host: MPI ranks on CPUs, each task a timed wait of its predicted duration, real "
                  "MPI messages "
                  "between ranks and real collectives (tests the orchestration); cuda: each rank "
                  "on a GPU, its ops as "
                  "cuBLASLt, cuDNN and loom's kernels, its communication through NCCL")
      ->transform(Choice({"host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--steps", o.steps, "Steps measured (the median is reported)")
      ->check(Between(1, 1000))
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Steps run first and not measured")
      ->check(Between(0, 100))
      ->capture_default_str();
  cmd->add_option("--speedup", o.speedup,
                  "host: run plan time this many times faster than real time (a 4 s step at 100 "
                  "takes 40 ms); "
                  "measured times are reported in plan time")
      ->check(Between(1e-3, 1e6))
      ->capture_default_str();
  cmd->add_option("--timeout-s", o.timeout_s,
                  "Abandon a step after this many real seconds, at most a week (default: ten "
                  "predicted steps plus "
                  "a minute)")
      ->check(Between(0, 7 * 86400));
  cmd->add_option("--order-margin-ms", o.margin_ms,
                  "Compare the order of two tasks only if their predicted starts are this far "
                  "apart, in plan time "
                  "(default: 2 ms of real time)")
      ->check(NonNegative());
  cmd->add_option("--trace", o.trace_path,
                  "Write one Chrome trace (open it in Perfetto) with the predicted step and the "
                  "measured one (the "
                  "median), as processes \"predicted rank ...\" and \"measured rank ...\", named "
                  "and annotated as "
                  "loom simulate --trace names them");
  cmd->add_option("--report", o.report_path,
                  "Write an HTML report (one file, opens offline in a browser): predicted and "
                  "measured step time, "
                  "bubble, peak memory and task classes side by side, and both steps as Gantts");
  cmd->add_option("--one-gpu", o.one_gpu,
                  "cuda: run only this GPU's program (a rank from 0, as --trace names them) on "
                  "this machine's GPU, without mpirun: its kernels for real, its sends, "
                  "collectives and offload copies as stand-ins that wait their predicted time "
                  "(one GPU cannot host its groups); compares the kernels of that GPU's share")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_flag("--json", o.json, "Print one JSON object (schema loom.validate/2)");
  cmd->footer(
      "Example:\n"
      "  loom plan --model models/llama3-8b.json --cluster hardware/clusters/dgx-h100.json --gpus "
      "4 \\\n"
      "      --global-batch 16 --seq 4096 --fix pp=4,tp=1 --emit plan --out plan.json\n"
      "  mpirun -np 4 loom validate plan.json --backend host --speedup 10\n"
      "  loom plan --model models/gpt3-125m.json --cluster hardware/clusters/dgx-h100.json --gpus "
      "1 \\\n"
      "      --global-batch 16 --seq 2048 --fix tp=1,pp=1,micro_batch=4 --emit plan --out "
      "one.json\n"
      "  loom validate one.json --backend cuda        (one rank: no mpirun)\n"
      "  loom validate plan.json --backend cuda --one-gpu 0   (GPU 0 of a larger plan, alone)\n"
      "Exit status: 0 when the run completed (whatever the errors), 1 for a bad plan or a failed "
      "run, 2 for a "
      "bad command line, 3 when --backend cuda finds no GPU (or loom was built without CUDA).");
  cmd->callback([options, cmd, &runner] {
    options->request = CommandRequest(*cmd);
    runner = [options](std::ostream& out, std::ostream&) { return Run(*options, out); };
  });
}

}  // namespace loom
