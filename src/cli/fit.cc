// `loom fit`: calibrates the cost models from measurements and writes the fitted values into the
// "calibration" object of the GPU or cluster file.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/fit_destination.h"
#include "cli/format.h"
#include "cli/json_contract.h"
#include "core/file_io.h"
#include "core/formatted.h"
#include "core/json_reader.h"
#include "cost/calibration_file.h"
#include "cost/comm_fit.h"
#include "cost/nccl_tests_parser.h"
#include "cost/profile.h"
#include "cost/profile_collectives.h"
#include "cost/profile_fit.h"
#include "plan/run_fit.h"
#include "spec/cluster.h"
#include "spec/framework.h"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;

struct FitCommandOptions {
  std::vector<std::string> inputs;
  std::string gpu_path;
  std::string cluster_path;
  std::string runs_path;
  std::string params = "auto";
  std::string framework = kDefaultFramework;
  std::string output_path;
  bool dry_run = false;
  bool check = false;
  bool force = false;
  bool in_place = false;
  bool json = false;
  nlohmann::ordered_json request;  // CommandRequest, echoed by --json
};

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// The file as ordered JSON, so that a rewrite keeps its key order.
Result<Json> ReadOrderedJson(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path));
  return ParseOrderedJson(text, path);
}

// Writes the fitted |text| over |path| (WriteFileAtomically) once |load| has read the written
// temporary back, so that a file loom cannot load is never left.
Status WriteFitted(const std::string& path, const std::string& text,
                   const std::function<Status(const std::string&)>& load) {
  return WriteFileAtomically(
      path, text, "pass another --output", [&](const std::string& temporary) {
        Status loaded = load(temporary);
        if (loaded.ok()) return loaded;
        return Status::InvalidArgument("the fitted file would not load, so " + path +
                                       " was left as it was: " + loaded.message());
      });
}

// The check WriteFitted runs on the written file: |load| reads it back.
template <typename Load>
std::function<Status(const std::string&)> LoadsWith(Load load) {
  return [load](const std::string& path) -> Status {
    auto loaded = load(path);
    return loaded.ok() ? Status::Ok() : loaded.status();
  };
}

// Where the result goes (FitDestination): "" with --dry-run, --output, the file itself with
// --in-place, else a new file beside it.
Result<std::string> Destination(const FitCommandOptions& o, const std::string& hardware_file) {
  return FitDestination({o.dry_run || o.check, o.output_path, o.in_place, o.force}, hardware_file);
}

Json WrittenJson(const std::string& destination) {
  return destination.empty() ? Json(nullptr) : Json(destination);
}

// The calibration's keys that the fit left as they were.
std::vector<std::string> KeptKeys(const Json& calibration, const std::vector<std::string>& fitted) {
  std::vector<std::string> kept;
  for (const auto& [key, value] : calibration.items()) {
    if (key != "source" && key != "fitted_on" &&
        std::find(fitted.begin(), fitted.end(), key) == fitted.end()) {
      kept.push_back(key);
    }
  }
  return kept;
}

void PrintCalibration(const Json& calibration, const std::vector<std::string>& fitted,
                      const std::string& destination, std::ostream& out) {
  if (std::vector<std::string> kept = KeptKeys(calibration, fitted); !kept.empty()) {
    out << "kept as they were (nothing measured for them): " << JoinedList(kept) << "\n";
  }
  out << "\ncalibration"
      << (destination.empty() ? " (--dry-run: not written)" : " written to " + destination)
      << ":\n";
  std::istringstream lines(JsonText(calibration));
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
}

// The keys of loom.fit/1 that both models share.
Json FitJsonHeader(const FitCommandOptions& o, std::string_view model, const std::string& target,
                   const std::vector<std::string>& fitted_keys, const Json& calibration,
                   const std::string& destination) {
  Json j;
  j["schema"] = "loom.fit/1";
  j["model"] = model;
  j["inputs"] = o.inputs;
  j["target"] = target;
  j["written"] = WrittenJson(destination);
  j["fitted_keys"] = fitted_keys;
  j["kept_keys"] = KeptKeys(calibration, fitted_keys);
  j["calibration"] = calibration;
  return j;
}

// --gpu: compute-model calibration from profiles.

// True when |path| exists and its first non-blank character does not open a JSON object.
bool LooksLikeText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  in >> first;  // skips whitespace
  return in && first != '{';
}

std::string ProfileSource(const std::vector<Profile>& profiles, const ComputeFit& fit,
                          size_t samples) {
  std::vector<std::string> described;
  for (const Profile& p : profiles) {
    std::string d = p.file + " (" + p.device.name + ", " + p.date + ", driver " + p.driver_version +
                    ", CUDA " + p.cuda_version;
    for (const auto& [name, version] : p.library_versions) d += ", " + name + " " + version;
    described.push_back(d + ")");
  }
  return "loom fit (FitComputeCalibration, src/cost/profile_fit.h) on " + JoinedList(described) +
         ": " + std::to_string(samples) + " samples, mean |error| " +
         Percent(fit.mean_abs_relative_error) + ".";
}

