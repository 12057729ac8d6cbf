#include "cost/profile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/file_io.h"
#include "core/formatted.h"
#include "core/json_reader.h"

namespace loom {
namespace {

constexpr std::string_view kProfileSchema = "loom.profile/2";
// The first schema, without hosts, host samples, collectives and failures: read as it is.
constexpr std::string_view kProfileSchemaV1 = "loom.profile/1";
constexpr OpKind kSampleKinds[] = {OpKind::kGemm, OpKind::kAttention, OpKind::kMemoryBound};

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// ISO 8601: "YYYY-MM-DD", optionally followed by 'T' or ' ' and a time.
bool IsIsoDate(const std::string& s) {
  if (s.size() < 10 || s[4] != '-' || s[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 &&
         (s.size() == 10 || s[10] == 'T' || s[10] == ' ');
}

std::string RequiredText(JsonReader& r, std::string_view key) {
  const bool present = r.Has(key);
  std::string value = r.String(key);
  if (present && value.empty()) r.AddError(key, "is empty; give it a value");
  return value;
}

// The optional percentiles of a sample; both or neither, bracketing the median.
void ReadPercentiles(JsonReader& r, double median_us, std::optional<double>* p10_us,
                     std::optional<double>* p90_us) {
  *p10_us = r.OptionalPositiveNumber("p10_us");
  *p90_us = r.OptionalPositiveNumber("p90_us");
  if (r.Has("p10_us") != r.Has("p90_us")) {
    r.AddError(r.Has("p10_us") ? "p90_us" : "p10_us",
               "is missing; give p10_us and p90_us together, or neither");
  } else if (*p10_us && *p90_us && !(**p10_us <= median_us && median_us <= **p90_us)) {
    r.AddError("median_us",
               "is not between p10_us and p90_us; percentiles must satisfy p10 <= median <= p90");
  }
}

Status ParseSample(const nlohmann::json& json, const std::string& file, size_t index,
                   ProfileSample* sample) {
  const std::string path = "samples[" + std::to_string(index) + "]";
  if (!json.is_object()) {
    return Status::InvalidArgument(file + ": " + path + ": must be an object, got " +
                                   json.type_name());
  }
  JsonReader r(json, file, path);
  std::vector<std::string> kinds;
  for (OpKind k : kSampleKinds) kinds.emplace_back(kOpKindNames.Name(k));
  std::optional<std::string> kernel = ReadChoice(r, "kernel", kinds);
  if (kernel) sample->shape = ReadKernelShape(*kOpKindNames.Parse(*kernel), r);
  const MemoryShape* memory = std::get_if<MemoryShape>(&sample->shape);
  if (kernel == "memory" && memory->bytes_read == 0 && memory->bytes_written == 0 &&
      r.Has("bytes_read") && r.Has("bytes_written")) {
    r.AddError("bytes_read", "and bytes_written are both 0; a memory-bound sample must move bytes");
  }
  sample->median_us = r.PositiveNumber("median_us");
  ReadPercentiles(r, sample->median_us, &sample->p10_us, &sample->p90_us);
  sample->repeats = r.Int("repeats");
  sample->label = r.OptionalString("label").value_or("");
  // Profiles written before samples carried "access" (the committed 2026-11-27 H100 run) name the
  // probe's RMSNorm by its label (probe/bench.h, kMemoryKernelNames) only.
  if (MemoryShape* m = std::get_if<MemoryShape>(&sample->shape);
      m != nullptr && !r.Has("access") && sample->label == kProbeRowReductionLabel) {
    m->access = MemoryAccess::kRowReduction;
  }
  // Every attention sample loom probe writes is cuDNN's fused SDPA (probe/cuda/sdpa_bench.h), the
  // only attention kernel it runs; profiles written before samples carried "family" say so by
  // leaving it out.
  if (AttentionShape* a = std::get_if<AttentionShape>(&sample->shape);
      a != nullptr && !r.Has("family")) {
    a->family = AttentionFamily::kCudnn;
  }
  sample->where = file + ": " + path;
  // Without a known kernel the shape keys cannot be checked; the kernel error says enough.
  if (!kernel) return r.Finish(UnknownKeys::kRejectTypos);
  return r.Finish(UnknownKeys::kError);
}

Status ParseHostSample(const nlohmann::json& json, const std::string& file, const std::string& path,
                       HostSample* sample) {
  JsonReader r(json, file, path);
  std::optional<std::string> measure = ReadChoice(r, "measure", kHostMeasureNames.Names());
  if (measure) sample->measure = *kHostMeasureNames.Parse(*measure);
  sample->bytes = r.Int("bytes", {0, INT64_MAX});
  if (measure && (sample->measure == HostMeasure::kLaunch) != (sample->bytes == 0)) {
    r.AddError("bytes", sample->measure == HostMeasure::kLaunch
                            ? "must be 0 for a launch (an empty kernel)"
                            : "must be >= 1 for a copy");
  }
  sample->median_us = r.PositiveNumber("median_us");
  ReadPercentiles(r, sample->median_us, &sample->p10_us, &sample->p90_us);
  sample->repeats = r.Int("repeats");
  sample->where = file + ": " + path;
  return r.Finish(UnknownKeys::kError);
}

CollectiveTiming ReadCollectiveTiming(JsonReader& parent, std::string_view key) {
  JsonReader& r = parent.Object(key);
  CollectiveTiming t;
  t.time_us = r.PositiveNumber("time_us");
  t.algbw_GBps = r.OptionalNonNegativeNumber("algbw_GBps").value_or(0);
  t.busbw_GBps = r.OptionalNonNegativeNumber("busbw_GBps").value_or(0);
  if (!r.Has("algbw_GBps"))
    r.AddError("algbw_GBps", "is missing; add the algorithm bandwidth size / time in GB/s");
  if (!r.Has("busbw_GBps"))
    r.AddError("busbw_GBps", "is missing; add nccl-tests' bus bandwidth in GB/s");
  return t;
}

Status ParseCollectiveSample(const nlohmann::json& json, const std::string& file,
                             const std::string& path, CollectiveSample* sample) {
  JsonReader r(json, file, path);
  std::optional<std::string> collective =
      ReadChoice(r, "collective", kProfiledCollectiveNames.Names());
  if (collective) sample->collective = *kProfiledCollectiveNames.Parse(*collective);
  std::optional<std::string> group = ReadChoice(r, "group", kProbeGroupNames.Names());
  if (group) sample->group = *kProbeGroupNames.Parse(*group);
  sample->ranks = r.Int("ranks");
  sample->nodes = r.Int("nodes");
  if (sample->nodes > sample->ranks)
    r.AddError("nodes", "is more than ranks; every node holds at least one rank");
  sample->size_bytes = r.Int("size_bytes");
  sample->count = r.Int("count");
  sample->type = RequiredText(r, "type");
  sample->redop = RequiredText(r, "redop");
  sample->out_of_place = ReadCollectiveTiming(r, "out_of_place");
  sample->in_place = ReadCollectiveTiming(r, "in_place");
  sample->repeats = r.Int("repeats");
  sample->where = file + ": " + path;
  return r.Finish(UnknownKeys::kError);
}

Status ParseFailure(const nlohmann::json& json, const std::string& file, const std::string& path,
                    ProbeFailure* failure) {
  JsonReader r(json, file, path);
  failure->point = RequiredText(r, "point");
  failure->error = RequiredText(r, "error");
  return r.Finish(UnknownKeys::kError);
}

// Parses the optional array |key| of |json| with |parse|, appending to |out| and to |errors|.
template <typename Entry, typename Parse>
void ParseArray(const nlohmann::json& json, JsonReader& r, std::string_view key,
                const std::string& file, Parse parse, std::vector<Entry>* out,
                std::vector<std::string>* errors) {
  r.Allow(key);
  auto array = json.find(std::string(key));
  if (array == json.end()) return;
  if (!array->is_array()) {
    r.AddError(key, std::string("must be an array of objects, got ") + array->type_name());
    return;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string path = std::string(key) + "[" + std::to_string(i) + "]";
    if (!(*array)[i].is_object()) {
      errors->push_back(file + ": " + path + ": must be an object, got " + (*array)[i].type_name());
      continue;
    }
    Entry entry;
    Status status = parse((*array)[i], file, path, &entry);
    if (status.ok()) {
      out->push_back(std::move(entry));
    } else {
      errors->push_back(status.message());
    }
  }
}

void ParseHeader(const nlohmann::json& json, JsonReader& r, Profile* p) {
  if (!r.Has("schema")) {
    r.Allow("schema");
    r.AddError("schema", "is missing; add \"schema\": \"loom.profile/2\"");
  } else if (std::optional<std::string> schema = r.OptionalString("schema");
             schema && *schema != kProfileSchema && *schema != kProfileSchemaV1) {
    r.AddError("schema", "is " + Quoted(*schema) +
                             " but this file is read as a profile (\"loom.profile/2\" or "
                             "\"loom.profile/1\"); pass a profile written by loom probe");
  }
  r.OptionalString(
      "loom_version");  // the writer's, for people; absent from profiles loom 0.1 wrote before it
  JsonReader& device = r.Object("device");
  p->device.name = RequiredText(device, "name");
  p->device.sm_count = device.OptionalInt("sm_count");
  p->device.memory_bytes = device.OptionalInt("memory_bytes");
  p->device.l2_bytes = device.OptionalInt("l2_bytes");
  p->device.compute_capability = device.OptionalString("compute_capability");
  p->device.sm_clock_mhz = device.OptionalInt("sm_clock_mhz");
  p->device.memory_clock_mhz = device.OptionalInt("memory_clock_mhz");
  p->driver_version = RequiredText(r, "driver_version");
  p->cuda_version = RequiredText(r, "cuda_version");
  p->date = RequiredText(r, "date");
  if (!p->date.empty() && !IsIsoDate(p->date)) {
    r.AddError("date", "is " + Quoted(p->date) +
                           "; write an ISO 8601 date such as \"2025-03-01\" or "
                           "\"2025-03-01T10:00:00Z\"");
  }
  // Any library names are allowed, so the object is checked here rather than by a child reader.
  r.Allow("library_versions");
  auto libraries = json.find("library_versions");
  if (libraries == json.end()) {
    r.AddError("library_versions",
               "is missing; add \"library_versions\": {\"cublaslt\": \"...\", ...} ({} if none)");
  } else if (!libraries->is_object()) {
    r.AddError("library_versions", std::string("must be an object of name: version strings, got ") +
                                       libraries->type_name());
  } else {
    for (const auto& [name, version] : libraries->items()) {
      if (version.is_string()) {
        p->library_versions.emplace_back(name, version.get<std::string>());
      } else {
        r.AddError("library_versions." + name,
                   std::string("must be a version string, got ") + version.type_name());
      }
    }
  }
  r.Allow("hosts");
  if (auto hosts = json.find("hosts"); hosts != json.end()) {
    const bool strings =
        hosts->is_array() && std::all_of(hosts->begin(), hosts->end(),
                                         [](const nlohmann::json& h) { return h.is_string(); });
    if (strings) {
      for (const nlohmann::json& h : *hosts) p->hosts.push_back(h.get<std::string>());
    } else {
      r.AddError("hosts", "must be an array of host names, one per rank");
    }
  }
}

}  // namespace

OpKind ProfileSample::Kind() const { return kSampleKinds[shape.index()]; }

Result<Profile> ParseProfile(const nlohmann::json& json, const std::string& file) {
  Profile profile;
  profile.file = file;
  JsonReader r(json, file);
  ParseHeader(json, r, &profile);
  r.Allow("samples");
  std::vector<std::string> errors;
  auto samples = json.find("samples");
  if (samples == json.end()) {
    r.AddError("samples", "is missing; add \"samples\": [ ... ] (loom probe writes them)");
  } else if (!samples->is_array()) {
    r.AddError("samples",
               std::string("must be an array of sample objects, got ") + samples->type_name());
  } else {
    for (size_t i = 0; i < samples->size(); ++i) {
      ProfileSample sample;
      Status status = ParseSample((*samples)[i], file, i, &sample);
      if (status.ok()) {
        profile.samples.push_back(std::move(sample));
      } else {
        errors.push_back(status.message());
      }
    }
  }
  ParseArray(json, r, "host_samples", file, ParseHostSample, &profile.host_samples, &errors);
  ParseArray(json, r, "collectives", file, ParseCollectiveSample, &profile.collectives, &errors);
  ParseArray(json, r, "failures", file, ParseFailure, &profile.failures, &errors);
  Status header = r.Finish(UnknownKeys::kError);
  if (!header.ok()) errors.insert(errors.begin(), header.message());
  if (errors.empty()) return profile;
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(message);
}

Result<Profile> ReadProfile(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(
      nlohmann::json json,
      ReadJsonObjectFile(path, "pass a profile written by loom probe (schema loom.profile/2)"));
  return ParseProfile(json, path);
}

nlohmann::ordered_json ProfileSampleJson(const ProfileSample& s) {
  nlohmann::ordered_json j;
  j["kernel"] = kOpKindNames.Name(s.Kind());
  AddKernelShapeFields(s.shape, j);
  j["median_us"] = s.median_us;
  if (s.p10_us && s.p90_us) {
    j["p10_us"] = *s.p10_us;
    j["p90_us"] = *s.p90_us;
  }
  j["repeats"] = s.repeats;
  if (!s.label.empty()) j["label"] = s.label;
  return j;
}

nlohmann::ordered_json HostSampleJson(const HostSample& s) {
  nlohmann::ordered_json j;
  j["measure"] = kHostMeasureNames.Name(s.measure);
  j["bytes"] = s.bytes;
  j["median_us"] = s.median_us;
  if (s.p10_us && s.p90_us) {
    j["p10_us"] = *s.p10_us;
    j["p90_us"] = *s.p90_us;
  }
  j["repeats"] = s.repeats;
  return j;
}

nlohmann::ordered_json CollectiveSampleJson(const CollectiveSample& s) {
  auto timing = [](const CollectiveTiming& t) {
    return nlohmann::ordered_json{
        {"time_us", t.time_us}, {"algbw_GBps", t.algbw_GBps}, {"busbw_GBps", t.busbw_GBps}};
  };
  nlohmann::ordered_json j;
  j["collective"] = kProfiledCollectiveNames.Name(s.collective);
  j["group"] = kProbeGroupNames.Name(s.group);
  j["ranks"] = s.ranks;
  j["nodes"] = s.nodes;
  j["size_bytes"] = s.size_bytes;
  j["count"] = s.count;
  j["type"] = s.type;
  j["redop"] = s.redop;
  j["out_of_place"] = timing(s.out_of_place);
  j["in_place"] = timing(s.in_place);
  j["repeats"] = s.repeats;
  return j;
}

nlohmann::ordered_json ProbeFailureJson(const ProbeFailure& f) {
  return nlohmann::ordered_json{{"point", f.point}, {"error", f.error}};
}

nlohmann::ordered_json ProfileJson(const Profile& p) {
  nlohmann::ordered_json j;
  j["schema"] = kProfileSchema;
  j["loom_version"] = LoomBuildVersion();  // the writer (a resumed profile: the last one)
  nlohmann::ordered_json device = {{"name", p.device.name}};
  if (p.device.sm_count) device["sm_count"] = *p.device.sm_count;
  if (p.device.memory_bytes) device["memory_bytes"] = *p.device.memory_bytes;
  if (p.device.l2_bytes) device["l2_bytes"] = *p.device.l2_bytes;
  if (p.device.compute_capability) device["compute_capability"] = *p.device.compute_capability;
  if (p.device.sm_clock_mhz) device["sm_clock_mhz"] = *p.device.sm_clock_mhz;
  if (p.device.memory_clock_mhz) device["memory_clock_mhz"] = *p.device.memory_clock_mhz;
  j["device"] = device;
  j["driver_version"] = p.driver_version;
  j["cuda_version"] = p.cuda_version;
  j["library_versions"] = nlohmann::ordered_json::object();
  for (const auto& [name, version] : p.library_versions) j["library_versions"][name] = version;
  j["date"] = p.date;
  if (!p.hosts.empty()) j["hosts"] = p.hosts;
  j["samples"] = nlohmann::ordered_json::array();
  for (const ProfileSample& s : p.samples) j["samples"].push_back(ProfileSampleJson(s));
  j["host_samples"] = nlohmann::ordered_json::array();
  for (const HostSample& s : p.host_samples) j["host_samples"].push_back(HostSampleJson(s));
  j["collectives"] = nlohmann::ordered_json::array();
  for (const CollectiveSample& s : p.collectives)
    j["collectives"].push_back(CollectiveSampleJson(s));
  j["failures"] = nlohmann::ordered_json::array();
  for (const ProbeFailure& f : p.failures) j["failures"].push_back(ProbeFailureJson(f));
  return j;
}

namespace {

std::string Compact(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// "  \"key\": [\n    {...},\n    {...}\n  ]": one entry per line.
template <typename Entry, typename ToJson>
std::string ArrayText(std::string_view key, const std::vector<Entry>& entries, ToJson to_json) {
  std::string text = "  \"" + std::string(key) + "\": [";
  for (size_t i = 0; i < entries.size(); ++i)
    text += (i == 0 ? "\n    " : ",\n    ") + Compact(to_json(entries[i]));
  return text + (entries.empty() ? "]" : "\n  ]");
}

}  // namespace

std::string ProfileText(const Profile& profile) {
  nlohmann::ordered_json head = ProfileJson(profile);
  for (const char* key : {"samples", "host_samples", "collectives", "failures"}) head.erase(key);
  std::string text = head.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text.resize(text.size() - 2);  // the closing "\n}"
  text += ",\n" + ArrayText("samples", profile.samples, ProfileSampleJson);
  text += ",\n" + ArrayText("host_samples", profile.host_samples, HostSampleJson);
  text += ",\n" + ArrayText("collectives", profile.collectives, CollectiveSampleJson);
  text += ",\n" + ArrayText("failures", profile.failures, ProbeFailureJson);
  return text + "\n}\n";
}

Status ProfileWriter::Open(const std::string& path, const Profile& header) {
  path_ = path;
  profile_ = header;
  return Write();
}

Status ProfileWriter::Append(const ProfileSample& sample) {
  profile_.samples.push_back(sample);
  return Write();
}

Status ProfileWriter::Append(const HostSample& sample) {
  profile_.host_samples.push_back(sample);
  return Write();
}

Status ProfileWriter::Append(const CollectiveSample& sample) {
  profile_.collectives.push_back(sample);
  return Write();
}

Status ProfileWriter::Append(const ProbeFailure& failure) {
  profile_.failures.push_back(failure);
  return Write();
}

Status ProfileWriter::Write() {
  // A SIGINT or SIGTERM meanwhile ends the probe once the profile is in place
  // (WriteFileAtomically): every point finished is kept.
  return WriteFileAtomically(path_, ProfileText(profile_),
                             "pass another --output; what was measured before is kept in " + path_);
}

std::string ProbePointKey(const KernelShape& shape, const std::string& label) {
  return label.empty() ? DescribeShape(shape) : DescribeShape(shape) + " [" + label + "]";
}

std::string ProbePointKey(HostMeasure measure, int64_t bytes) {
  const std::string name(kHostMeasureNames.Name(measure));
  return measure == HostMeasure::kLaunch ? name : name + " " + WholeBytes(bytes);
}

std::string ProbePointKey(ProfiledCollective collective, ProbeGroup group, int64_t ranks,
                          int64_t size_bytes) {
  return std::string(kProfiledCollectiveNames.Name(collective)) + " " +
         std::string(kProbeGroupNames.Name(group)) + " " + std::to_string(ranks) + " ranks " +
         WholeBytes(size_bytes);
}

std::vector<std::string> RecordedPointKeys(const Profile& profile) {
  std::vector<std::string> keys;
  for (const ProfileSample& s : profile.samples) keys.push_back(ProbePointKey(s.shape, s.label));
  for (const HostSample& s : profile.host_samples)
    keys.push_back(ProbePointKey(s.measure, s.bytes));
  for (const CollectiveSample& s : profile.collectives) {
    keys.push_back(ProbePointKey(s.collective, s.group, s.ranks, s.size_bytes));
  }
  for (const ProbeFailure& f : profile.failures) keys.push_back(f.point);
  return keys;
}

namespace {

std::string NormalisedGpuName(std::string name, bool drop_note) {
  if (drop_note && !name.empty() && name.back() == ')') {
    const size_t open = name.rfind(" (");
    if (open != std::string::npos) name.resize(open);
  }
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const size_t first = name.find_first_not_of(' ');
  name =
      first == std::string::npos ? "" : name.substr(first, name.find_last_not_of(' ') - first + 1);
  if (name.rfind("nvidia ", 0) == 0) name = name.substr(7);
  return name;
}

}  // namespace

bool DeviceMatchesGpu(const std::string& device_name, const std::string& gpu_name) {
  return NormalisedGpuName(device_name, false) == NormalisedGpuName(gpu_name, true);
}

Status CheckProfiledGpu(const Profile& profile, const GpuSpec& gpu) {
  if (!DeviceMatchesGpu(profile.device.name, gpu.name)) {
    return Status::InvalidArgument(profile.file + ": device.name " + Quoted(profile.device.name) +
                                   " is not the GPU of " + gpu.file + " (" + Quoted(gpu.name) +
                                   "); fit with the GPU file of the profiled device");
  }
  if (profile.device.sm_count && *profile.device.sm_count != gpu.sm_count) {
    return Status::InvalidArgument(
        profile.file + ": device.sm_count is " + std::to_string(*profile.device.sm_count) +
        " but " + gpu.file + " has sm_count " + std::to_string(gpu.sm_count) +
        "; fit with the GPU file of the profiled device (a MIG slice or a different "
        "SKU has other SM counts)");
  }
  return Status::Ok();
}

}  // namespace loom
