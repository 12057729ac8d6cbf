#include "exec/cuda/cuda_backend.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_facts.h"
#include "device/cuda/nccl_comms.h"
#include "device/launcher.h"
#include "exec/cuda/device_step.h"
#include "exec/executor.h"
#include "exec/host_backend.h"

namespace loom {
namespace {

// The GPU of this rank's local index, made current; Unavailable when there is none for it.
Result<int> SelectDevice(const Launcher& launcher) {
  const std::vector<std::string>& hosts = launcher.Hosts();
  const int rank = launcher.Rank();
  int devices = 0;
  const Status counted = cuda::CountDevices(&devices);
  if (!counted.ok()) {
    // CountDevices' advice is the probe's; this backend's follows.
    std::string why = counted.message();
    why = why.substr(0, why.find("; loom probe"));
    return Status::Unavailable(
        "rank " + std::to_string(rank) + " on host " + hosts[rank] + ": " + why +
        "; --backend cuda runs each rank on a GPU: run it where NVIDIA GPUs and their driver "
        "are, or validate with --backend host");
  }
  const auto local_ranks = std::count(hosts.begin(), hosts.end(), hosts[rank]);
  if (local_ranks > devices) {
    return Status::Unavailable(
        std::to_string(local_ranks) + " ranks on host " + hosts[rank] + " but it has " +
        std::to_string(devices) + " GPUs: --backend cuda runs one rank per GPU; start at most " +
        std::to_string(devices) +
        " ranks per host (mpirun --map-by ppr:" + std::to_string(devices) + ":node)");
  }
  const int device = LocalIndex(hosts, rank);
  LOOM_CUDA(cudaSetDevice(device));
  return device;
}

// "NVIDIA H100 80GB HBM3 (cc 9.0), driver 580.95.05, CUDA 13.0, NCCL 2.28.9".
std::string DescribeDevice(int device) {
  std::string text = "CUDA device " + std::to_string(device);
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) == cudaSuccess) {
    text = std::string(properties.name) + " (cc " + std::to_string(properties.major) + "." +
           std::to_string(properties.minor) + ")";
  }
  std::ifstream proc("/proc/driver/nvidia/version");
  std::ostringstream proc_text;
  proc_text << proc.rdbuf();
  std::string driver = cuda::DriverVersionFromProc(proc_text.str());
  int version = 0;
  if (driver.empty()) {
    driver = cudaDriverGetVersion(&version) == cudaSuccess
                 ? "API " + cuda::CudaVersionString(version)
                 : "unknown";
  }
  const std::string runtime =
      cudaRuntimeGetVersion(&version) == cudaSuccess ? cuda::CudaVersionString(version) : "unknown";
  cudaGetLastError();  // a query that failed above is no error of the run
  return text + ", driver " + driver + ", CUDA " + runtime + ", NCCL " + cuda::NcclVersionString();
}

// Every rank learns whether every rank got through |what|: |local| where it failed, Internal on
// the others, so that no rank goes on to wait for one that has stopped.
Status Agree(Launcher& launcher, const Status& local, const std::string& what) {
  LOOM_ASSIGN_OR_RETURN(double failures, launcher.MaxOverRanks(local.ok() ? 0.0 : 1.0));
  if (!local.ok()) return local;
  if (failures > 0) {
    return Status::Internal("rank " + std::to_string(launcher.Rank()) +
                            " stopped: another rank failed " + what + " (its error says why)");
  }
  return Status::Ok();
}

// Rank 0 learns every rank's pool peak: each rank in turn broadcasts {pool peak, baseline + peak}.
Status GatherPeaks(Launcher& launcher, int64_t pool_peak, int64_t baseline_bytes,
                   CudaRunResult* result) {
  for (int r = 0; r < launcher.Size(); ++r) {
    int64_t peaks[2] = {pool_peak, baseline_bytes + pool_peak};  // only rank r's travel
    LOOM_RETURN_IF_ERROR(launcher.Broadcast(peaks, static_cast<int64_t>(sizeof peaks), r));
    if (launcher.Rank() != 0) continue;
    result->peak_pool_bytes = std::max(result->peak_pool_bytes, peaks[0]);
    result->peak_bytes_per_rank.push_back(peaks[1]);
  }
  return Status::Ok();
}