Json ComputeJson(const FitCommandOptions& o, const std::vector<ProfileSample>& samples,
                 const ComputeFit& fit, const Json& calibration, const std::string& destination) {
  Json j = FitJsonHeader(o, "compute", o.gpu_path, fit.fitted_keys, calibration, destination);
  j["classes"] = Json::array();
  for (const KernelClassFit& c : fit.classes) {
    Json residuals = Json::array();
    for (const SampleResidual& r : c.residuals) {
      residuals.push_back({{"where", samples[r.sample].where},
                           {"shape", DescribeShape(samples[r.sample].shape)},
                           {"measured_us", r.measured_us},
                           {"predicted_us", r.predicted_us},
                           {"error", r.relative_error}});
    }
    j["classes"].push_back({{"class", c.Name()},
                            {"sustained", c.sustained},
                            {"key", c.key},
                            {"value", c.value},
                            {"samples", c.residuals.size()},
                            {"mean_abs_error", c.mean_abs_relative_error},
                            {"max_abs_error", c.max_abs_relative_error},
                            {"median_abs_error", c.median_abs_relative_error},
                            {"p90_abs_error", c.p90_abs_relative_error},
                            {"spread", c.spread ? Json(*c.spread) : Json(nullptr)},
                            {"residuals", residuals}});
  }
  j["kernel_overhead_us"] = fit.calibration.kernel_overhead_us;
  const ComputeCalibration& c = fit.calibration;
  j["gemm_wave_latency_us"] =
      c.gemm_wave_latency_us ? Json(*c.gemm_wave_latency_us) : Json(nullptr);
  j["gemm_operand_bandwidth_GBps"] =
      c.gemm_operand_bandwidth_GBps ? Json(*c.gemm_operand_bandwidth_GBps) : Json(nullptr);
  j["gemm_tile"] =
      c.gemm_tile_m > 0 ? Json({c.gemm_tile_m, c.gemm_tile_n}) : Json("chosen per shape");
  j["removed_keys"] = fit.removed_keys;
  j["epilogue_overlap"] = nullptr;
  if (const std::optional<EpilogueOverlapFit>& e = fit.epilogue_overlap) {
    auto error = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
    j["epilogue_overlap"] = {{"overlap", e->overlap},
                             {"samples", e->samples},
                             {"serial_mean_abs_error", error(e->serial_error)},
                             {"overlapped_mean_abs_error", error(e->overlapped_error)}};
  }
  j["sustained"] = Json::array();
  for (const SustainedFractionFit& f : fit.sustained) {
    j["sustained"].push_back({{"dtype", kDtypeNames.Name(f.dtype)},
                              {"samples", f.samples},
                              {"fraction", f.fraction ? Json(*f.fraction) : Json(nullptr)},
                              {"burst_mean_abs_error", f.burst_error},
                              {"sustained_mean_abs_error", f.sustained_error}});
  }
  j["mean_abs_error"] = fit.mean_abs_relative_error;
  return j;
}

// The sample of |c| the calibration predicts worst (the first of equals).
const SampleResidual& WorstResidual(const KernelClassFit& c) {
  const SampleResidual* worst = &c.residuals.front();
  for (const SampleResidual& r : c.residuals) {
    if (std::abs(r.relative_error) > std::abs(worst->relative_error)) worst = &r;
  }
  return *worst;
}

void PrintCompute(const std::vector<Profile>& profiles, const std::vector<ProfileSample>& samples,
                  const GpuSpec& gpu, const ComputeFit& fit, const Json& calibration,
                  const std::string& destination, std::ostream& out) {
  for (const Profile& p : profiles) {
    out << "profile  " << p.file << ": " << p.device.name << ", " << p.date << ", driver "
        << p.driver_version << ", CUDA " << p.cuda_version << ", " << p.samples.size()
        << " samples\n";
  }
  out << "\n"
      << std::left << std::setw(20) << "class" << std::right << std::setw(8) << "samples"
      << "  " << std::left << std::setw(27) << "fitted key" << std::right << std::setw(8) << "value"
      << std::setw(12) << "mean |err|" << std::setw(11) << "max |err|" << std::setw(9) << "spread"
      << "  worst sample\n";
  for (const KernelClassFit& c : fit.classes) {
    const SampleResidual* worst = &WorstResidual(c);
    out << std::left << std::setw(20) << c.Name() << std::right << std::setw(8)
        << c.residuals.size() << "  " << std::left << std::setw(27) << c.key << std::right
        << std::setw(8) << Number(c.value) << std::setw(12) << Percent(c.mean_abs_relative_error)
        << std::setw(11) << Percent(c.max_abs_relative_error) << std::setw(9)
        << (c.spread ? Percent(*c.spread) : "-") << "  "
        << DescribeShape(samples[worst->sample].shape) << "\n";
  }
  out << std::left << std::setw(20) << "all" << std::right << std::setw(8) << samples.size() << "  "
      << std::left << std::setw(27) << "kernel_overhead_us" << std::right << std::setw(8)
      << Number(fit.calibration.kernel_overhead_us) << std::setw(12)
      << Percent(fit.mean_abs_relative_error) << "\n";
  const ComputeCalibration& c = fit.calibration;
  if (std::find(fit.fitted_keys.begin(), fit.fitted_keys.end(), "gemm_wave_latency_us") !=
      fit.fitted_keys.end()) {
    out << "GEMM tile and split-K chosen per shape (ChooseGemmTile): gemm_wave_latency_us "
        << Number(c.gemm_wave_latency_us.value_or(0)) << ", gemm_operand_bandwidth_GBps "
        << (c.gemm_operand_bandwidth_GBps ? Number(*c.gemm_operand_bandwidth_GBps)
                                          : "none (no operand term)")
        << "\n";
  }
  if (const std::optional<EpilogueOverlapFit>& e = fit.epilogue_overlap) {
    auto error = [](const std::optional<double>& v) {
      return v ? Percent(*v) : std::string("fit failed");
    };
    out << "gemm_epilogue_overlap " << (e->overlap ? "true" : "false") << ": mean |err| over the "
        << e->samples << " GEMMs accumulating into fp32 " << error(e->overlapped_error)
        << " with the epilogue overlapped, " << error(e->serial_error) << " after the main loop\n";
  }
  for (const SustainedFractionFit& f : fit.sustained) {
    const std::string dtype(kDtypeNames.Name(f.dtype));
    out << dtype << " GEMMs of " << Number(kSustainedGemmMinUs / 1000) << " ms or more ("
        << f.samples << ", the GPU at its power limit within their burst): ";
    if (f.fraction) {
      out << SustainedTensorFractionKey(f.dtype) << " " << Number(*f.fraction) << " ("
          << Number(*f.fraction * gpu.PeakTflops(f.dtype).value_or(0)) << " TFLOP/s), mean |err| "
          << Percent(f.sustained_error) << " at that ceiling, " << Percent(f.burst_error)
          << " at burst clocks; fitted apart from the rest\n";
    } else {
      out << "no ceiling binds any of them (mean |err| " << Percent(f.burst_error)
          << " at burst clocks): no sustained fraction\n";
    }
  }
  out << "errors are (predicted - measured) / measured of RooflineComputeModel with the fitted "
         "values, each sample at the clocks it ran at; spread is "
         "(p90 - p10) / median of the samples\n";
  PrintCalibration(calibration, fit.fitted_keys, destination, out);
}

