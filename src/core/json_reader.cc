#include "core/json_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace loom {
namespace {

std::string JoinQuoted(std::initializer_list<std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += '"' + std::string(w) + '"';
  }
  return out;
}

// A short rendering of a value for messages: strings quoted, long values cut.
std::string Show(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

const nlohmann::json& EmptyObject() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

}  // namespace

Result<nlohmann::json> ReadJsonObjectFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(path + ": cannot open (" + std::strerror(errno) +
                            "); check the path, or pass a shipped file such as models/llama3-70b.json");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() starts with "[json.exception.parse_error.101] "; users need only the rest.
    std::string reason = e.what();
    size_t bracket = reason.find("] ");
    if (bracket != std::string::npos) reason = reason.substr(bracket + 2);
    return Status::InvalidArgument(path + ": not valid JSON: " + reason +
                                   "; fix the syntax (`python3 -m json.tool FILE` shows where)");
  }
  if (!parsed.is_object()) {
    return Status::InvalidArgument(path + ": the top level is a JSON " +
                                   std::string(parsed.type_name()) +
                                   "; it must be an object of \"key\": value pairs");
  }
  return parsed;
}

JsonReader::JsonReader(const nlohmann::json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {}

std::string JsonReader::Where(std::string_view key) const {
  std::string where = file_ + ": ";
  if (!path_.empty()) where += path_ + (key.empty() ? "" : ".");
  where += std::string(key);
  return where;
}

bool JsonReader::Has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const nlohmann::json* JsonReader::Find(std::string_view key) {
  known_.emplace(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void JsonReader::AddError(std::string_view key, std::string_view problem) {
  errors_.push_back(Where(key) + ": " + std::string(problem));
}

std::optional<int64_t> JsonReader::OptionalInt(std::string_view key, IntRange range) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number_integer()) {
    // An integral double such as 4096.0 is still a mistake in a size; say what was found.
    AddError(key, "must be an integer, got " + std::string(value->type_name()) + " " + Show(*value) +
                      "; write it as a whole number without quotes");
    return std::nullopt;
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    AddError(key, Show(*value) + " does not fit in 64 bits; use a value at most " +
                      std::to_string(range.max));
    return std::nullopt;
  }
  int64_t v = value->get<int64_t>();
  if (v < range.min || v > range.max) {
    std::string bound = range.max == INT64_MAX
                            ? "at least " + std::to_string(range.min)
                            : "between " + std::to_string(range.min) + " and " + std::to_string(range.max);
    AddError(key, "is " + std::to_string(v) + "; it must be " + bound);
    return std::nullopt;
  }
  return v;
}

int64_t JsonReader::Int(std::string_view key, IntRange range) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key, "is missing; add \"" + std::string(key) + "\": <integer>");
    return range.min;
  }
  return OptionalInt(key, range).value_or(range.min);
}

std::optional<double> JsonReader::OptionalNonNegativeNumber(std::string_view key) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number()) {
    AddError(key, "must be a number, got " + std::string(value->type_name()) + " " + Show(*value));
    return std::nullopt;
  }
  double v = value->get<double>();
  if (!std::isfinite(v) || v < 0) {
    AddError(key, "is " + Show(*value) + "; it must be a finite number >= 0");
    return std::nullopt;
  }
  return v;
}

std::optional<double> JsonReader::OptionalPositiveNumber(std::string_view key) {
  std::optional<double> v = OptionalNonNegativeNumber(key);
  if (v && *v == 0) {
    AddError(key, "is 0; it must be greater than 0");
    return std::nullopt;
  }
  return v;
}

double JsonReader::PositiveNumber(std::string_view key) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key, "is missing; add \"" + std::string(key) + "\": <number greater than 0>");
    return 1.0;
  }
  return OptionalPositiveNumber(key).value_or(1.0);
}

