#include "spec/cluster.h"

#include <array>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/json_reader.h"

namespace loom {
namespace {

constexpr std::string_view kGpuSchema = "loom.gpu/1";
constexpr std::string_view kClusterSchema = "loom.cluster/1";

constexpr std::array<Dtype, 5> kAllDtypes = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8, Dtype::kTf32,
                                             Dtype::kFp32};

// Reads a hardware file. ReadJsonObjectFile's hint for a missing file points at models/; this one
// points at the shipped hardware file |example| instead.
Result<nlohmann::json> ReadHardwareFile(const std::string& path, std::string_view example) {
  return ReadJsonObjectFile(
      path, "check the path, or pass a shipped file such as " + std::string(example));
}

void CheckSchema(JsonReader& reader, std::string_view expected) {
  std::string fix = "\"schema\": \"" + std::string(expected) + "\"";
  if (!reader.Has("schema")) {
    reader.Allow("schema");
    reader.AddError("schema", "is missing; add " + fix);
    return;
  }
  std::optional<std::string> schema = reader.OptionalString("schema");
  if (schema && *schema != expected) {
    reader.AddError("schema", "is \"" + *schema + "\" but this file is read as " + fix +
                                  "; pass a file of that kind, or convert this one to that schema");
  }
}

std::string NonEmptyString(JsonReader& reader, std::string_view key) {
  bool present = reader.Has(key);
  std::string value = reader.String(key);
  if (present && value.empty()) reader.AddError(key, "is empty; give it a value");
  return value;
}

// Physical bounds on hardware rates and sizes: a factor of a thousand or more around any GPU or
// network built (an H100 has 132 SMs, 80 GiB at 3.35 TB/s and 989 dense bf16 TFLOP/s; NICs run at
// 100-800 Gb/s with microseconds of latency). A value outside is a unit or typing error, and a rate
// near zero would turn into times of centuries.
constexpr NumberRange kBandwidthGBps{1e-2, 1e6};
constexpr NumberRange kBandwidthGbps{1e-1, 1e7};
constexpr NumberRange kTflops{1e-2, 1e6};
constexpr NumberRange kLatencyUs{0, 1e6};
constexpr IntRange kSmCount{1, 1'000'000};
constexpr IntRange kGpuMemoryBytes{1, int64_t{1} << 50};
constexpr IntRange kHostMemoryBytes{1, int64_t{1} << 55};
constexpr IntRange kGpusPerNode{1, 4096};
constexpr IntRange kNodes{1, 1 << 20};
// NCCL's MAXCHANNELS (src/include/device.h, 64 since 2.2x; 32 before).
constexpr IntRange kNcclChannels{1, 64};
constexpr IntRange kNicsPerNode{1, 4096};
// A GPU-hour rents for about 1-10 US dollars (2025 cloud list prices for A100 to H200); a price
// outside a thousandfold of that is a unit error (cents, or a node-hour or a month).
constexpr NumberRange kPricePerGpuHourUsd{1e-3, 1e4};

// A fleet has a handful of GPU types; each group loads a GPU file, so a file of a million groups
// (a generated or corrupted one) would take minutes to refuse.
constexpr size_t kMaxNodeGroups = 256;

// A required number that may be 0 (a latency, or a GPU without NVLink).
double NonNegativeNumber(JsonReader& reader, std::string_view key, NumberRange range = {}) {
  if (!reader.Has(key)) {
    reader.Allow(key);
    reader.AddError(key, "is missing; add \"" + std::string(key) + "\": <number >= 0>");
    return 0;
  }
  return reader.OptionalNonNegativeNumber(key, range).value_or(0);
}

template <typename Enum, size_t N>
Enum ReadEnum(JsonReader& reader, std::string_view key, const EnumNames<Enum, N>& names,
              Enum fallback) {
  if (!reader.Has(key)) {
    reader.Allow(key);
    reader.AddError(key, "is missing; add \"" + std::string(key) + "\": one of " + names.Choices());
    return fallback;
  }
  std::optional<std::string> text = reader.OptionalString(key);
  if (!text) return fallback;
  std::optional<Enum> value = names.Parse(*text);
  if (!value) {
    reader.AddError(key, "is \"" + *text + "\"; it must be one of " + names.Choices());
    return fallback;
  }
  return *value;
}

// "sources" cites where the numbers come from; the loader checks only its shape.
void CheckSources(JsonReader& reader, const nlohmann::json& object) {
  reader.Allow("sources");
  auto it = object.find("sources");
  if (it == object.end()) return;
  bool ok = it->is_array() || it->is_object();
  for (const nlohmann::json& item : *it) ok = ok && item.is_string();
  if (!ok) {
    reader.AddError("sources",
                    "must be an array of strings or an object of \"key\": \"citation\" strings");
  }
}

// A number as people write it: 0.5 and 500, not std::to_string's 0.500000 and 500.000000.
std::string Show(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Returns both messages when both failed; a lone failure keeps its code.
Status Join(const Status& first, const Status& second) {
  if (first.ok()) return second;
  if (second.ok()) return first;
  return Status::InvalidArgument(first.message() + "\n" + second.message());
}

// The peak field of |gpu| for |dtype|; |Gpu| is GpuSpec or const GpuSpec.
template <typename Gpu>
auto& PeakSlot(Gpu& gpu, Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return gpu.bf16_tflops;
    case Dtype::kFp16:
      return gpu.fp16_tflops;
    case Dtype::kFp8:
      return gpu.fp8_tflops;
    case Dtype::kTf32:
      return gpu.tf32_tflops;
    case Dtype::kFp32:
      return gpu.fp32_tflops;
  }
  return gpu.fp32_tflops;
}

void ReadPeaks(JsonReader& peaks, bool present, GpuSpec* gpu) {
  bool any = false;
  for (Dtype dtype : kAllDtypes) {
    std::string_view key = kDtypeNames.Name(dtype);
    std::optional<double> tflops = peaks.OptionalNonNegativeNumber(key, kTflops);
    if (tflops && *tflops == 0) {
      peaks.AddError(key, "is 0; omit the key when the GPU has no " + std::string(key) + " rate");
      tflops.reset();
    }
    any = any || peaks.Has(key);
    PeakSlot(*gpu, dtype) = tflops;
  }
  if (present && !any) {
    peaks.AddError("", "names no format; add dense rates such as \"bf16\": <TFLOP/s>, one per " +
                           kDtypeNames.Choices());
  }
}

Status ParseGpu(const nlohmann::json& json, const std::string& path, GpuSpec* gpu) {
  JsonReader reader(json, path);
  CheckSchema(reader, kGpuSchema);
  gpu->name = NonEmptyString(reader, "name");
  gpu->file = path;
  gpu->sm_count = reader.Int("sm_count", kSmCount);
  gpu->memory_bytes = reader.Int("memory_bytes", kGpuMemoryBytes);
  gpu->hbm_bandwidth_GBps = reader.PositiveNumber("hbm_bandwidth_GBps", kBandwidthGBps);
  gpu->l2_cache_bytes = reader.Int("l2_cache_bytes", kGpuMemoryBytes);
  bool has_peaks = reader.Has("peak_tflops");
  ReadPeaks(reader.Object("peak_tflops"), has_peaks, gpu);
  gpu->nvlink_bandwidth_GBps = NonNegativeNumber(reader, "nvlink_bandwidth_GBps", kBandwidthGBps);
  gpu->compute_capability = reader.OptionalPositiveNumber("compute_capability", {1, 100});
  if (reader.Has("calibration")) {
    gpu->calibration = ReadComputeCalibration(reader.Object("calibration"), json["calibration"]);
  }
  CheckSources(reader, json);
  return reader.Finish(UnknownKeys::kError);
}

void ReadIntraNode(JsonReader& reader, IntraNode* intra) {
  intra->fabric = ReadEnum(reader, "fabric", kFabricNames, IntraNodeFabric::kNvSwitch);
  intra->bandwidth_GBps = reader.PositiveNumber("bandwidth_GBps", kBandwidthGBps);
  intra->latency_us = NonNegativeNumber(reader, "latency_us", kLatencyUs);
  intra->nvlink_sharp = reader.OptionalBool("nvlink_sharp").value_or(false);
  intra->nccl_channels = reader.OptionalInt("nccl_channels", kNcclChannels);
  intra->nvls_channels = reader.OptionalInt("nvls_channels", kNcclChannels);
  if (intra->nvls_channels && !intra->nvlink_sharp) {
    reader.AddError("nvls_channels",
                    "is set but nvlink_sharp is not true; NCCL runs NVLS only on NVSwitches with "
                    "NVLink SHARP: remove the key or set nvlink_sharp true");
  }
  if (intra->nvlink_sharp && intra->fabric != IntraNodeFabric::kNvSwitch) {
    reader.AddError("nvlink_sharp",
                    "is true but the fabric is not \"nvswitch\"; NVLink SHARP "
                    "reductions happen in NVSwitches: remove the key or set it false");
  }
}

// A fraction in (0, 1] if present; a measured bandwidth above the nominal one means the nominal
// one in this file is wrong, which the fix must address rather than the fraction.
std::optional<double> CalibrationFraction(JsonReader& reader, std::string_view key) {
  std::optional<double> value = reader.OptionalPositiveNumber(key, {1e-3, 1e15});
  if (value && *value > 1) {
    reader.AddError(key, "is " + Show(*value) +
                             "; a fraction of the nominal bandwidth must be at "
                             "most 1 (if measurements exceed the nominal bandwidth, correct the "
                             "bandwidth keys of this file)");
    return std::nullopt;
  }
  return value;
}

void ReadCommCalibration(JsonReader& reader, CommCalibration* c) {
  c->intra_node_busbw_fraction = CalibrationFraction(reader, "intra_node_busbw_fraction");
  c->inter_node_busbw_fraction = CalibrationFraction(reader, "inter_node_busbw_fraction");
  c->nvls_busbw_fraction = CalibrationFraction(reader, "nvls_busbw_fraction");
  c->intra_node_extra_latency_us =
      reader.OptionalNonNegativeNumber("intra_node_extra_latency_us", kLatencyUs);
  c->inter_node_extra_latency_us =
      reader.OptionalNonNegativeNumber("inter_node_extra_latency_us", kLatencyUs);
  c->source = NonEmptyString(reader, "source");
  c->fitted_on = reader.OptionalStringList("fitted_on");
  bool any = reader.Has("intra_node_busbw_fraction") || reader.Has("inter_node_busbw_fraction") ||
             reader.Has("nvls_busbw_fraction") || reader.Has("intra_node_extra_latency_us") ||
             reader.Has("inter_node_extra_latency_us");
  if (!any) {
    reader.AddError("",
                    "has no value; give at least one of intra_node_busbw_fraction, "
                    "inter_node_busbw_fraction, nvls_busbw_fraction, "
                    "intra_node_extra_latency_us, inter_node_extra_latency_us, or remove it");
  }
}

void ReadInterNode(JsonReader& reader, InterNode* inter) {
  inter->nics_per_node = reader.Int("nics_per_node", kNicsPerNode);
  inter->nic_bandwidth_Gbps = reader.PositiveNumber("nic_bandwidth_Gbps", kBandwidthGbps);
  inter->latency_us = NonNegativeNumber(reader, "latency_us", kLatencyUs);
  inter->topology = ReadEnum(reader, "topology", kTopologyNames, NetworkTopology::kFatTree);
  inter->nccl_channels = reader.OptionalInt("nccl_channels", kNcclChannels);
  if (!reader.Has("oversubscription")) {
    reader.Allow("oversubscription");
    reader.AddError("oversubscription",
                    "is missing; add \"oversubscription\": 1 for full bisection bandwidth "
                    "(2 when the uplinks carry half of what the nodes can send, and so on)");
    return;
  }
  std::optional<double> ratio = reader.OptionalNonNegativeNumber("oversubscription", {0, 1e3});
  if (ratio && *ratio < 1) {
    reader.AddError("oversubscription",
                    "is " + Show(*ratio) + "; it must be >= 1 (1 = full bisection bandwidth)");
  } else if (ratio) {
    inter->oversubscription = *ratio;
  }
}

void ReadHost(JsonReader& reader, Host* host) {
  host->pcie_bandwidth_GBps = reader.PositiveNumber("pcie_bandwidth_GBps", kBandwidthGBps);
  host->cpu_memory_bytes = reader.Int("cpu_memory_bytes", kHostMemoryBytes);
  host->memory_bandwidth_GBps =
      reader.OptionalPositiveNumber("memory_bandwidth_GBps", kBandwidthGBps);
}

// An NVLink domain is whole nodes joined by NVLink switches: NVL72's 18 trays of 4 GPUs reach
// each other through its NVLink Switch trays (NVIDIA GB200 NVL72 product page), so a domain
// larger than a node needs the "nvswitch" fabric and a whole number of nodes.
void CheckNvlinkDomain(JsonReader& reader, const ClusterSpec& spec) {
  if (!spec.nvlink_domain_gpus || spec.gpus_per_node < 1) return;
  const int64_t domain = *spec.nvlink_domain_gpus;
  const std::string per_node = std::to_string(spec.gpus_per_node);
  if (domain % spec.gpus_per_node != 0) {
    reader.AddError("nvlink_domain_gpus",
                    "is " + std::to_string(domain) + ", not a multiple of gpus_per_node (" +
                        per_node + "); an NVLink domain is whole nodes: use " + per_node +
                        " times the nodes "
                        "one NVLink switch system joins (72 for GB200 NVL72's 18 trays of 4), or "
                        "remove the key for a domain of one node");
  } else if (domain > spec.gpus_per_node && spec.intra_node.fabric != IntraNodeFabric::kNvSwitch) {
    reader.AddError("nvlink_domain_gpus",
                    "is " + std::to_string(domain) + ", more than one node of " + per_node +
                        ", but intra_node.fabric is not \"nvswitch\"; only NVLink switches join "
                        "nodes into one domain: remove the key or set the fabric to \"nvswitch\"");
  }
}

// A GPU file a cluster file names: the key that names it ("gpu", "node_groups[1].gpu"), the path
// as written, and with node groups the group's node count.
struct GpuFileRef {
  std::string key;
  std::string path;
  int64_t nodes = 0;
};

// The file's "node_groups": a non-empty array of {"gpu", "nodes"} objects. Problems of the array
// go to |reader|; those of its entries, read with readers of their own, to |entries|.
std::vector<GpuFileRef> ReadNodeGroups(const nlohmann::json& json, JsonReader& reader,
                                       Status* entries) {
  reader.Allow("node_groups");
  const nlohmann::json& groups = json.at("node_groups");
  const std::string shape =
      "a non-empty array of {\"gpu\": \"../gpus/<file>.json\", \"nodes\": <count>}, one per "
      "GPU type in rank order (for nodes of one GPU type, give \"gpu\" and \"nodes\" instead)";
  if (!groups.is_array() || groups.empty()) {
    reader.AddError("node_groups", (groups.is_array() ? "is empty" : "is not an array") +
                                       std::string("; it must be ") + shape);
    return {};
  }
  if (groups.size() > kMaxNodeGroups) {
    reader.AddError("node_groups", "has " + std::to_string(groups.size()) + " entries, more than " +
                                       std::to_string(kMaxNodeGroups) +
                                       "; use one per GPU type (a group may hold many nodes)");
    return {};
  }
  std::vector<GpuFileRef> refs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string key = "node_groups[" + std::to_string(i) + "]";
    if (!groups[i].is_object()) {
      reader.AddError(key,
                      "is not an object; each entry must be {\"gpu\": "
                      "\"../gpus/<file>.json\", \"nodes\": <count>}");
      continue;
    }
    JsonReader entry(groups[i], reader.file(), key);
    GpuFileRef ref{key + ".gpu", NonEmptyString(entry, "gpu"), entry.Int("nodes", kNodes)};
    Status status = entry.Finish(UnknownKeys::kError);
    *entries = Join(*entries, status);
    if (status.ok()) refs.push_back(std::move(ref));
  }
  return refs;
}