// --check: the table of how the GPU file's calibration predicts the profiles, nothing fitted.
void PrintCheck(const std::vector<Profile>& profiles, const std::vector<ProfileSample>& samples,
                const ComputeFit& check, const std::string& gpu_path, std::ostream& out) {
  for (const Profile& p : profiles) {
    out << "profile  " << p.file << ": " << p.device.name << ", " << p.date << ", "
        << p.samples.size() << " samples\n";
  }
  const ComputeCalibration& c = check.calibration;
  out << "\nthe calibration of " << gpu_path << " as it is (nothing fitted); GEMM tiles "
      << (c.gemm_tile_m > 0
              ? "fixed at " + std::to_string(c.gemm_tile_m) + " x " +
                    std::to_string(c.gemm_tile_n) +
                    " (gemm_tile_m/n of an older loom fit; refit to choose them per shape)"
              : std::string("chosen per shape (ChooseGemmTile)"))
      << "\n"
      << std::left << std::setw(20) << "class" << std::right << std::setw(8) << "samples"
      << "  " << std::left << std::setw(27) << "key" << std::right << std::setw(8) << "value"
      << std::setw(14) << "median |err|" << std::setw(11) << "p90 |err|" << std::setw(11)
      << "max |err|"
      << "  worst sample\n";
  for (const KernelClassFit& c : check.classes) {
    const SampleResidual* worst = &WorstResidual(c);
    out << std::left << std::setw(20) << c.Name() << std::right << std::setw(8)
        << c.residuals.size() << "  " << std::left << std::setw(27) << c.key << std::right
        << std::setw(8) << Number(c.value) << std::setw(14) << Percent(c.median_abs_relative_error)
        << std::setw(11) << Percent(c.p90_abs_relative_error) << std::setw(11)
        << Percent(c.max_abs_relative_error) << "  " << DescribeShape(samples[worst->sample].shape)
        << "\n";
  }
  out << "errors are (predicted - measured) / measured of RooflineComputeModel with the file's "
         "calibration, each sample at the clocks it ran at (GEMMs of "
      << Number(kSustainedGemmMinUs / 1000)
      << " ms or more at the sustained ceiling), a class marked sustained with every sample there "
         "(each run back to back, as a grid measured after a profile ran); on samples it was not "
         "fitted to, they are its held-out error\n";
}

Status RunGpuFit(const FitCommandOptions& o, std::ostream& out) {
  LOOM_ASSIGN_OR_RETURN(GpuSpec gpu, LoadGpuSpec(o.gpu_path));
  LOOM_ASSIGN_OR_RETURN(std::string written, Destination(o, o.gpu_path));
  std::vector<Profile> profiles;
  std::vector<ProfileSample> samples;
  for (const std::string& input : o.inputs) {
    Result<Profile> profile = ReadProfile(input);
    if (!profile.ok() && LooksLikeText(input)) {
      return Status::InvalidArgument(
          input +
          ": is not a profile (JSON, schema loom.profile/2); to fit nccl-tests "
          "output, pass the cluster file with --cluster instead of --gpu");
    }
    if (!profile.ok()) return profile.status();
    if (Status same = CheckProfiledGpu(*profile, gpu); !same.ok() && !o.force) {
      return Status::InvalidArgument(same.message() + ", or pass --force to fit anyway");
    }
    samples.insert(samples.end(), profile->samples.begin(), profile->samples.end());
    profiles.push_back(*profile);
  }
  if (samples.empty()) {
    return Status::InvalidArgument(
        JoinedList(o.inputs) + ": " +
        (o.inputs.size() == 1 ? "the profile has" : "the profiles have") +
        " no kernel samples (\"samples\" is empty) to fit; measure some with loom probe "
        "--measure gemm,attention,memory");
  }
  if (o.check) {
    LOOM_ASSIGN_OR_RETURN(ComputeFit check, CheckComputeCalibration(samples, gpu));
    if (o.json) {
      Json j = ComputeJson(o, samples, check, Json(nullptr), "");
      j["check"] = true;
      out << JsonText(Stamped(j, o.request)) << "\n";
    } else {
      PrintCheck(profiles, samples, check, o.gpu_path, out);
    }
    return Status::Ok();
  }
  LOOM_ASSIGN_OR_RETURN(ComputeFit fit, FitComputeCalibration(samples, gpu));
  fit.calibration.source = ProfileSource(profiles, fit, samples.size());
  SetFittedOn(o.inputs, &fit);
  LOOM_ASSIGN_OR_RETURN(Json file, ReadOrderedJson(o.gpu_path));
  const Json updated = WithComputeCalibration(file, fit);
  const std::string destination = written;
  if (!destination.empty()) {
    LOOM_RETURN_IF_ERROR(
        WriteFitted(destination, JsonText(updated) + "\n", LoadsWith(LoadGpuSpec)));
  }
  if (o.json) {
    out << JsonText(Stamped(ComputeJson(o, samples, fit, updated["calibration"], destination),
                            o.request))
        << "\n";
  } else {
    PrintCompute(profiles, samples, gpu, fit, updated["calibration"], destination, out);
  }
  return Status::Ok();
}