std::optional<std::string> JsonReader::OptionalString(std::string_view key) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    AddError(key, "must be a string, got " + std::string(value->type_name()) + " " + Show(*value));
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::vector<std::string> JsonReader::OptionalStringList(std::string_view key) {
  std::vector<std::string> out;
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return out;
  if (!value->is_array()) {
    AddError(key, "must be an array of strings, got " + std::string(value->type_name()) + " " + Show(*value));
    return out;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const nlohmann::json& item = (*value)[i];
    if (!item.is_string() || item.get<std::string>().empty()) {
      AddError(key, "element " + std::to_string(i) + " must be a non-empty string, got " + Show(item));
      continue;
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::string JsonReader::String(std::string_view key) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key, "is missing; add \"" + std::string(key) + "\": \"...\"");
    return "";
  }
  return OptionalString(key).value_or("");
}

std::optional<std::string> JsonReader::OptionalOneOf(std::string_view key,
                                                     std::initializer_list<std::string_view> allowed) {
  std::optional<std::string> value = OptionalString(key);
  if (!value) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    AddError(key, "is \"" + *value + "\"; it must be one of " + JoinQuoted(allowed));
    return std::nullopt;
  }
  return value;
}

std::string JsonReader::OneOf(std::string_view key, std::initializer_list<std::string_view> allowed) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key, "is missing; add \"" + std::string(key) + "\" with one of " + JoinQuoted(allowed));
    return "";
  }
  return OptionalOneOf(key, allowed).value_or("");
}

std::optional<bool> JsonReader::OptionalBool(std::string_view key) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) {
    AddError(key, "must be true or false, got " + std::string(value->type_name()) + " " + Show(*value));
    return std::nullopt;
  }
  return value->get<bool>();
}

JsonReader& JsonReader::Object(std::string_view key) {
  const nlohmann::json* value = Find(key);
  std::string child_path = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  const nlohmann::json* object = &EmptyObject();
  if (value == nullptr) {
    AddError(key, "is missing; add \"" + std::string(key) + "\": { ... }");
  } else if (!value->is_object()) {
    AddError(key, "must be an object, got " + std::string(value->type_name()) + " " + Show(*value));
  } else {
    object = value;
  }
  children_.push_back(std::make_unique<JsonReader>(*object, file_, child_path));
  return *children_.back();
}

std::string JsonReader::KnownKeyList() const {
  std::string list;
  for (const std::string& key : known_) list += (list.empty() ? "" : ", ") + key;
  return list;
}

void JsonReader::Allow(std::string_view key) { known_.emplace(key); }

void JsonReader::CollectErrors(std::vector<std::string>* out) const {
  out->insert(out->end(), errors_.begin(), errors_.end());
  for (const auto& child : children_) child->CollectErrors(out);
}

Status JsonReader::Finish(UnknownKeys policy, std::initializer_list<std::string_view> also_allowed) {
  for (const auto& [key, value] : object_.items()) {
    if (known_.count(key) > 0) continue;
    if (std::find(also_allowed.begin(), also_allowed.end(), key) != also_allowed.end()) continue;
    std::string closest;
    int best = 1 << 20;
    for (const std::string& candidate : known_) {
      int d = EditDistance(key, candidate);
      if (d < best) best = d, closest = candidate;
    }
    // Two edits catch a dropped, doubled or swapped letter without flagging unrelated HF keys.
    bool near_miss = best <= 2 && key.size() > 3;
    if (policy == UnknownKeys::kError) {
      AddError(key, near_miss ? "is not a known key; did you mean \"" + closest + "\"?"
                              : "is not a known key; remove it (known keys here: " + KnownKeyList() + ")");
    } else if (near_miss) {
      AddError(key, "looks like a misspelling of \"" + closest + "\"; rename it");
    }
  }
  // Nested readers check their own keys with the same policy.
  for (const auto& child : children_) {
    Status child_status = child->Finish(policy);
    (void)child_status;  // its errors are collected below
  }
  std::vector<std::string> all;
  CollectErrors(&all);
  if (all.empty()) return Status::Ok();
  std::string message;
  for (const std::string& line : all) message += (message.empty() ? "" : "\n") + line;
  return Status::InvalidArgument(message);
}

std::string PathBeside(const std::string& file, const std::string& path) {
  // operator/ keeps |path| as it is when it is absolute.
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace loom
