#ifndef LOOM_COST_PROFILE_H_
#define LOOM_COST_PROFILE_H_

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/enum_names.h"
#include "core/json_reader.h"
#include "core/status.h"
#include "op/op.h"
#include "op/op_json.h"
#include "spec/cluster.h"

namespace loom {

// A measured profile (schema "loom.profile/2"; "loom.profile/1" files, which have no hosts,
// host_samples, collectives or failures, are read too): what `loom probe` writes, `loom fit --gpu`
// reads for the kernels and `loom fit --cluster` for the collectives. Every key is required unless
// marked optional; unknown keys are errors.
//
//   "schema":           "loom.profile/2"
//   "loom_version":     optional: the loom that wrote it (LOOM_VERSION), for people
//   "device":           {"name": cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3",
//                        optional: "sm_count", "memory_bytes", "l2_bytes" (integers),
//                        "compute_capability" (string, "9.0"), "sm_clock_mhz", "memory_clock_mhz"
//                        (peak clocks, integers)}
//   "driver_version":   string, as nvidia-smi prints it ("550.54.15")
//   "cuda_version":     string, the runtime's ("12.4")
//   "library_versions": object of library name -> version string ({"cublaslt": "12.4.5", "nccl":
//                       "2.21.5"}); any names, may be empty
//   "date":             ISO 8601 date or date-time of the run ("2025-03-01" or
//   "2025-03-01T10:00:00Z") "hosts":            optional array of strings: the host name of every
//   rank, in rank order "samples":          array of measured kernels, each an object with
//     "kernel":  "gemm" | "attention" | "memory"
//     shape:     gemm:      "m", "n", "k", "batch" (integers >= 1), "dtype", and
//                           "accumulate_fp32": true for C = A * B + C into fp32 (absent: false)
//                attention: "batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim_qk",
//                           "head_dim_v" (integers >= 1; heads a multiple of kv_heads), "causal",
//                           "backward" (booleans), "dtype" — the fields of AttentionShape
//                memory:    "bytes_read", "bytes_written" (integers >= 0, not both 0); no dtype:
//                           a memory-bound kernel is costed by its bytes alone
//     "dtype":   "bf16" | "fp16" | "fp8" | "tf32" | "fp32" (gemm and attention)
//     "median_us": median time of one kernel over the repeats, > 0
//     "p10_us", "p90_us": optional, together: the 10th and 90th percentiles, p10 <= median <= p90.
//                Percentiles rather than min/max or a standard deviation: one preempted repeat
//                moves a maximum and a deviation but not the 90th percentile.
//     "repeats": timed runs behind the statistics, >= 1
//     "label":   optional string naming the kernel measured ("cublasLt", "rmsnorm", "copy")
//   "host_samples":     optional array: what is not a kernel of the op stream, each an object with
//     "measure": "launch" (an empty kernel: launch overhead) | "h2d" | "d2h" (pinned host memory
//                to and from the device, cudaMemcpyAsync)
//     "bytes":   integer, 0 for launch, >= 1 for the copies
//     "median_us", "p10_us", "p90_us", "repeats": as for samples
//   "collectives":      optional array of NCCL measurements, one per size, as nccl-tests prints
//   them:
//     "collective": "all_reduce" | "all_gather" | "reduce_scatter" | "all_to_all" | "broadcast" |
//                   "send_recv"
//     "group":   "world" (every rank) | "intra_node" (the ranks of one host, all hosts at once) |
//                "rails" (one rank per host, every local index at once)
//     "ranks", "nodes": ranks in the group and hosts they span (integers >= 1)
//     "size_bytes", "count": nccl-tests' size and count columns (integers >= 1)
//     "type":    NCCL element type as nccl-tests names it ("float")
//     "redop":   "sum" for reductions, "none" otherwise
//     "out_of_place", "in_place": {"time_us" (> 0), "algbw_GBps", "busbw_GBps" (>= 0)}: the mean
//                time of one operation and nccl-tests' bandwidths (busbw = algbw * the
//                collective's factor, nccl-tests doc/PERFORMANCE.md)
//     "repeats": timed runs behind the times, >= 1
//   "failures":         optional array of points that could not be measured, each an object with
//     "point": the point as ProbePointKey names it; "error": the reason ("out of memory: ...")
// A shape is exactly what the op stream costs (src/op/op.h, its fields as op/op_json.h spells
// them), so a fitted calibration predicts the sample through RooflineComputeModel with no
// translation.

// The label of the probe's RMSNorm samples (probe/bench.h, MemoryKernel::kRmsNorm): a row
// reduction (MemoryAccess) in a profile that predates the samples' "access" key.
inline constexpr std::string_view kProbeRowReductionLabel = "rmsnorm";

struct ProfileSample {
  KernelShape shape;
  double median_us = 0;
  std::optional<double> p10_us, p90_us;
  int64_t repeats = 1;
  std::string label;
  std::string where;  // "file: samples[i]" for messages; not written