// The GPU keys: "node_groups", or "gpu" (with the optional "nodes", which the caller reads);
// never both ways at once.
std::vector<GpuFileRef> ReadGpuKeys(const nlohmann::json& json, JsonReader& reader,
                                    Status* entries) {
  if (!reader.Has("node_groups")) {
    std::string path = NonEmptyString(reader, "gpu");
    if (path.empty()) return {};
    return {GpuFileRef{"gpu", std::move(path)}};
  }
  for (std::string_view key : {"gpu", "nodes"}) {
    if (!reader.Has(key)) continue;
    reader.Allow(key);
    reader.AddError(key,
                    "is given with \"node_groups\", which names each group's GPU and node "
                    "count itself; remove \"" +
                        std::string(key) +
                        "\", or remove \"node_groups\" for a cluster of one GPU type");
  }
  return ReadNodeGroups(json, reader, entries);
}

// Reads every key of a cluster file but the GPU files' contents; returns the GPU files it names.
// Problems of node-group entries go to |entries|, the others to |reader|.
std::vector<GpuFileRef> ParseClusterKeys(const nlohmann::json& json, JsonReader& reader,
                                         ClusterSpec* spec, Status* entries) {
  CheckSchema(reader, kClusterSchema);
  spec->name = NonEmptyString(reader, "name");
  std::vector<GpuFileRef> gpu_refs = ReadGpuKeys(json, reader, entries);
  spec->gpus_per_node = reader.Int("gpus_per_node", kGpusPerNode);
  spec->nvlink_domain_gpus = reader.OptionalInt("nvlink_domain_gpus", kGpusPerNode);
  if (!reader.Has("node_groups")) spec->nodes = reader.OptionalInt("nodes", kNodes);
  ReadIntraNode(reader.Object("intra_node"), &spec->intra_node);
  CheckNvlinkDomain(reader, *spec);
  ReadInterNode(reader.Object("inter_node"), &spec->inter_node);
  ReadHost(reader.Object("host"), &spec->host);
  if (reader.Has("calibration"))
    ReadCommCalibration(reader.Object("calibration"), &spec->calibration);
  spec->price_per_gpu_hour_usd =
      reader.OptionalPositiveNumber("price_per_gpu_hour_usd", kPricePerGpuHourUsd);
  if (reader.Has("reliability")) spec->reliability = ReadReliability(reader.Object("reliability"));
  CheckSources(reader, json);
  return gpu_refs;
}

