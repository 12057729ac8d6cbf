#include "cost/profile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>

#include "core/json_reader.h"

namespace loom {
namespace {

constexpr std::string_view kProfileSchema = "loom.profile/1";
// What follows the last sample; ProfileWriter overwrites it with each new sample.
constexpr std::string_view kTail = "\n  ]\n}\n";
constexpr OpKind kSampleKinds[] = {OpKind::kGemm, OpKind::kAttention, OpKind::kMemoryBound};

// "256 MiB" when whole mebibytes, else "1000 B".
std::string Bytes(int64_t bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  return bytes % kMiB == 0 && bytes > 0 ? std::to_string(bytes / kMiB) + " MiB" : std::to_string(bytes) + " B";
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + Quoted(n);
  return out;
}

// Reads |key| as one of |names|; a near miss gets a "did you mean".
std::optional<std::string> ReadName(JsonReader& r, std::string_view key, const std::vector<std::string>& names) {
  if (!r.Has(key)) {
    r.Allow(key);
    r.AddError(key, "is missing; add " + Quoted(key) + " with one of " + QuotedList(names));
    return std::nullopt;
  }
  std::optional<std::string> value = r.OptionalString(key);
  if (!value) return std::nullopt;
  if (std::find(names.begin(), names.end(), *value) != names.end()) return value;
  std::string closest;
  int best = 3;  // two edits catch a dropped, doubled or swapped letter
  for (const std::string& n : names) {
    const int d = EditDistance(*value, n);
    if (d < best) best = d, closest = n;
  }
  r.AddError(key, "is " + Quoted(*value) + "; " + (closest.empty() ? "" : "did you mean " + Quoted(closest) + "? ") +
                      "it must be one of " + QuotedList(names));
  return std::nullopt;
}

Dtype ReadDtype(JsonReader& r) {
  std::optional<std::string> name = ReadName(r, "dtype", kDtypeNames.Names());
  return name ? *kDtypeNames.Parse(*name) : Dtype::kBf16;
}

bool ReadBool(JsonReader& r, std::string_view key) {
  if (!r.Has(key)) {
    r.Allow(key);
    r.AddError(key, "is missing; add " + Quoted(key) + ": true or false");
    return false;
  }
  return r.OptionalBool(key).value_or(false);
}

GemmShape ReadGemm(JsonReader& r) {
  GemmShape g;
  g.m = r.Int("m");
  g.n = r.Int("n");
  g.k = r.Int("k");
  g.batch = r.Int("batch");
  g.dtype = ReadDtype(r);
  return g;
}

AttentionShape ReadAttention(JsonReader& r) {
  AttentionShape a;
  a.batch = r.Int("batch");
  a.heads = r.Int("heads");
  a.kv_heads = r.Int("kv_heads");
  a.seq_q = r.Int("seq_q");
  a.seq_kv = r.Int("seq_kv");
  a.head_dim_qk = r.Int("head_dim_qk");
  a.head_dim_v = r.Int("head_dim_v");
  a.causal = ReadBool(r, "causal");
  a.backward = ReadBool(r, "backward");
  a.dtype = ReadDtype(r);
  if (a.heads % a.kv_heads != 0) {
    r.AddError("heads", "(" + std::to_string(a.heads) + ") is not a multiple of kv_heads (" +
                            std::to_string(a.kv_heads) + "); grouped-query attention shares each KV head among "
                            "a whole number of query heads");
  }
  return a;
}

MemoryShape ReadMemory(JsonReader& r) {
  MemoryShape m;
  m.bytes_read = r.Int("bytes_read", {0, INT64_MAX});
  m.bytes_written = r.Int("bytes_written", {0, INT64_MAX});
  if (m.bytes_read == 0 && m.bytes_written == 0 && r.Has("bytes_read") && r.Has("bytes_written")) {
    r.AddError("bytes_read", "and bytes_written are both 0; a memory-bound sample must move bytes");
  }
  return m;
}

Status ParseSample(const nlohmann::json& json, const std::string& file, size_t index, ProfileSample* sample) {
  const std::string path = "samples[" + std::to_string(index) + "]";
  if (!json.is_object()) {
    return Status::InvalidArgument(file + ": " + path + ": must be an object, got " + json.type_name());
  }
  JsonReader r(json, file, path);
  std::vector<std::string> kinds;
  for (OpKind k : kSampleKinds) kinds.emplace_back(kOpKindNames.Name(k));
  std::optional<std::string> kernel = ReadName(r, "kernel", kinds);
  if (kernel == "gemm") sample->shape = ReadGemm(r);
  if (kernel == "attention") sample->shape = ReadAttention(r);
  if (kernel == "memory") sample->shape = ReadMemory(r);
  sample->median_us = r.PositiveNumber("median_us");
  sample->p10_us = r.OptionalPositiveNumber("p10_us");
  sample->p90_us = r.OptionalPositiveNumber("p90_us");
  if (r.Has("p10_us") != r.Has("p90_us")) {
    r.AddError(r.Has("p10_us") ? "p90_us" : "p10_us", "is missing; give p10_us and p90_us together, or neither");
  } else if (sample->p10_us && sample->p90_us &&
             !(*sample->p10_us <= sample->median_us && sample->median_us <= *sample->p90_us)) {
    r.AddError("median_us", "is not between p10_us and p90_us; percentiles must satisfy p10 <= median <= p90");
  }
  sample->repeats = r.Int("repeats");
  sample->label = r.OptionalString("label").value_or("");
  sample->where = file + ": " + path;
  // Without a known kernel the shape keys cannot be checked; the kernel error says enough.
  if (!kernel) return r.Finish(UnknownKeys::kRejectTypos);
  return r.Finish(UnknownKeys::kError);
}

// ISO 8601: "YYYY-MM-DD", optionally followed by 'T' or ' ' and a time.
bool IsIsoDate(const std::string& s) {
  if (s.size() < 10 || s[4] != '-' || s[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && (s.size() == 10 || s[10] == 'T' || s[10] == ' ');
}

std::string RequiredText(JsonReader& r, std::string_view key) {
  const bool present = r.Has(key);
  std::string value = r.String(key);
  if (present && value.empty()) r.AddError(key, "is empty; give it a value");
  return value;
}

void ParseHeader(const nlohmann::json& json, JsonReader& r, Profile* p) {
  if (!r.Has("schema")) {
    r.Allow("schema");
    r.AddError("schema", "is missing; add \"schema\": \"loom.profile/1\"");
  } else if (std::optional<std::string> schema = r.OptionalString("schema"); schema && *schema != kProfileSchema) {
    r.AddError("schema", "is " + Quoted(*schema) + " but this file is read as a profile (\"loom.profile/1\"); "
                         "pass a profile written by loom probe");
  }
  JsonReader& device = r.Object("device");
  p->device.name = RequiredText(device, "name");
  p->device.sm_count = device.OptionalInt("sm_count");
  p->device.memory_bytes = device.OptionalInt("memory_bytes");
  p->device.compute_capability = device.OptionalString("compute_capability");
  p->driver_version = RequiredText(r, "driver_version");
  p->cuda_version = RequiredText(r, "cuda_version");
  p->date = RequiredText(r, "date");
  if (!p->date.empty() && !IsIsoDate(p->date)) {
    r.AddError("date", "is " + Quoted(p->date) + "; write an ISO 8601 date such as \"2025-03-01\" or "
                       "\"2025-03-01T10:00:00Z\"");
  }
  // Any library names are allowed, so the object is checked here rather than by a child reader.
  r.Allow("library_versions");
  auto libraries = json.find("library_versions");
  if (libraries == json.end()) {
    r.AddError("library_versions", "is missing; add \"library_versions\": {\"cublaslt\": \"...\", ...} ({} if none)");
  } else if (!libraries->is_object()) {
    r.AddError("library_versions", std::string("must be an object of name: version strings, got ") +
                                       libraries->type_name());
  } else {
    for (const auto& [name, version] : libraries->items()) {
      if (version.is_string()) {
        p->library_versions.emplace_back(name, version.get<std::string>());
      } else {
        r.AddError("library_versions." + name, std::string("must be a version string, got ") + version.type_name());
      }
    }
  }
}

}  // namespace

OpKind ProfileSample::Kind() const { return kSampleKinds[shape.index()]; }

std::string DescribeShape(const KernelShape& shape) {
  char text[160];
  if (const GemmShape* g = std::get_if<GemmShape>(&shape)) {
    std::snprintf(text, sizeof text, "gemm %lldx%lldx%lld%s %s", static_cast<long long>(g->m),
                  static_cast<long long>(g->n), static_cast<long long>(g->k),
                  g->batch > 1 ? (" x" + std::to_string(g->batch)).c_str() : "",
                  std::string(kDtypeNames.Name(g->dtype)).c_str());
  } else if (const AttentionShape* a = std::get_if<AttentionShape>(&shape)) {
    std::snprintf(text, sizeof text, "attention %s%s b%lld h%lld/%lld s%lld/%lld d%lld/%lld %s",
                  a->backward ? "bwd" : "fwd", a->causal ? " causal" : "", static_cast<long long>(a->batch),
                  static_cast<long long>(a->heads), static_cast<long long>(a->kv_heads),
                  static_cast<long long>(a->seq_q), static_cast<long long>(a->seq_kv),
                  static_cast<long long>(a->head_dim_qk), static_cast<long long>(a->head_dim_v),
                  std::string(kDtypeNames.Name(a->dtype)).c_str());
  } else {
    const MemoryShape& m = std::get<MemoryShape>(shape);
    std::snprintf(text, sizeof text, "memory %s read, %s written", Bytes(m.bytes_read).c_str(),
                  Bytes(m.bytes_written).c_str());
  }
  return text;
}

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
    r.AddError("samples", std::string("must be an array of sample objects, got ") + samples->type_name());
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
  Status header = r.Finish(UnknownKeys::kError);
  if (!header.ok()) errors.insert(errors.begin(), header.message());
  if (errors.empty()) return profile;
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(message);
}

Result<Profile> ReadProfile(const std::string& path) {
  Result<nlohmann::json> json = ReadJsonObjectFile(path);
  if (json.ok()) return ParseProfile(*json, path);
  if (json.status().code() != Status::Code::kNotFound) return json.status();
  return Status::NotFound(path + ": cannot open; pass a profile written by loom probe (schema loom.profile/1)");
}

nlohmann::ordered_json ProfileSampleJson(const ProfileSample& s) {
  nlohmann::ordered_json j;
  j["kernel"] = kOpKindNames.Name(s.Kind());
  if (const GemmShape* g = std::get_if<GemmShape>(&s.shape)) {
    j["m"] = g->m;
    j["n"] = g->n;
    j["k"] = g->k;
    j["batch"] = g->batch;
    j["dtype"] = kDtypeNames.Name(g->dtype);
  } else if (const AttentionShape* a = std::get_if<AttentionShape>(&s.shape)) {
    j["batch"] = a->batch;
    j["heads"] = a->heads;
    j["kv_heads"] = a->kv_heads;
    j["seq_q"] = a->seq_q;
    j["seq_kv"] = a->seq_kv;
    j["head_dim_qk"] = a->head_dim_qk;
    j["head_dim_v"] = a->head_dim_v;
    j["causal"] = a->causal;
    j["backward"] = a->backward;
    j["dtype"] = kDtypeNames.Name(a->dtype);
  } else {
    const MemoryShape& m = std::get<MemoryShape>(s.shape);
    j["bytes_read"] = m.bytes_read;
    j["bytes_written"] = m.bytes_written;
  }
  j["median_us"] = s.median_us;
  if (s.p10_us && s.p90_us) {
    j["p10_us"] = *s.p10_us;
    j["p90_us"] = *s.p90_us;
  }
  j["repeats"] = s.repeats;
  if (!s.label.empty()) j["label"] = s.label;
  return j;
}

nlohmann::ordered_json ProfileJson(const Profile& p) {
  nlohmann::ordered_json j;
  j["schema"] = kProfileSchema;
  nlohmann::ordered_json device = {{"name", p.device.name}};
  if (p.device.sm_count) device["sm_count"] = *p.device.sm_count;
  if (p.device.memory_bytes) device["memory_bytes"] = *p.device.memory_bytes;
  if (p.device.compute_capability) device["compute_capability"] = *p.device.compute_capability;
  j["device"] = device;
  j["driver_version"] = p.driver_version;
  j["cuda_version"] = p.cuda_version;
  j["library_versions"] = nlohmann::ordered_json::object();
  for (const auto& [name, version] : p.library_versions) j["library_versions"][name] = version;
  j["date"] = p.date;
  j["samples"] = nlohmann::ordered_json::array();
  for (const ProfileSample& s : p.samples) j["samples"].push_back(ProfileSampleJson(s));
  return j;
}

Status ProfileWriter::Open(const std::string& path, const Profile& header) {
  path_ = path;
  empty_ = true;
  nlohmann::ordered_json head = ProfileJson(header);
  head.erase("samples");
  std::string text = head.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text.resize(text.size() - 2);  // the closing "\n}"
  text += ",\n  \"samples\": [";
  out_.open(path, std::ios::binary | std::ios::trunc);
  out_ << text << kTail << std::flush;
  if (!out_) return Status::IoError(path + ": cannot write the profile; check the folder exists and is writable");
  tail_at_ = static_cast<std::streamoff>(text.size());
  for (const ProfileSample& s : header.samples) LOOM_RETURN_IF_ERROR(Append(s));
  return Status::Ok();
}

Status ProfileWriter::Append(const ProfileSample& sample) {
  const std::string line = (empty_ ? "\n    " : ",\n    ") +
                           ProfileSampleJson(sample).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out_.seekp(tail_at_);
  out_ << line << kTail << std::flush;
  if (!out_) return Status::IoError(path_ + ": cannot append a sample (disk full?); the samples before it are kept");
  tail_at_ += static_cast<std::streamoff>(line.size());
  empty_ = false;
  return Status::Ok();
}

namespace {

std::string NormalisedGpuName(std::string name, bool drop_note) {
  if (drop_note && !name.empty() && name.back() == ')') {
    const size_t open = name.rfind(" (");
    if (open != std::string::npos) name.resize(open);
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const size_t first = name.find_first_not_of(' ');
  name = first == std::string::npos ? "" : name.substr(first, name.find_last_not_of(' ') - first + 1);
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
    return Status::InvalidArgument(profile.file + ": device.sm_count is " + std::to_string(*profile.device.sm_count) +
                                   " but " + gpu.file + " has sm_count " + std::to_string(gpu.sm_count) +
                                   "; fit with the GPU file of the profiled device (a MIG slice or a different "
                                   "SKU has other SM counts)");
  }
  return Status::Ok();
}

}  // namespace loom
