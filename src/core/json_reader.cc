#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/file_io.h"

namespace loom {
namespace {

std::string Quoted(std::string_view s) { return '"' + std::string(s) + '"'; }

// "a", "b", "c": |words| (strings or string views) quoted, comma-separated.
template <typename Words>
std::string JoinQuoted(const Words& words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += Quoted(w);
  }
  return out;
}

// A short rendering of a value for messages: strings quoted, long values cut.
std::string Show(const nlohmann::json& value) {
  // Structured values are described, not printed: printing walks all of one, however big.
  if (value.is_array()) return "[...] (" + std::to_string(value.size()) + " elements)";
  if (value.is_object()) return "{...} (" + std::to_string(value.size()) + " keys)";
  if (value.is_string()) return "\"" + Abbreviated(value.get_ref<const std::string&>(), 37) + "\"";
  return Abbreviated(value.dump(), 40);
}

std::string ShowNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

const nlohmann::json& EmptyObject() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

}  // namespace

namespace {

// Thrown from the parser's callback to stop at the first problem that nlohmann's parser does not
// itself refuse; caught in Parse below.
struct ParseRefusal {
  std::string message;
};

// The rest of an nlohmann exception's message, without "[json.exception.parse_error.101] ".
std::string ReasonOf(const nlohmann::json::exception& e) {
  std::string reason = e.what();
  size_t bracket = reason.find("] ");
  return bracket == std::string::npos ? reason : reason.substr(bracket + 2);
}

template <typename Json>
Result<Json> Parse(std::string_view text, const std::string& file) {
  // One frame per open array or object: the keys seen so far (objects only) and its path.
  struct Frame {
    bool object = false;
    std::string path;
    std::string key;  // the key whose value is being read
    std::set<std::string, std::less<>> keys;
  };
  std::vector<Frame> frames;
  auto path_of = [&frames]() {
    std::string path;
    for (const Frame& f : frames) {
      if (!f.object || f.key.empty()) continue;
      path += (path.empty() ? "" : ".") + Abbreviated(f.key, 40);
    }
    return path;
  };
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, Json& parsed) -> bool {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (static_cast<int>(frames.size()) >= kMaxJsonDepth) {
          throw ParseRefusal{"arrays and objects nest deeper than " +
                             std::to_string(kMaxJsonDepth) + " levels (at " +
                             (path_of().empty() ? "the top" : path_of()) +
                             "); loom's files nest a few levels, so this is not one"};
        }
        frames.push_back(Frame{event == Event::object_start, "", "", {}});
        break;
      case Event::object_end:
      case Event::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case Event::key: {
        Frame& frame = frames.back();
        const std::string& key = parsed.template get_ref<const std::string&>();
        if (!frame.keys.insert(key).second) {
          frame.key.clear();
          std::string where = path_of();
          throw ParseRefusal{"key \"" + Abbreviated(key) + "\" appears twice" +
                             (where.empty() ? "" : " in " + where) +
                             "; JSON does not say which one counts, so keep only the one you mean"};
        }
        frame.key = key;
        break;
      }
      case Event::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const ParseRefusal& refusal) {
    return Status::InvalidArgument(file + ": " + refusal.message);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number the parser cannot hold ("1e999").
    return Status::InvalidArgument(file + ": not valid JSON for loom: " + ReasonOf(e) +
                                   "; numbers must fit a double (at most about 1.8e308)");
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(file + ": not valid JSON: " + ReasonOf(e) +
                                   "; fix the syntax (`python3 -m json.tool FILE` shows where)");
  }
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file) {
  return Parse<nlohmann::json>(text, file);
}

Result<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, const std::string& file) {
  return Parse<nlohmann::ordered_json>(text, file);
}

Result<nlohmann::json> ReadJsonObjectFile(const std::string& path, std::string_view missing_hint) {
  LOOM_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, missing_hint));
  LOOM_ASSIGN_OR_RETURN(nlohmann::json parsed, ParseJson(text, path));
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
  where += Abbreviated(key);
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
    AddError(key, "must be an integer, got " + std::string(value->type_name()) + " " +
                      Show(*value) + "; write it as a whole number without quotes");
    return std::nullopt;
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    AddError(key, Show(*value) + " does not fit in 64 bits; use a value at most " +
                      std::to_string(range.max));
    return std::nullopt;
  }
  int64_t v = value->get<int64_t>();
  if (v < range.min || v > range.max) {
    std::string bound = range.max == INT64_MAX ? "at least " + std::to_string(range.min)
                                               : "between " + std::to_string(range.min) + " and " +
                                                     std::to_string(range.max);
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

std::optional<double> JsonReader::OptionalNonNegativeNumber(std::string_view key,
                                                            NumberRange range) {
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
  if (v != 0 && (v < range.min || v > range.max)) {
    AddError(key, "is " + Show(*value) + "; it must be between " + ShowNumber(range.min) + " and " +
                      ShowNumber(range.max) + " (check its unit)");
    return std::nullopt;
  }
  return v;
}

std::optional<double> JsonReader::OptionalPositiveNumber(std::string_view key, NumberRange range) {
  std::optional<double> v = OptionalNonNegativeNumber(key, range);
  if (v && *v == 0) {
    AddError(key, "is 0; it must be greater than 0");
    return std::nullopt;
  }
  return v;
}

double JsonReader::PositiveNumber(std::string_view key, NumberRange range) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key, "is missing; add \"" + std::string(key) + "\": <number greater than 0>");
    return 1.0;
  }
  return OptionalPositiveNumber(key, range).value_or(1.0);
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
    AddError(key, "must be an array of strings, got " + std::string(value->type_name()) + " " +
                      Show(*value));
    return out;
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const nlohmann::json& item = (*value)[i];
    if (!item.is_string() || item.get<std::string>().empty()) {
      AddError(key,
               "element " + std::to_string(i) + " must be a non-empty string, got " + Show(item));
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

std::optional<std::string> JsonReader::OptionalOneOf(
    std::string_view key, std::initializer_list<std::string_view> allowed) {
  std::optional<std::string> value = OptionalString(key);
  if (!value) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    AddError(key, "is \"" + *value + "\"; it must be one of " + JoinQuoted(allowed));
    return std::nullopt;
  }
  return value;
}