  // kGemm, kAttention or kMemoryBound, from |shape|.
  OpKind Kind() const;
};

// What a host sample measures.
enum class HostMeasure { kLaunch, kHostToDevice, kDeviceToHost };
inline constexpr EnumNames<HostMeasure, 3> kHostMeasureNames({{
    {HostMeasure::kLaunch, "launch"},
    {HostMeasure::kHostToDevice, "h2d"},
    {HostMeasure::kDeviceToHost, "d2h"},
}});

struct HostSample {
  HostMeasure measure = HostMeasure::kLaunch;
  int64_t bytes = 0;
  double median_us = 0;
  std::optional<double> p10_us, p90_us;
  int64_t repeats = 1;
  std::string where;
};

// The process groups loom probe measures over.
enum class ProbeGroup { kWorld, kIntraNode, kRails };
inline constexpr EnumNames<ProbeGroup, 3> kProbeGroupNames({{
    {ProbeGroup::kWorld, "world"},
    {ProbeGroup::kIntraNode, "intra_node"},
    {ProbeGroup::kRails, "rails"},
}});

struct CollectiveTiming {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

struct CollectiveSample {
  ProfiledCollective collective = ProfiledCollective::kAllReduce;
  ProbeGroup group = ProbeGroup::kWorld;
  int64_t ranks = 1;
  int64_t nodes = 1;
  int64_t size_bytes = 0;
  int64_t count = 0;
  std::string type = "float";
  std::string redop = "sum";
  CollectiveTiming out_of_place;
  CollectiveTiming in_place;
  int64_t repeats = 1;
  std::string where;
};

struct ProbeFailure {
  std::string point;  // ProbePointKey of the point
  std::string error;
};

struct ProfileDevice {
  std::string name;
  std::optional<int64_t> sm_count;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> l2_bytes;
  std::optional<std::string> compute_capability;
  std::optional<int64_t> sm_clock_mhz;
  std::optional<int64_t> memory_clock_mhz;
};

struct Profile {
  std::string file;  // where it was read from; not written
  ProfileDevice device;
  std::string driver_version;
  std::string cuda_version;
  std::vector<std::pair<std::string, std::string>> library_versions;  // in file order
  std::string date;
  std::vector<std::string> hosts;  // one per rank; empty when not stated
  std::vector<ProfileSample> samples;
  std::vector<HostSample> host_samples;
  std::vector<CollectiveSample> collectives;
  std::vector<ProbeFailure> failures;
};

// The identity of a measurement, the same for the point loom probe plans and the entry it
// records, so that --resume knows what is done: DescribeShape plus the label ("memory 256 MiB
// read, 256 MiB written [rmsnorm]"), "h2d 64 MiB", "launch", "all_reduce world 16 ranks 1024 B".
std::string ProbePointKey(const KernelShape& shape, const std::string& label);
std::string ProbePointKey(HostMeasure measure, int64_t bytes);
std::string ProbePointKey(ProfiledCollective collective, ProbeGroup group, int64_t ranks,
                          int64_t size_bytes);

// The keys of every sample, host sample, collective and failure of |profile|.
std::vector<std::string> RecordedPointKeys(const Profile& profile);

// Parses |json| as a profile read from |file|. Errors name the file, the sample ("samples[3]"),
// the key and the fix, all of them at once; an unknown kernel class or key gets a "did you mean".
Result<Profile> ParseProfile(const nlohmann::json& json, const std::string& file);

// Reads and parses |path|.
Result<Profile> ReadProfile(const std::string& path);

// The profile's JSON, keys in the order above; samples one object each (ProfileSampleJson).
nlohmann::ordered_json ProfileJson(const Profile& profile);

// One entry's JSON object, keys in the order above. ParseProfile reads it back unchanged.
nlohmann::ordered_json ProfileSampleJson(const ProfileSample& sample);

nlohmann::ordered_json HostSampleJson(const HostSample& sample);
nlohmann::ordered_json CollectiveSampleJson(const CollectiveSample& sample);
nlohmann::ordered_json ProbeFailureJson(const ProbeFailure& failure);

// Writes a profile one entry at a time, so that an interrupted probe keeps what it measured.
// Contract: after Open and after every Append that returns OK, |path| is a complete, valid profile
// holding the header and every entry appended so far. Each write goes to a temporary file beside
// |path| that is then renamed over it, so a process killed at any moment leaves either the file
// before the entry or the file after it, never half of one (rename is atomic on POSIX file
// systems; there is no fsync, so a power cut may lose the last entries). Entries are one per
// line, so `wc -l` and `tail` show the progress.
class ProfileWriter {
 public:
  // Writes |header| (its entries too, if any) to |path|, replacing what was there.
  Status Open(const std::string& path, const Profile& header);
  // REQUIRES: Open returned OK.
  Status Append(const ProfileSample& sample);
  Status Append(const HostSample& sample);
  Status Append(const CollectiveSample& sample);
  Status Append(const ProbeFailure& failure);

  // What has been written.
  const Profile& profile() const { return profile_; }

 private:
  Status Write();

  Profile profile_;
  std::string path_;
};

// The profile as text: ProfileJson with one entry per line.
std::string ProfileText(const Profile& profile);

// True when |device_name| (what CUDA or nccl-tests report) names the GPU of |gpu_name| (a GPU
// file's "name"): equal after dropping a leading "NVIDIA " from both, a trailing parenthesised
// note from the file's name ("NVIDIA H100 80GB HBM3 (SXM5)") and case.
bool DeviceMatchesGpu(const std::string& device_name, const std::string& gpu_name);

// OK when |profile| was measured on the GPU |gpu| describes: the device name matches
// (DeviceMatchesGpu) and so does its SM count, where the profile states one.
Status CheckProfiledGpu(const Profile& profile, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_PROFILE_H_