// Loads the GPU file that |cluster_path| names as |gpu_ref|, relative to the cluster's folder.
Status LoadClusterGpu(const std::string& cluster_path, const GpuFileRef& gpu_ref, GpuSpec* gpu) {
  namespace fs = std::filesystem;
  fs::path resolved = PathBeside(cluster_path, gpu_ref.path);
  std::error_code ignored;
  const std::string& key = gpu_ref.key;
  if (!fs::is_regular_file(resolved, ignored)) {
    return Status::NotFound(cluster_path + ": " + key + ": \"" + gpu_ref.path + "\" resolves to " +
                            resolved.string() +
                            ", which is not a file; the path is relative to the cluster file's "
                            "folder (shipped GPUs are hardware/gpus/*.json, e.g. "
                            "\"../gpus/h100-sxm5-80gb.json\" from hardware/clusters/)");
  }
  Result<GpuSpec> loaded = LoadGpuSpec(resolved.string());
  if (loaded.ok()) {
    *gpu = *loaded;
    return Status::Ok();
  }
  std::string message = cluster_path + ": " + key + ": the GPU file " + resolved.string() +
                        " has errors:\n" + loaded.status().message();
  if (loaded.status().code() == Status::Code::kNotFound) return Status::NotFound(message);
  return Status::InvalidArgument(message);
}