// --cluster: communication-model calibration from nccl-tests output.

std::string RunText(const NcclTestsRun& run) {
  std::string text = run.file + " (" + std::string(kNcclTestNames.Name(run.test));
  if (run.ranks) text += ", " + std::to_string(*run.ranks) + " ranks";
  if (run.nodes) text += " on " + std::to_string(*run.nodes) + " node(s)";
  if (!run.gpu_name.empty()) text += ", " + run.gpu_name;
  if (run.nvls_disabled) text += ", NCCL_NVLS_ENABLE=0";
  return text + ")";
}

std::string CommSource(const std::vector<NcclTestsRun>& runs, const CommFit& fit) {
  std::vector<std::string> described;
  for (const NcclTestsRun& run : runs) described.push_back(RunText(run));
  return "loom fit (FitCommCalibration, src/cost/comm_fit.h) on the in-place times of nccl-tests " +
         JoinedList(described) + " from " + HumanBytes(CommFitOptions{}.min_fit_bytes) +
         ": mean |busbw error| " + Percent(fit.busbw_mape) + ".";
}

Json CommJson(const FitCommandOptions& o, const CommFit& fit, const Json& calibration,
              const std::string& destination) {
  Json j =
      FitJsonHeader(o, "communication", o.cluster_path, fit.fitted_keys, calibration, destination);
  j["rows"] = Json::array();
  for (const CommFitRow& r : fit.rows) {
    j["rows"].push_back({{"where", r.where},
                         {"test", kNcclTestNames.Name(r.test)},
                         {"ranks", r.ranks},
                         {"size_bytes", r.size_bytes},
                         {"fitted", r.fitted},
                         {"measured_time_us", r.measured_time_us},
                         {"predicted_time_us", r.predicted_time_us},
                         {"measured_busbw_GBps", r.measured_busbw_GBps},
                         {"predicted_busbw_GBps", r.predicted_busbw_GBps},
                         {"busbw_error", r.busbw_error},
                         {"nccl_choice", r.predicted_choice}});
  }
  j["busbw_mape"] = fit.busbw_mape;
  return j;
}

void PrintComm(const std::vector<NcclTestsRun>& runs, const CommFit& fit, const Json& calibration,
               const std::string& destination, std::ostream& out) {
  for (const NcclTestsRun& run : runs)
    out << "run  " << RunText(run) << ", " << run.rows.size() << " rows\n";
  // The choice column as wide as its longest entry ("NVLSTree/Simple") and two blanks.
  size_t choice_width = std::string("NCCL choice").size();
  for (const CommFitRow& r : fit.rows)
    choice_width = std::max(choice_width, r.predicted_choice.size());
  const int choice = static_cast<int>(choice_width) + 2;
  out << "\n"
      << std::left << std::setw(20) << "test" << std::right << std::setw(6) << "ranks"
      << std::setw(12) << "size" << std::setw(11) << "busbw" << std::setw(11) << "predicted"
      << std::setw(9) << "error"
      << "  " << std::left << std::setw(choice) << "NCCL choice" << std::setw(8) << "fitted"
      << "row\n";
  for (const CommFitRow& r : fit.rows) {
    char error[16];
    std::snprintf(error, sizeof error, "%+.1f%%", 100 * r.busbw_error);
    out << std::left << std::setw(20) << kNcclTestNames.Name(r.test) << std::right << std::setw(6)
        << r.ranks << std::setw(12) << HumanBytes(static_cast<double>(r.size_bytes))
        << std::setw(11) << Number(r.measured_busbw_GBps) << std::setw(11)
        << Number(r.predicted_busbw_GBps) << std::setw(9) << error << "  " << std::left
        << std::setw(choice) << r.predicted_choice << std::setw(8) << (r.fitted ? "yes" : "no")
        << r.where << "\n";
  }
  std::vector<std::string> values;
  for (const std::string& key : fit.fitted_keys)
    values.push_back(key + " " + Number(calibration.value(key, 0.0)));
  out << "busbw in GB/s (nccl-tests' convention); rows from "
      << HumanBytes(CommFitOptions{}.min_fit_bytes)
      << " are fitted, smaller ones run NCCL's low-latency protocols\n"
      << "fitted  " << JoinedList(values)
      << "\nmean |busbw error| over the fitted rows: " << Percent(fit.busbw_mape) << "\n";
  PrintCalibration(calibration, fit.fitted_keys, destination, out);
}

