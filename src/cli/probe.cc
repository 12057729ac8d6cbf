// `loom probe`: measures one GPU's kernels and the NCCL collectives between the ranks of an MPI
// job, and writes them as a profile (schema loom.profile/2) for `loom fit`.

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "cli/json_contract.h"
#include "cli/probe_output.h"
#include "cli/validators.h"
#include "device/launcher.h"
#include "device/mpi_launcher.h"
#include "probe/groups.h"
#include "probe/probe_estimate.h"
#include "probe/probe_runner.h"
#include "probe/sweep.h"
#include "spec/cluster.h"
#include "spec/model.h"
#ifdef LOOM_HAVE_CUDA
#include "device/cuda/cuda_facts.h"
#include "probe/cuda/cuda_kernel_bench.h"
#include "probe/cuda/nccl_bench.h"
#endif

namespace loom {
namespace {

struct ProbeOptions {
  std::string output;
  bool resume = false;
  bool retry_failed = false;
  std::vector<std::string> measure;
  std::vector<std::string> dtypes;
  std::string for_model;
  std::string cluster;
  int64_t seq = 0;
  std::vector<int64_t> micro_batches = {1, 2, 4};
  std::string dtype = "bf16";
  int64_t repeats = 20;
  int64_t warmup = 5;
  bool no_rotate = false;
  std::string min_bytes = "8";
  std::string max_bytes = "8G";
  double timeout_s = 120;
  bool dry_run = false;
  bool json = false;
  nlohmann::ordered_json request;  // CommandRequest, echoed by --json
};

// nccl-tests' size syntax (-b 8 -e 8G): a whole number with an optional K, M or G (powers of 1024).
Result<int64_t> ParseBytes(const std::string& text, const std::string& flag) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = text.substr(used);
  const int shift = suffix.empty()  ? 0
                    : suffix == "K" ? 10
                    : suffix == "M" ? 20
                    : suffix == "G" ? 30
                                    : -1;
  if (used == 0 || shift < 0 || value < 1 || value > (int64_t{1} << (62 - shift))) {
    return Status::InvalidArgument(flag + " " + text +
                                   ": expected a size in bytes such as 8, 64K, 1M or 8G");
  }
  return static_cast<int64_t>(value) << shift;
}

template <typename Enum, size_t N>
Result<std::vector<Enum>> ParseNames(const std::vector<std::string>& names,
                                     const EnumNames<Enum, N>& table, const std::string& flag) {
  std::vector<Enum> out;
  for (const std::string& name : names) {
    std::optional<Enum> value = table.Parse(name);
    if (!value) {
      return Status::InvalidArgument(flag + " " + name + ": unknown; use one or more of " +
                                     JoinedList(table.Names()));
    }
    out.push_back(*value);
  }
  return out;
}

// The sweep the options describe over |groups|. |model| and |cluster| hold the --for-model files.
Result<SweepOptions> Sweep(const ProbeOptions& o, const std::vector<ProbeGroup>& groups,
                           std::optional<ModelSpec>* model, std::optional<ClusterSpec>* cluster) {
  SweepOptions s;
  if (!o.measure.empty()) {
    LOOM_ASSIGN_OR_RETURN(s.kinds, ParseNames(o.measure, kProbeKindNames, "--measure"));
  }
  if (!o.dtypes.empty()) {
    LOOM_ASSIGN_OR_RETURN(s.gemm_dtypes, ParseNames(o.dtypes, kDtypeNames, "--dtypes"));
  }
  LOOM_ASSIGN_OR_RETURN(int64_t min_bytes, ParseBytes(o.min_bytes, "--min-bytes"));
  LOOM_ASSIGN_OR_RETURN(int64_t max_bytes, ParseBytes(o.max_bytes, "--max-bytes"));
  if (min_bytes > max_bytes) {
    return Status::InvalidArgument("--min-bytes " + o.min_bytes + " is above --max-bytes " +
                                   o.max_bytes +
                                   "; give the smallest collective size first, e.g. -b 8 -e 8G");
  }
  s.min_collective_bytes = min_bytes;
  s.max_collective_bytes = max_bytes;
  s.groups = groups;
  if (!o.for_model.empty()) {
    LOOM_ASSIGN_OR_RETURN(*model, LoadModelSpec(o.for_model));
    if (!o.cluster.empty()) {
      LOOM_ASSIGN_OR_RETURN(*cluster, LoadClusterSpec(o.cluster));
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<Dtype> dtype, ParseNames({o.dtype}, kDtypeNames, "--dtype"));
    s.for_model = {&**model, *cluster ? &**cluster : nullptr, o.seq, o.micro_batches,
                   dtype.front()};
  }
  return s;
}

Status DryRun(const ProbeOptions& o, std::ostream& out) {
  std::optional<ModelSpec> model;
  std::optional<ClusterSpec> cluster;
  LOOM_ASSIGN_OR_RETURN(SweepOptions sweep, Sweep(o, {}, &model, &cluster));
  LOOM_ASSIGN_OR_RETURN(std::vector<ProbePoint> points, PlanSweep(sweep));
  // The estimate needs the GPU's calibrated model and the host's PCIe: the cluster file's.
  std::optional<SweepEstimate> estimate;
  if (!o.cluster.empty()) {
    if (!cluster) {
      LOOM_ASSIGN_OR_RETURN(cluster, LoadClusterSpec(o.cluster));
    }
    BenchSettings settings;
    settings.repeats = o.repeats;
    settings.warmup = o.warmup;
    settings.rotate_inputs = !o.no_rotate;
    LOOM_ASSIGN_OR_RETURN(ProbeDurationEstimate duration,
                          EstimateProbeDuration(points, settings, *cluster));
    estimate = SweepEstimate{duration,
                             std::filesystem::path(cluster->gpu.file).lexically_normal().string()};
  }
  // Under mpirun every rank lists the same sweep: rank 0 prints it.
  if (LauncherRank() != 0) return Status::Ok();
  if (o.json) {
    out << JsonText(Stamped(SweepPlanJson(points, {}, estimate), o.request)) << "\n";
  } else {
    PrintSweepPlan(points, {}, estimate, out);
  }
  return Status::Ok();
}

#ifdef LOOM_HAVE_CUDA
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// "NVIDIA H100 80GB HBM3" on 2026-11-22 -> "h100-80gb-hbm3-2026-11-22.json".
std::string DefaultOutput(const std::string& device_name, const std::string& date) {
  std::string slug;
  for (char c : device_name.rfind("NVIDIA ", 0) == 0 ? device_name.substr(7) : device_name) {
    const bool alnum = std::isalnum(static_cast<unsigned char>(c));
    if (alnum) slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!alnum && !slug.empty() && slug.back() != '-') slug += '-';
  }
  return slug + "-" + date.substr(0, 10) + ".json";
}