// Loads every GPU file of |refs| into |spec|: its one GPU, or its node groups (|gpu| the first's,
// |nodes| their sum). Every missing or bad file is reported, not only the first.
Status LoadClusterGpus(const std::string& path, const std::vector<GpuFileRef>& refs,
                       ClusterSpec* spec) {
  Status status;
  std::vector<NodeGroup> groups;
  for (const GpuFileRef& ref : refs) {
    NodeGroup group{GpuSpec(), ref.nodes};
    status = Join(status, LoadClusterGpu(path, ref, &group.gpu));
    groups.push_back(std::move(group));
  }
  if (!status.ok() || groups.empty()) return status;
  spec->gpu = groups.front().gpu;
  if (refs.front().key == "gpu") return status;
  int64_t nodes = 0;
  for (const NodeGroup& group : groups) nodes += group.nodes;
  if (nodes > kNodes.max) {
    return Status::InvalidArgument(path + ": node_groups: the groups hold " +
                                   std::to_string(nodes) + " nodes, more than " +
                                   std::to_string(kNodes.max) + "; use realistic node counts");
  }
  spec->nodes = nodes;
  spec->node_groups = std::move(groups);
  return status;
}

// Rules between the cluster and its GPU. With node groups, the NVSwitch is the fastest group's:
// each group's collectives run at the lesser of it and the group's own NVLink (ClusterSpec).
Status CheckClusterAgainstGpu(const ClusterSpec& spec) {
  const IntraNode& intra = spec.intra_node;
  if (intra.fabric != IntraNodeFabric::kNvSwitch) return Status::Ok();
  const GpuSpec* fastest = &spec.gpu;
  for (const NodeGroup& group : spec.node_groups) {
    if (group.gpu.nvlink_bandwidth_GBps > fastest->nvlink_bandwidth_GBps) fastest = &group.gpu;
  }
  if (intra.bandwidth_GBps <= fastest->nvlink_bandwidth_GBps) return Status::Ok();
  return Status::InvalidArgument(
      spec.file + ": intra_node.bandwidth_GBps (" + Show(intra.bandwidth_GBps) +
      ") exceeds the NVLink bandwidth of " + fastest->file + " (" +
      Show(fastest->nvlink_bandwidth_GBps) +
      " GB/s per direction); a GPU cannot reach the NVSwitch faster than its own links: lower "
      "bandwidth_GBps, or use fabric \"pcie\" for a GPU without NVLink");
}

}  // namespace

