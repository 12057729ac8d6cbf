#ifndef LOOM_COST_PROFILE_H_
#define LOOM_COST_PROFILE_H_

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "spec/cluster.h"
#include "workload/ops.h"

namespace loom {

// A measured profile of one GPU (schema "loom.profile/1"): what `loom probe` writes and
// `loom fit --gpu` reads. Every key is required unless marked optional; unknown keys are errors.
//
//   "schema":           "loom.profile/1"
//   "device":           {"name": cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3",
//                        "sm_count" (optional integer), "memory_bytes" (optional integer),
//                        "compute_capability" (optional string, "9.0")}
//   "driver_version":   string, as nvidia-smi prints it ("550.54.15")
//   "cuda_version":     string, the runtime's ("12.4")
//   "library_versions": object of library name -> version string ({"cublaslt": "12.4.5", "nccl":
//                       "2.21.5"}); any names, may be empty
//   "date":             ISO 8601 date or date-time of the run ("2025-03-01" or "2025-03-01T10:00:00Z")
//   "samples":          array of measured kernels, each an object with
//     "kernel":  "gemm" | "attention" | "memory"
//     shape:     gemm:      "m", "n", "k", "batch" (integers >= 1), "dtype"
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
// A shape is exactly what the op stream costs (src/workload/ops.h), so a fitted calibration
// predicts the sample through RooflineComputeModel with no translation.

using KernelShape = std::variant<GemmShape, AttentionShape, MemoryShape>;

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

struct ProfileDevice {
  std::string name;
  std::optional<int64_t> sm_count;
  std::optional<int64_t> memory_bytes;
  std::optional<std::string> compute_capability;
};

struct Profile {
  std::string file;  // where it was read from; not written
  ProfileDevice device;
  std::string driver_version;
  std::string cuda_version;
  std::vector<std::pair<std::string, std::string>> library_versions;  // in file order
  std::string date;
  std::vector<ProfileSample> samples;
};

// "gemm 4096x4096x8192 bf16", "attention fwd causal b1 h32/8 s4096/4096 d128/128 bf16", "memory
// 256 MiB read, 256 MiB written":
// a sample's shape for messages and reports.
std::string DescribeShape(const KernelShape& shape);

// Parses |json| as a profile read from |file|. Errors name the file, the sample ("samples[3]"),
// the key and the fix, all of them at once; an unknown kernel class or key gets a "did you mean".
Result<Profile> ParseProfile(const nlohmann::json& json, const std::string& file);

// Reads and parses |path|.
Result<Profile> ReadProfile(const std::string& path);

// The profile's JSON, keys in the order above; samples one object each (ProfileSampleJson).
nlohmann::ordered_json ProfileJson(const Profile& profile);

// One sample's JSON object, keys in the order above. ParseProfile reads it back unchanged.
nlohmann::ordered_json ProfileSampleJson(const ProfileSample& sample);

// Writes a profile one sample at a time, so that an interrupted probe keeps what it measured.
// Contract: after Open and after every Append that returns OK, the file is a complete, valid
// profile holding the header and every sample appended so far, flushed to the operating system
// (it survives the process being killed, not a power cut: there is no fsync). Each Append
// overwrites only the closing "]}" of the file, so the file grows and is never rewritten.
// One sample per line, so `wc -l` and `tail` show the progress.
class ProfileWriter {
 public:
  // Creates or truncates |path| and writes |header| (its samples too, if any).
  Status Open(const std::string& path, const Profile& header);
  // REQUIRES: Open returned OK.
  Status Append(const ProfileSample& sample);

 private:
  std::ofstream out_;
  std::string path_;
  std::streamoff tail_at_ = 0;  // where the closing "]}" starts
  bool empty_ = true;
};

// True when |device_name| (what CUDA or nccl-tests report) names the GPU of |gpu_name| (a GPU
// file's "name"): equal after dropping a leading "NVIDIA " from both, a trailing parenthesised
// note from the file's name ("NVIDIA H100 80GB HBM3 (SXM5)") and case.
bool DeviceMatchesGpu(const std::string& device_name, const std::string& gpu_name);

// OK when |profile| was measured on the GPU |gpu| describes: the device name matches
// (DeviceMatchesGpu) and so does its SM count, where the profile states one.
Status CheckProfiledGpu(const Profile& profile, const GpuSpec& gpu);

}  // namespace loom

#endif  // LOOM_COST_PROFILE_H_