BenchSettings Settings(const ProbeOptions& o) {
  BenchSettings b;
  b.repeats = o.repeats;
  b.warmup = o.warmup;
  b.rotate_inputs = !o.no_rotate;
  return b;
}

// Progress on rank 0's stderr when it is a terminal: one line per point.
std::function<void(const ProbeProgress&)> TerminalProgress(std::ostream& err) {
  if (&err != &std::cerr || isatty(STDERR_FILENO) == 0) return nullptr;
  return [&err](const ProbeProgress& p) {
    err << "[" << p.index << "/" << p.total << "] " << p.point << ": "
        << (p.failed ? "failed: " : "") << p.result << "\n";
  };
}

Status Measure(const ProbeOptions& o, std::ostream& out, std::ostream& err) {
  int devices = 0;
  if (Status counted = cuda::CountDevices(&devices); !counted.ok())
    return OnRank(LauncherRank(), counted);
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Launcher> launcher, MakeProcessLauncher());
  Launcher& l = *launcher;
  const int device = LocalIndex(l.Hosts(), l.Rank()) % devices;
  std::unique_ptr<KernelBench> kernels;
  DeviceFacts facts;
  if (l.Rank() == 0) {
    Result<std::unique_ptr<KernelBench>> made = cuda::MakeCudaKernelBench(device);
    if (!made.ok()) return OnRank(l.Rank(), made.status());
    kernels = std::move(made).value();
    facts = kernels->Facts();
  }
  std::optional<ModelSpec> model;
  std::optional<ClusterSpec> cluster;
  LOOM_ASSIGN_OR_RETURN(SweepOptions sweep, Sweep(o, GroupsToMeasure(l.Hosts()), &model, &cluster));
  LOOM_ASSIGN_OR_RETURN(std::vector<ProbePoint> points, PlanSweep(sweep));
  std::unique_ptr<CollectiveBench> collectives;
  if (!sweep.groups.empty() && std::find(sweep.kinds.begin(), sweep.kinds.end(),
                                         ProbeKind::kCollectives) != sweep.kinds.end()) {
    Result<std::unique_ptr<CollectiveBench>> made =
        cuda::MakeNcclCollectiveBench(l, device, sweep.groups);
    if (!made.ok()) return OnRank(l.Rank(), made.status());
    collectives = std::move(made).value();
  }
  ProbeRunOptions run;
  run.date = UtcNow();
  run.output_path = o.output.empty() ? DefaultOutput(facts.device.name, run.date) : o.output;
  run.resume = o.resume;
  run.retry_failed = o.retry_failed;
  run.settings = Settings(o);
  run.collective_timeout_s = o.timeout_s;
  if (l.Rank() == 0)
    err << "loom probe: " << points.size() << " points; writing " << run.output_path << "\n";
  LOOM_ASSIGN_OR_RETURN(ProbeSummary summary,
                        RunProbe(points, facts, l, kernels.get(), collectives.get(), run,
                                 l.Rank() == 0 ? TerminalProgress(err) : nullptr));
  if (l.Rank() != 0) return Status::Ok();
  if (o.json) {
    out << JsonText(Stamped(ProbeReportJson(summary, run.output_path), o.request)) << "\n";
  } else {
    PrintProbeReport(summary, out);
  }
  if (!summary.hangs.empty()) {
    std::string message;
    for (const std::string& h : summary.hangs) message += (message.empty() ? "" : "\n") + h;
    return Status::DeadlineExceeded(
        message +
        "\nthe profile keeps every point measured; rerun with --resume to "
        "measure the abandoned ones");
  }
  return Status::Ok();
}
#endif