std::string JsonReader::OneOf(std::string_view key,
                              std::initializer_list<std::string_view> allowed) {
  if (!Has(key)) {
    known_.emplace(key);
    AddError(key,
             "is missing; add \"" + std::string(key) + "\" with one of " + JoinQuoted(allowed));
    return "";
  }
  return OptionalOneOf(key, allowed).value_or("");
}

std::optional<bool> JsonReader::OptionalBool(std::string_view key) {
  const nlohmann::json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) {
    AddError(key,
             "must be true or false, got " + std::string(value->type_name()) + " " + Show(*value));
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

std::vector<std::pair<std::string, const nlohmann::json*>> JsonReader::UnreadKeys() const {
  std::vector<std::pair<std::string, const nlohmann::json*>> unread;
  for (const auto& [key, value] : object_.items()) {
    const std::string path = path_.empty() ? key : path_ + "." + key;
    if (known_.count(key) == 0) {
      unread.emplace_back(path, &value);
      continue;
    }
    for (const auto& child : children_) {
      if (child->path_ != path) continue;
      std::vector<std::pair<std::string, const nlohmann::json*>> nested = child->UnreadKeys();
      unread.insert(unread.end(), nested.begin(), nested.end());
    }
  }
  return unread;
}

void JsonReader::CollectErrors(std::vector<std::string>* out) const {
  out->insert(out->end(), errors_.begin(), errors_.end());
  for (const auto& child : children_) child->CollectErrors(out);
}

Status JsonReader::Finish(UnknownKeys policy,
                          std::initializer_list<std::string_view> also_allowed) {
  for (const auto& [key, value] : object_.items()) {
    if (known_.count(key) > 0) continue;
    if (std::find(also_allowed.begin(), also_allowed.end(), key) != also_allowed.end()) continue;
    std::string closest;
    int best = 1 << 20;
    for (const std::string& candidate : known_) {
      // Lengths differing by more than two already mean more than two edits: skip the full
      // distance, so that an absurdly long key costs no more than a short one.
      const size_t longer = std::max(key.size(), candidate.size());
      if (longer - std::min(key.size(), candidate.size()) > 2) continue;
      int d = EditDistance(key, candidate);
      if (d < best) best = d, closest = candidate;
    }
    // Two edits catch a dropped, doubled or swapped letter without flagging unrelated HF keys.
    bool near_miss = best <= 2 && key.size() > 3;
    if (policy == UnknownKeys::kError) {
      AddError(key,
               near_miss
                   ? "is not a known key; did you mean \"" + closest + "\"?"
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
  // A file of a million unknown keys gets a screenful, not a million lines.
  constexpr size_t kMaxLines = 20;
  std::string message;
  for (size_t i = 0; i < all.size() && i < kMaxLines; ++i)
    message += (message.empty() ? "" : "\n") + all[i];
  if (all.size() > kMaxLines) {
    message += "\n" + file_ + ": ... and " + std::to_string(all.size() - kMaxLines) +
               " more problems like these";
  }
  return Status::InvalidArgument(message);
}

std::string PathBeside(const std::string& file, const std::string& path) {
  // operator/ keeps |path| as it is when it is absolute.
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

std::string Abbreviated(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit > 3 ? limit - 3 : 0)) + "... (" +
         std::to_string(text.size()) + " bytes)";
}

std::optional<std::string> ReadChoice(JsonReader& r, std::string_view key,
                                      const std::vector<std::string>& names) {
  if (!r.Has(key)) {
    r.Allow(key);
    r.AddError(key, "is missing; add " + Quoted(key) + " with one of " + JoinQuoted(names));
    return std::nullopt;
  }
  std::optional<std::string> value = r.OptionalString(key);
  if (!value) return std::nullopt;
  if (std::find(names.begin(), names.end(), *value) != names.end()) return value;
  // Two edits catch a dropped, doubled or swapped letter.
  const std::optional<NearName> closest = NearestName(*value, names, 2);
  r.AddError(key, "is " + Quoted(Abbreviated(*value)) + "; " +
                      (closest ? "did you mean " + Quoted(names[closest->index]) + "? " : "") +
                      "it must be one of " + JoinQuoted(names));
  return std::nullopt;
}

std::optional<NearName> NearestName(std::string_view word, const std::vector<std::string>& names,
                                    int max_distance) {
  std::optional<NearName> nearest;
  for (size_t i = 0; i < names.size(); ++i) {
    const int d = EditDistance(word, names[i]);
    if (d <= max_distance && (!nearest || d < nearest->distance)) nearest = NearName{i, d};
  }
  return nearest;
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