std::optional<double> GpuSpec::PeakTflops(Dtype dtype) const { return PeakSlot(*this, dtype); }

int64_t ClusterSpec::NvlinkDomainGpus() const { return nvlink_domain_gpus.value_or(gpus_per_node); }

std::vector<int64_t> ClusterSpec::TensorParallelDegrees() const {
  const int64_t domain = NvlinkDomainGpus();
  std::vector<int64_t> degrees;
  for (int64_t tp = 1; tp <= domain; ++tp) {
    if (domain % tp == 0) degrees.push_back(tp);
  }
  return degrees;
}

std::optional<int64_t> ClusterSpec::TotalGpus() const {
  if (!nodes) return std::nullopt;
  return (CheckedInt(gpus_per_node) * CheckedInt(*nodes)).get();
}

int64_t ClusterSpec::NodeGroupOfRank(int64_t rank) const {
  int64_t end = 0;
  for (size_t g = 0; g < node_groups.size(); ++g) {
    end += node_groups[g].nodes * gpus_per_node;
    if (rank < end) return static_cast<int64_t>(g);
  }
  return node_groups.empty() ? 0 : static_cast<int64_t>(node_groups.size()) - 1;
}

const GpuSpec& ClusterSpec::GpuOfRank(int64_t rank) const {
  if (node_groups.empty()) return gpu;
  return node_groups[static_cast<size_t>(NodeGroupOfRank(rank))].gpu;
}