void AddOptions(CLI::App* cmd, ProbeOptions& o) {
  cmd->add_option("--output,-o", o.output,
                  "Profile to write (default <gpu>-<date>.json here, e.g. "
                  "h100-80gb-hbm3-2026-11-22.json); it is "
                  "rewritten atomically after every point");
  cmd->add_flag("--resume", o.resume, "Continue the profile at --output: skip the points it holds");
  cmd->add_flag("--retry-failed", o.retry_failed,
                "With --resume: measure the points recorded as failed again");
  cmd->add_option("--measure", o.measure,
                  "What to measure: gemm, attention, memory, host, collectives (default all)")
      ->delimiter(',');
  cmd->add_option("--dtypes", o.dtypes,
                  "GEMM dtypes of the generic grid (default bf16,fp16,fp8,tf32)")
      ->delimiter(',');
  InputFile(cmd->add_option(
      "--for-model", o.for_model,
      "Measure exactly the GEMM and attention shapes of this model (HF config.json) for every "
      "tensor-parallel degree the planner considers; needs --cluster and --seq"));
  InputFile(cmd->add_option(
      "--cluster", o.cluster,
      "Cluster file (hardware/clusters/) bounding the TP degrees of --for-model; with --dry-run "
      "its GPU file's calibrated model and its PCIe estimate the sweep's duration"));
  // The bounds of loom simulate's --seq and --micro-batch (spec/strategy.cc).
  cmd->add_option("--seq", o.seq, "Sequence length of --for-model")->check(Between(1, 1 << 27));
  cmd->add_option("--micro-batches", o.micro_batches,
                  "Micro-batch sizes of --for-model (default 1,2,4)")
      ->delimiter(',')
      ->check(Between(1, 1 << 20));
  cmd->add_option("--dtype", o.dtype, "Training dtype of --for-model (default bf16)");
  cmd->add_option("--repeats", o.repeats, "Timed runs per point (default 20)")
      ->check(Between(1, 100000));
  cmd->add_option("--warmup", o.warmup, "Untimed runs first (default 5)")
      ->check(Between(0, 100000));
  cmd->add_flag("--no-rotate", o.no_rotate,
                "Reuse one input buffer: hot-L2 numbers (not what training sees)");
  cmd->add_option("--min-bytes,-b", o.min_bytes,
                  "Smallest collective size, nccl-tests style (default 8)");
  cmd->add_option("--max-bytes,-e", o.max_bytes, "Largest collective size (default 8G)");
  cmd->add_option(
         "--timeout-s", o.timeout_s,
         "A collective not done after this many seconds is aborted (default 120, at most a day)")
      ->check(Between(1e-3, 86400));
  cmd->add_flag("--dry-run", o.dry_run,
                "Print the points the sweep would measure and, with --cluster, how long it would "
                "take; needs no GPU");
  cmd->add_flag("--json", o.json,
                "Print one JSON object instead of tables (schema loom.probe/1; with --dry-run "
                "loom.probe-plan/1)");
}

}  // namespace

void AddProbeCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<ProbeOptions>();
#ifdef LOOM_HAVE_CUDA
  CLI::App* cmd = app.add_subcommand("probe",
                                     "Measure this cluster's GPU kernels (cuBLASLt, cuDNN) and "
                                     "NCCL collectives into a profile for fit");
#else
  CLI::App* cmd = app.add_subcommand(
      "probe", "Measure GPU kernels and NCCL collectives (not in this build: no CUDA)");
#endif
  AddOptions(cmd, *options);
  cmd->footer(
      "One rank per GPU: `mpirun -np 16 loom probe` (or srun) measures every host's GPUs and the "
      "collectives over\n"
      "all ranks, within each host and along the rails; NCCL starts from a unique id broadcast "
      "over MPI. GEMMs,\n"
      "attention and memory-bound kernels run on rank 0's GPU. A point that fails (out of memory, "
      "a dtype the GPU\n"
      "lacks) is recorded with its reason; a hung collective is aborted after --timeout-s (exit "
      "status 1).\n"
      "Interrupted (SIGINT, SIGTERM), probe ends at once, or right after the profile write in "
      "progress: the profile\n"
      "keeps every point finished and no temporary is left; --resume continues it (status 130 or "
      "143).\n"
      "Exit status 3: no GPU is visible, or loom was built without CUDA.\n"
      "--dry-run --cluster FILE estimates the sweep's duration: each point's --warmup + --repeats "
      "runs at the time\n"
      "the cluster's GPU file's calibrated roofline gives them (host copies at its PCIe bandwidth, "
      "collectives by\n"
      "its ring model), plus a set-up time per point measured on one H100 "
      "(hardware/validation/2026-11-27).\n"
      "Without --cluster the dry run lists the points only.\n\n"
      "Examples:\n"
      "  loom probe --dry-run\n"
      "  loom probe --dry-run --cluster hardware/clusters/dgx-h100.json --measure gemm,attention "
      "--dtypes bf16\n"
      "  loom probe -o hardware/profiles/h100-sxm5-2026-11-22.json\n"
      "  loom probe --for-model models/llama3-70b.json --cluster hardware/clusters/dgx-h100.json "
      "--seq 8192\n"
      "  mpirun -np 16 --map-by ppr:8:node loom probe --measure collectives -b 8 -e 8G\n"
      "  loom probe -o h100.json --resume\n"
      "  loom fit h100.json --gpu hardware/gpus/h100-sxm5-80gb.json");
  cmd->callback([options, cmd, &runner] {
    options->request = CommandRequest(*cmd);
    runner = [options](std::ostream& out, [[maybe_unused]] std::ostream& err) -> Status {
      if (options->dry_run) return DryRun(*options, out);
#ifdef LOOM_HAVE_CUDA
      return Measure(*options, out, err);
#else
      return Status::Unavailable(
          "this loom was built without CUDA, so it cannot probe GPUs (--dry-run still lists the "
          "sweep). Build it "
          "where the CUDA toolkit with cuBLAS, cuDNN and NCCL is installed (/usr/local/cuda): "
          "cmake -S . -B build "
          "-DLOOM_WITH_CUDA=ON && cmake --build build -j2");
#endif
    };
  });
}

}  // namespace loom