// |cluster|'s JSON as written to |destination|: its "gpu" path, relative to the cluster file's
// folder, rewritten relative to the destination's folder when that differs.
Json Relocated(Json cluster, const std::string& cluster_path, const std::string& destination) {
  namespace fs = std::filesystem;
  if (destination.empty()) return cluster;  // --dry-run writes nothing
  const fs::path from = fs::absolute(cluster_path).parent_path(),
                 to = fs::absolute(destination).parent_path();
  auto gpu = cluster.find("gpu");
  if (from == to || gpu == cluster.end() || !gpu->is_string()) return cluster;
  const fs::path target = fs::path(gpu->get<std::string>());
  if (target.is_absolute()) return cluster;
  *gpu = fs::relative((from / target).lexically_normal(), to).generic_string();
  return cluster;
}

// True when |path| holds a JSON object whose "schema" is a loom profile's.
bool IsLoomProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(512, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("\"loom.profile/") != std::string::npos;
}

// The nccl-tests runs of |path|: the collectives of a loom probe profile, or one nccl-tests output.
Result<std::vector<NcclTestsRun>> ReadCollectiveRuns(const std::string& path) {
  if (IsLoomProfile(path)) {
    LOOM_ASSIGN_OR_RETURN(Profile profile, ReadProfile(path));
    std::vector<NcclTestsRun> runs = NcclTestsRunsOf(profile);
    if (runs.empty()) {
      return Status::InvalidArgument(
          path +
          ": holds no collectives loom fits (all_reduce, all_gather, reduce_scatter, "
          "all_to_all, send_recv); measure them with mpirun -np N loom probe --measure "
          "collectives");
    }
    return runs;
  }
  LOOM_ASSIGN_OR_RETURN(NcclTestsRun run, ReadNcclTestsFile(path));
  return std::vector<NcclTestsRun>{run};
}

Status RunClusterFit(const FitCommandOptions& o, std::ostream& out) {
  LOOM_ASSIGN_OR_RETURN(ClusterSpec cluster, LoadClusterSpec(o.cluster_path));
  LOOM_ASSIGN_OR_RETURN(std::string written, Destination(o, o.cluster_path));
  std::vector<NcclTestsRun> runs;
  for (const std::string& input : o.inputs) {
    LOOM_ASSIGN_OR_RETURN(std::vector<NcclTestsRun> read, ReadCollectiveRuns(input));
    for (const NcclTestsRun& run : read) {
      if (!run.gpu_name.empty() && !DeviceMatchesGpu(run.gpu_name, cluster.gpu.name) && !o.force) {
        return Status::InvalidArgument(
            input + ": ran on \"" + run.gpu_name + "\" but the GPU of " + o.cluster_path +
            " is \"" + cluster.gpu.name + "\" (" + cluster.gpu.file +
            "); fit with the cluster file of the machine that ran it, or pass --force");
      }
      runs.push_back(run);
    }
  }
  LOOM_ASSIGN_OR_RETURN(CommFit fit, FitCommCalibration(runs, cluster));
  fit.calibration.source = CommSource(runs, fit);
  LOOM_ASSIGN_OR_RETURN(Json file, ReadOrderedJson(o.cluster_path));
  const std::string destination = written;
  const Json updated = Relocated(WithCommCalibration(file, fit), o.cluster_path, destination);
  if (!destination.empty()) {
    LOOM_RETURN_IF_ERROR(
        WriteFitted(destination, JsonText(updated) + "\n",
                    LoadsWith([](const std::string& path) { return LoadClusterSpec(path); })));
  }
  if (o.json) {
    out << JsonText(Stamped(CommJson(o, fit, updated["calibration"], destination), o.request))
        << "\n";
  } else {
    PrintComm(runs, fit, updated["calibration"], destination, out);
  }
  return Status::Ok();
}

// --params: a comma list of kRunParamNames, or auto (every one some run depends on).
Result<std::vector<RunParam>> ParseRunParams(const std::string& text, bool* automatic) {
  *automatic = text == "auto";
  if (*automatic)
    return std::vector<RunParam>{RunParam::kHost, RunParam::kCompute, RunParam::kInterNode};
  std::vector<RunParam> params;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    std::optional<RunParam> p = kRunParamNames.Parse(name);
    if (!p) {
      return Status::InvalidArgument("--params: '" + name + "' is not a parameter; name some of " +
                                     kRunParamNames.Choices() + ", or auto");
    }
    if (std::find(params.begin(), params.end(), *p) == params.end()) params.push_back(*p);
  }
  if (params.empty())
    return Status::InvalidArgument("--params is empty; name some of " + kRunParamNames.Choices());
  return params;
}

// |file|'s JSON with |edit| applied, written atomically to its Destination and checked by |load|.
// Returns the file written.
Result<std::string> EditFile(const FitCommandOptions& o, const std::string& file,
                             const std::function<void(Json&)>& edit,
                             const std::function<Status(const std::string&)>& load) {
  LOOM_ASSIGN_OR_RETURN(std::string destination, Destination(o, file));
  LOOM_ASSIGN_OR_RETURN(Json json, ReadOrderedJson(file));
  edit(json);
  LOOM_RETURN_IF_ERROR(WriteFitted(destination, JsonText(json) + "\n", load));
  return destination;
}