std::string ClusterRef(const ClusterSpec& cluster) {
  if (!cluster.file.empty()) return cluster.file;
  return cluster.name.empty() ? std::string("the cluster") : cluster.name;
}

std::string GpuRef(const GpuSpec& gpu) {
  const std::string name = gpu.name.empty() ? std::string("the GPU") : gpu.name;
  return gpu.file.empty() ? name : name + " (" + gpu.file + ")";
}

std::string GpuNames(const ClusterSpec& cluster) {
  if (cluster.node_groups.empty()) return cluster.gpu.name;
  std::string names;
  for (const NodeGroup& group : cluster.node_groups) {
    names += (names.empty() ? "" : " + ") + group.gpu.name;
  }
  return names;
}

Result<GpuSpec> LoadGpuSpec(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(nlohmann::json json,
                        ReadHardwareFile(path, "hardware/gpus/h100-sxm5-80gb.json"));
  GpuSpec gpu;
  LOOM_RETURN_IF_ERROR(ParseGpu(json, path, &gpu));
  return gpu;
}

Result<ClusterSpec> LoadClusterSpec(const std::string& path, std::optional<int64_t> nodes) {
  if (nodes && (*nodes < 1 || *nodes > kNodes.max)) {
    return Status::InvalidArgument(path + ": the node count given to run on (--nodes) is " +
                                   std::to_string(*nodes) + "; it must be between 1 and " +
                                   std::to_string(kNodes.max) +
                                   " (or leave it out to use the file's \"nodes\")");
  }
  LOOM_ASSIGN_OR_RETURN(nlohmann::json json,
                        ReadHardwareFile(path, "hardware/clusters/dgx-h100.json"));
  ClusterSpec spec;
  spec.file = path;
  JsonReader reader(json, path);
  Status entries;
  const std::vector<GpuFileRef> gpu_refs = ParseClusterKeys(json, reader, &spec, &entries);
  Status own = Join(reader.Finish(UnknownKeys::kError), entries);
  Status gpu = LoadClusterGpus(path, gpu_refs, &spec);
  LOOM_RETURN_IF_ERROR(Join(own, gpu));
  LOOM_RETURN_IF_ERROR(CheckClusterAgainstGpu(spec));
  if (nodes && !spec.node_groups.empty() && *nodes > *spec.nodes) {
    return Status::InvalidArgument(
        path + ": the node count given to run on (--nodes) is " + std::to_string(*nodes) +
        ", more than the " + std::to_string(*spec.nodes) +
        " nodes its node_groups hold; use --nodes " + std::to_string(*spec.nodes) +
        " or fewer (the ranks fill the groups in the file's order), or add nodes to a group");
  }
  if (nodes) spec.nodes = nodes;
  if (spec.nodes && !spec.TotalGpus()) {
    return Status::InvalidArgument(path +
                                   ": gpus_per_node * nodes does not fit in 64 bits; "
                                   "use a realistic node count");
  }
  return spec;
}

}  // namespace loom