// Rank 0 learns the sums of every rank's class times: each rank in turn broadcasts its own.
Status GatherClasses(Launcher& launcher, const cuda::DeviceStep::ClassTimes& mine,
                     CudaRunResult* result) {
  constexpr size_t kClasses = kDeviceClasses.size();
  std::array<double, 3 * kClasses> sum{};
  for (int r = 0; r < launcher.Size(); ++r) {
    std::array<double, 3 * kClasses> theirs{};
    for (size_t c = 0; c < kClasses; ++c) {
      theirs[c] = mine.count[c];
      theirs[kClasses + c] = mine.predicted_s[c];
      theirs[2 * kClasses + c] = mine.measured_s[c];
    }
    LOOM_RETURN_IF_ERROR(launcher.Broadcast(theirs.data(), static_cast<int64_t>(sizeof theirs), r));
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += theirs[i];
  }
  if (launcher.Rank() != 0) return Status::Ok();
  for (size_t c = 0; c < kClasses; ++c) {
    if (sum[c] == 0) continue;
    result->work_classes.push_back({std::string(kDeviceClasses[c]), static_cast<int64_t>(sum[c]),
                                    CompareValues(sum[kClasses + c], sum[2 * kClasses + c])});
  }
  return Status::Ok();
}

}  // namespace

Result<CudaRunResult> RunOnCuda(const ExecPlan& plan, const DeviceProgram& program,
                                Launcher& launcher, const CudaRunOptions& options) {
  const int rank = launcher.Rank(), world = launcher.Size();
  const double timeout_s = options.timeout.ToSeconds();
  Result<int> device = SelectDevice(launcher);
  Status selected = device.ok() ? Status::Ok() : device.status();
  if (selected.ok() && program.rank != rank) {
    selected = Status::InvalidArgument("rank " + std::to_string(rank) +
                                       " was given the device program of rank " +
                                       std::to_string(program.rank));
  }
  LOOM_RETURN_IF_ERROR(Agree(launcher, selected, "to select its GPU"));
  CudaRunResult result;
  result.device = DescribeDevice(*device);
  cuda::DeviceStep step(plan, program);
  std::vector<std::vector<int32_t>> communicators;
  for (const Communicator& communicator : plan.communicators())
    communicators.push_back(communicator.ranks);
  std::vector<cuda::NcclEdge> edges;
  for (const P2pEdge& edge : program.edges) edges.push_back({edge.from, edge.to});
  // Made after |step|, so destroyed before it: the communicators are aborted (their kernels leave
  // the GPU) before the step frees its memory, which waits for the GPU.
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<cuda::NcclComms> comms,
                        cuda::NcclComms::Create(communicators, edges, launcher));
  LOOM_RETURN_IF_ERROR(
      Agree(launcher, step.SetUp(*device), "to set up its streams, memory and kernels"));
  LOOM_RETURN_IF_ERROR(
      Agree(launcher, step.Connect(*comms, timeout_s), "to connect its NCCL communicators"));
  result.runner_bytes = step.runner_bytes();
  for (int32_t s = 0; s < options.warmup_steps + options.steps; ++s) {
    LOOM_RETURN_IF_ERROR(launcher.Barrier());
    // The peak is the measured steps' own.
    const Status reset = s == options.warmup_steps ? step.pool().ResetPeak() : Status::Ok();
    Result<RankTimes> times = reset.ok() ? step.Run(*comms, timeout_s) : Result<RankTimes>(reset);
    // Aborting at once lets this rank's NCCL kernels leave its GPU; peers that wait for this rank
    // stop at their own deadline.
    if (!times.ok()) comms->Abort();
    LOOM_RETURN_IF_ERROR(Agree(launcher, times.ok() ? Status::Ok() : times.status(),
                               "in step " + std::to_string(s)));
    LOOM_ASSIGN_OR_RETURN(std::vector<RankTimes> all, GatherRankTimes(*times, rank, world));
    if (rank == 0 && s >= options.warmup_steps)
      result.steps.push_back(MeasuredTimeline(plan.graph(), all));
  }
  // The peak is read before the profiled step, whose memory is the same but not measured.
  Result<int64_t> peak = step.pool().Peak();
  LOOM_RETURN_IF_ERROR(launcher.Barrier());
  Result<cuda::DeviceStep::ClassTimes> classes = step.Profile(*comms, timeout_s);
  if (!classes.ok()) comms->Abort();
  LOOM_RETURN_IF_ERROR(
      Agree(launcher, classes.ok() ? Status::Ok() : classes.status(), "in the profiled step"));
  LOOM_RETURN_IF_ERROR(GatherClasses(launcher, *classes, &result));
  LOOM_RETURN_IF_ERROR(
      Agree(launcher, peak.ok() ? Status::Ok() : peak.status(), "to read its memory pool's peak"));
  LOOM_RETURN_IF_ERROR(GatherPeaks(launcher, *peak, program.baseline_bytes, &result));
  LOOM_RETURN_IF_ERROR(comms->Close());
  return result;
}

}  // namespace loom