// Writes each fitted multiplier into the file that holds its parameter: the values of the runs
// with the multipliers applied (WithMultipliers), so that the files say what the fit simulated.
// Returns what it wrote.
Result<std::vector<std::string>> WriteRunFit(const FitCommandOptions& o, const RunFit& fit,
                                             const std::vector<MeasuredRun>& runs,
                                             const std::string& runs_path) {
  std::vector<std::string> written;
  const std::string note = "loom fit --runs " + runs_path;
  for (size_t j = 0; j < fit.params.size(); ++j) {
    const std::string multiplier = " x " + Number(fit.values[j]);
    switch (fit.params[j]) {
      case RunParam::kHost: {
        // Every framework the runs name had its host times scaled.
        std::vector<std::string> files;
        for (const MeasuredRun& run : runs) {
          if (!run.options.framework ||
              std::find(files.begin(), files.end(), run.options.framework->file) != files.end()) {
            continue;
          }
          files.push_back(run.options.framework->file);
          const double scale =
              WithMultipliers(run, fit.params, fit.values).options.framework->scale;
          const auto edit = [&](Json& file) {
            Json& host = file["host"];
            host["scale"] = scale;
            Json fitted = host.value("fitted_on", Json::array());
            fitted.push_back(runs_path);
            host["fitted_on"] = fitted;
          };
          LOOM_ASSIGN_OR_RETURN(std::string to,
                                EditFile(o, files.back(), edit, LoadsWith(LoadFrameworkProfile)));
          written.push_back(to + ": host.scale" + multiplier);
        }
        break;
      }
      case RunParam::kCompute: {
        const MeasuredRun scaled = WithMultipliers(runs.front(), fit.params, fit.values);
        const ComputeCalibration& c = scaled.cluster.gpu.calibration;
        Json values = Json::object();
        for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32, Dtype::kFp32}) {
          if (const std::optional<double>& e = c.GemmEfficiencySlot(d))
            values[GemmEfficiencyKey(d)] = RoundSignificant(*e, 4);
          if (const std::optional<double>& f = c.SustainedTensorFractionSlot(d))
            values[SustainedTensorFractionKey(d)] = RoundSignificant(*f, 4);
        }
        values["attention_efficiency"] = RoundSignificant(c.attention_efficiency.value_or(1.0), 4);
        values["memory_bandwidth_fraction"] =
            RoundSignificant(c.memory_bandwidth_fraction.value_or(1.0), 4);
        if (c.memory_bandwidth_fraction_row_reduction) {
          values["memory_bandwidth_fraction_row_reduction"] =
              RoundSignificant(*c.memory_bandwidth_fraction_row_reduction, 4);
        }
        if (c.gemm_memory_bandwidth_fraction) {
          values["gemm_memory_bandwidth_fraction"] =
              RoundSignificant(*c.gemm_memory_bandwidth_fraction, 4);
        }
        const std::string file = scaled.cluster.gpu.file;
        const auto edit = [&](Json& json) {
          json = WithCalibration(
              json, values,
              note +
                  ": GEMM and attention efficiencies, sustained tensor fractions and HBM fraction" +
                  multiplier + ".");
        };
        LOOM_ASSIGN_OR_RETURN(std::string to, EditFile(o, file, edit, LoadsWith(LoadGpuSpec)));
        written.push_back(to + ": compute efficiencies" + multiplier);
        break;
      }
      case RunParam::kInterNode: {
        const MeasuredRun scaled = WithMultipliers(runs.front(), fit.params, fit.values);
        const Json values = {
            {"inter_node_busbw_fraction",
             RoundSignificant(scaled.cluster.calibration.inter_node_busbw_fraction.value_or(1.0),
                              4)}};
        const std::string file = scaled.cluster.file;
        const auto edit = [&](Json& json) {
          json = WithCalibration(json, values,
                                 note + ": inter_node_busbw_fraction" + multiplier + ".");
        };
        LOOM_ASSIGN_OR_RETURN(std::string to,
                              EditFile(o, file, edit, LoadsWith([](const std::string& path) {
                                         return LoadClusterSpec(path);
                                       })));
        written.push_back(to + ": inter_node_busbw_fraction" + multiplier);
        break;
      }
    }
  }
  return written;
}

Status RunRunsFit(const FitCommandOptions& o, std::ostream& out) {
  if (!o.output_path.empty()) {
    return Status::InvalidArgument(
        "--output with --runs: the fit writes each parameter into its own file (the "
        "framework, GPU or cluster file); use --dry-run to see it first, or point "
        "--cluster and --framework at copies");
  }
  bool automatic = false;
  LOOM_ASSIGN_OR_RETURN(std::vector<RunParam> asked, ParseRunParams(o.params, &automatic));
  LOOM_ASSIGN_OR_RETURN(std::vector<MeasuredRun> runs,
                        LoadRuns(o.runs_path, o.cluster_path, o.framework));
  std::vector<std::string> dropped;
  std::vector<RunParam> params = asked;
  if (automatic) {
    LOOM_ASSIGN_OR_RETURN(params, IdentifiableParams(runs, asked, &dropped));
    if (params.empty()) {
      return Status::InvalidArgument("fit --runs: the runs identify no parameter: " +
                                     JoinedList(dropped, "; "));
    }
  }
  LOOM_ASSIGN_OR_RETURN(RunFit fit, FitRuns(runs, params));
  std::vector<std::string> written;
  if (!o.dry_run) {
    LOOM_ASSIGN_OR_RETURN(written, WriteRunFit(o, fit, runs, o.runs_path));
  }
  const auto pct = [](double predicted, double measured) {
    return 100 * (predicted / measured - 1);
  };
  if (o.json) {
    Json j;
    j["schema"] = "loom.fit-runs/2";
    j["runs_file"] = o.runs_path;
    Json params_json = Json::array();
    for (size_t k = 0; k < fit.params.size(); ++k) {
      params_json.push_back(
          {{"name", kRunParamNames.Name(fit.params[k])}, {"multiplier", fit.values[k]}});
    }
    j["params"] = params_json;
    j["not_fitted"] = dropped;
    Json rows = Json::array();
    for (size_t i = 0; i < fit.rows.size(); ++i) {
      const RunFitRow& r = fit.rows[i];
      Json sens = Json::object();
      for (size_t k = 0; k < fit.params.size(); ++k)
        sens[std::string(kRunParamNames.Name(fit.params[k]))] = fit.sensitivity[i][k];
      rows.push_back({{"name", r.name},
                      {"measured_s", r.measured_s},
                      {"before_s", r.before_s},
                      {"fitted_s", r.fitted_s},
                      {"left_out_s", r.left_out_s ? Json(*r.left_out_s) : Json(nullptr)},
                      {"sensitivity", sens}});
    }
    j["runs"] = rows;
    // Fractions, as every loom JSON (docs/schemas/README.md); RunFit keeps percent.
    j["before_mape"] = fit.before_mape / 100;
    j["fitted_mape"] = fit.fitted_mape / 100;
    j["left_out_mape"] = fit.left_out_mape ? Json(*fit.left_out_mape / 100) : Json(nullptr);
    j["written"] = written;
    out << JsonText(Stamped(j, o.request)) << "\n";
    return Status::Ok();
  }
  out << "runs     " << o.runs_path << ": " << fit.rows.size() << " runs on " << o.cluster_path
      << "\n";
  for (size_t k = 0; k < fit.params.size(); ++k) {
    out << "fitted   " << kRunParamNames.Name(fit.params[k]) << " x " << Number(fit.values[k])
        << "\n";
  }
  for (const std::string& d : dropped) out << "not fitted  " << d << "\n";
  out << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %10s %10s %8s %10s %8s %12s %8s\n", "run", "measured s",
                "before s", "err %", "fitted s", "err %", "left out s", "err %");
  out << line;
  for (const RunFitRow& r : fit.rows) {
    char left[64] = "-", left_err[32] = "-";
    if (r.left_out_s) {
      std::snprintf(left, sizeof left, "%.4g", *r.left_out_s);
      std::snprintf(left_err, sizeof left_err, "%+.1f", pct(*r.left_out_s, r.measured_s));
    }
    std::snprintf(line, sizeof line, "%-28s %10.4g %10.4g %+8.1f %10.4g %+8.1f %12s %8s\n",
                  r.name.substr(0, 28).c_str(), r.measured_s, r.before_s,
                  pct(r.before_s, r.measured_s), r.fitted_s, pct(r.fitted_s, r.measured_s), left,
                  left_err);
    out << line;
  }
  out << "\nmean |error|: before " << Percent(fit.before_mape / 100) << ", fitted (in-sample) "
      << Percent(fit.fitted_mape / 100) << ", leave-one-out "
      << (fit.left_out_mape ? Percent(*fit.left_out_mape / 100)
                            : std::string("- (no run can be left out)"))
      << "\n";
  if (written.empty()) {
    out << "wrote nothing (--dry-run)\n";
  } else {
    for (const std::string& w : written) out << "wrote    " << w << "\n";
  }
  return Status::Ok();
}

}  // namespace

void AddFitCommand(CLI::App& app, CommandRunner& runner) {
  auto options = std::make_shared<FitCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit the cost models to measurements and write the calibration into the GPU or cluster file");
  InputFile(cmd->add_option(
      "inputs", options->inputs,
      "With --gpu: profiles (schema loom.profile/2, written by loom probe). With --cluster: "
      "profiles "
      "with collectives, or output of nccl-tests (all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, "
      "alltoall_perf, sendrecv_perf), as printed or as its -J JSON; printed output run with "
      "NCCL_NVLS_ENABLE=0 and NCCL_DEBUG=INFO is fitted without NVLS (NCCL's log line says so)"));
  CLI::Option_group* target = cmd->add_option_group("target", "What to calibrate (exactly one)");
  InputFile(target->add_option(
      "--gpu", options->gpu_path,
      "GPU file (hardware/gpus/) whose compute calibration is fitted: GEMM efficiency per dtype, "
      "wave latency, operand bandwidth and epilogue overlap (tiles chosen per shape), kernel "
      "overhead, "
      "attention efficiency, HBM bandwidth fraction"));
  InputFile(target->add_option(
      "--cluster", options->cluster_path,
      "Cluster file (hardware/clusters/) whose communication calibration is fitted: bus-bandwidth "
      "fractions and extra latencies within and across nodes"));
  InputFile(target->add_option(
      "--runs", options->runs_path,
      "Runs file (schema loom.runs/1, or CSV) of measured step times with their model and "
      "strategy, "
      "on --cluster: fit the --params multipliers by robust least squares, print the in-sample and "
      "leave-one-out error per run, and write each into its file (framework, GPU or cluster)"));
  cmd->add_option("--params", options->params,
                  "With --runs: the multipliers to fit, a comma list of host (the framework's host "
                  "times), compute "
                  "(the GPU's efficiencies) and inter_node (the cross-node bus bandwidth), or auto "
                  "(every one some "
                  "run depends on)")
      ->capture_default_str();
  cmd->add_option(
         "--framework", options->framework,
         std::string("With --runs: the framework of runs that name none; ") + kFrameworkHelp)
      ->capture_default_str();
  CLI::Option* dry_run =
      cmd->add_flag("--dry-run", options->dry_run, "Print the fit; write nothing");
  CLI::Option* check = cmd->add_flag(
      "--check", options->check,
      "With --gpu: fit nothing; print how the file's calibration as it is predicts the profiles "
      "(median, p90 and "
      "max |error| per class: its held-out error on shapes it was not fitted to); write nothing");
  CLI::Option* output =
      cmd->add_option("--output", options->output_path,
                      "Write the calibrated file here (replacing it) instead of beside the GPU or "
                      "cluster file")
          ->excludes(dry_run)
          ->excludes(check);
  cmd->add_flag("--in-place", options->in_place,
                "Rewrite the GPU or cluster file itself (with --runs: each file it fits) instead "
                "of writing a new "
                "<name>.fitted.json beside it")
      ->excludes(dry_run)
      ->excludes(check)
      ->excludes(output);
  cmd->add_flag(
      "--force", options->force,
      "Fit even when the measurements name another GPU than the file, and replace an earlier "
      "<name>.fitted.json");
  cmd->add_flag("--json", options->json,
                "Print one JSON object (schema loom.fit/1) instead of tables");
  cmd->footer(
      "By default the calibrated copy is a new file beside the input, x.json -> x.fitted.json "
      "(refused if it\n"
      "exists, unless --force); --output FILE writes elsewhere, --in-place rewrites the input. "
      "--runs writes each\n"
      "file it fits the same way. A file is written atomically, and only when the result loads; "
      "the keys not\n"
      "fitted are kept. Interrupted (SIGINT,\n"
      "SIGTERM), fit ends at once, or right after the write in progress: each file is the old one "
      "or the new one,\n"
      "never a part, and no temporary is left (the shell's status is 130 or 143).\n\n"
      "Examples:\n"
      "  loom fit tests/cli/data/profile_a100_synthetic.json --gpu "
      "hardware/gpus/a100-sxm4-80gb.json --dry-run\n"
      "  loom fit tests/reference/nccl-tests/all_reduce_perf_2x8_h100_issue309.txt \\\n"
      "      --cluster hardware/clusters/dgx-h100.json --dry-run     (a published nccl-tests log, "
      "2 x 8 H100)\n"
      "  loom fit profile.json --gpu hardware/gpus/h100-sxm5-80gb.json    (writes "
      "hardware/gpus/h100-sxm5-80gb.fitted.json)\n"
      "  loom fit profile.json --gpu hardware/gpus/a100-sxm4-80gb.json --output "
      "a100-calibrated.json --json\n"
      "  loom fit grid.json --gpu a100-calibrated.json --check        (held-out error of that "
      "calibration)\n"
      "  loom fit --runs tests/cli/data/runs_synthetic.json --cluster "
      "hardware/clusters/dgx-h100.json --dry-run\n"
      "      (multipliers from step times: runs with a model, strategy and step_time_s or a "
      "Megatron/DeepSpeed log)");
  cmd->callback([options, cmd, &runner] {
    // Which fit the options ask for, checked while parsing: a wrong combination is a usage error.
    const FitCommandOptions& o = *options;
    if (!o.runs_path.empty()) {
      if (!o.gpu_path.empty()) {
        throw CLI::ValidationError(
            "--runs",
            "fit --runs takes --cluster (the runs' cluster, whose GPU file it "
            "calibrates), not --gpu");
      }
      if (o.cluster_path.empty())
        throw CLI::RequiredError("--cluster (the cluster the runs ran on) with --runs");
      if (!o.inputs.empty()) {
        throw CLI::ValidationError("inputs", "fit --runs reads only the runs file; fit " +
                                                 o.inputs.front() + " in a call of its own");
      }
    } else {
      if (o.gpu_path.empty() == o.cluster_path.empty()) {
        throw CLI::ValidationError(
            "target",
            "fit needs exactly one of --gpu FILE, --cluster FILE, or --runs FILE "
            "--cluster FILE; see loom fit --help");
      }
      if (o.inputs.empty()) {
        throw CLI::RequiredError(
            "inputs (profiles from loom probe, or nccl-tests output) before --gpu or --cluster");
      }
    }
    options->request = CommandRequest(*cmd);
    runner = [options](std::ostream& out, std::ostream&) -> Status {
      if (options->check && options->gpu_path.empty()) {
        return Status::InvalidArgument(
            "fit --check checks a GPU file's compute calibration: pass --gpu FILE");
      }
      if (!options->runs_path.empty()) return RunRunsFit(*options, out);
      return options->gpu_path.empty() ? RunClusterFit(*options, out) : RunGpuFit(*options, out);
    };
  });
}

}  // namespace loom
