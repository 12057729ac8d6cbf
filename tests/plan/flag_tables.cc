#include "plan/flag_tables.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

namespace loom {
namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

std::vector<std::string> Choices(const std::string& field) {
  return field.empty() ? std::vector<std::string>{} : Split(field, '|');
}

// The rows of a table: tab-separated fields, '#' comment lines skipped, each row padded to
// |columns|.
Result<std::vector<std::vector<std::string>>> ReadRows(const std::string& path, size_t columns) {
  std::ifstream in(path);
  if (!in)
    return Status::IoError(path +
                           ": cannot read the flag table; regenerate it with tools/flag_tables");
  std::vector<std::vector<std::string>> rows;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = Split(line, '\t');
    if (fields.empty() || fields.size() > columns || fields[0].empty()) {
      return Status::InvalidArgument(path + ":" + std::to_string(line_number) + ": expected " +
                                     std::to_string(columns) +
                                     " tab-separated fields; regenerate it with "
                                     "tools/flag_tables");
    }
    fields.resize(columns);
    rows.push_back(std::move(fields));
  }
  return rows;
}

bool IsFlag(const std::string& token) { return token.size() > 2 && token.compare(0, 2, "--") == 0; }

bool IsInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] =
      std::from_chars(text.data() + (text.size() > 1 && text[0] == '+'), end, value);
  return error == std::errc() && ptr == end && !text.empty();
}

// Python's float(): a decimal or exponent form, inf or nan (strtod reads the same set).
bool IsFloat(const std::string& text) {
  if (text.empty() || text.find_first_of(" \t\n") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string Joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& item : list) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Whether argparse takes |count| values for |nargs|.
bool CountFits(const std::string& nargs, size_t count) {
  if (nargs == "?") return count <= 1;
  if (nargs == "*") return true;
  if (nargs == "+") return count >= 1;
  return IsInteger(nargs) && static_cast<size_t>(std::stoll(nargs)) == count;
}

void CheckValue(const std::string& where, const std::string& flag, const FlagSpec& spec,
                const std::string& value, std::vector<std::string>& out) {
  if (spec.type == "int" && !IsInteger(value)) {
    out.push_back(where + flag + " " + value + ": not an int (the parser's type=int)");
  } else if (spec.type == "float" && !IsFloat(value)) {
    out.push_back(where + flag + " " + value + ": not a float (the parser's type=float)");
  }
  if (!spec.choices.empty() && !Contains(spec.choices, value)) {
    out.push_back(where + flag + " " + value + ": not among the choices " + Joined(spec.choices));
  }
}

bool TypeFits(const std::string& type, const nlohmann::ordered_json& value) {
  if (type == "any") return true;
  if (type == "bool") return value.is_boolean();
  if (type == "int") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "array") return value.is_array();
  return (type == "object" || type == "map") && value.is_object();
}

std::string ChoiceText(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void CheckObject(const ConfigKeyTable& table, const std::string& prefix,
                 const nlohmann::ordered_json& object, std::vector<std::string>& out) {
  for (const auto& item : object.items()) {
    const std::string path = prefix + item.key();
    const nlohmann::ordered_json& value = item.value();
    const auto found = table.keys.find(path);
    if (found == table.keys.end()) {
      out.push_back(table.file + ": " + path + " is not a key DeepSpeed's config code reads");
      continue;
    }
    const ConfigKeySpec& spec = found->second;
    const bool fits = std::any_of(spec.types.begin(), spec.types.end(),
                                  [&](const std::string& type) { return TypeFits(type, value); });
    if (!fits) {
      out.push_back(table.file + ": " + path + " = " + value.dump() + ": expected " +
                    Joined(spec.types));
      continue;
    }
    if (!spec.choices.empty() && !value.is_object() && !Contains(spec.choices, ChoiceText(value))) {
      out.push_back(table.file + ": " + path + " = " + value.dump() + ": not among " +
                    Joined(spec.choices));
    }
    if (value.is_object() && Contains(spec.types, "object"))
      CheckObject(table, path + ".", value, out);
  }
}

}  // namespace

std::string FlagTablePath(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/plan/flag_tables/" + name + ".tsv";
}

Result<FlagTable> LoadFlagTable(const std::string& path) {
  Result<std::vector<std::vector<std::string>>> rows = ReadRows(path, 5);
  if (!rows.ok()) return rows.status();
  FlagTable table;
  table.file = path;
  for (const std::vector<std::string>& row : rows.value()) {
    table.flags[row[0]] = FlagSpec{row[1], row[2], row[3], Choices(row[4])};
  }
  return table;
}

Result<ConfigKeyTable> LoadConfigKeyTable(const std::string& path) {
  Result<std::vector<std::vector<std::string>>> rows = ReadRows(path, 3);
  if (!rows.ok()) return rows.status();
  ConfigKeyTable table;
  table.file = path;
  for (const std::vector<std::string>& row : rows.value()) {
    table.keys[row[0]] = ConfigKeySpec{Split(row[1], '|'), Choices(row[2])};
  }
  return table;
}

std::vector<std::string> CheckArguments(const FlagTable& table,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> out;
  const std::string where = table.file + ": ";
  for (size_t i = 0; i < args.size();) {
    const std::string& flag = args[i];
    size_t end = i + 1;
    while (end < args.size() && !IsFlag(args[end])) ++end;
    if (!IsFlag(flag)) {
      out.push_back(where + "'" + flag + "' where a flag was expected");
      i = end;
      continue;
    }
    const auto found = table.flags.find(flag);
    if (found == table.flags.end()) {
      out.push_back(where + flag + " is not an option the parser defines");
      i = end;
      continue;
    }
    const FlagSpec& spec = found->second;
    const size_t count = end - i - 1;
    if (!CountFits(spec.nargs, count)) {
      out.push_back(where + flag + " (" + spec.kind + ", nargs " + spec.nargs + ") given " +
                    std::to_string(count) + " value(s)");
    } else {
      for (size_t v = i + 1; v < end; ++v) CheckValue(where, flag, spec, args[v], out);
    }
    i = end;
  }
  return out;
}

std::vector<std::string> CheckConfig(const ConfigKeyTable& table,
                                     const nlohmann::ordered_json& config) {
  std::vector<std::string> out;
  if (!config.is_object()) return {table.file + ": the config is not a JSON object"};
  CheckObject(table, "", config, out);
  return out;
}

namespace {

template <typename Table>
const Result<Table>& Cached(const std::string& name, Result<Table> (*load)(const std::string&)) {
  static std::map<std::string, Result<Table>>* tables = new std::map<std::string, Result<Table>>();
  auto it = tables->find(name);
  if (it == tables->end()) it = tables->emplace(name, load(FlagTablePath(name))).first;
  return it->second;
}

}  // namespace

std::vector<std::string> MegatronProblems(const std::vector<std::string>& args,
                                          const std::string& name) {
  const Result<FlagTable>& table = Cached<FlagTable>(name, &LoadFlagTable);
  if (!table.ok()) return {table.status().ToString()};
  return CheckArguments(*table, args);
}

std::vector<std::string> DeepSpeedProblems(const std::vector<std::string>& launcher_args,
                                           const nlohmann::ordered_json& config) {
  const Result<FlagTable>& flags = Cached<FlagTable>("megatron-deepspeed", &LoadFlagTable);
  const Result<ConfigKeyTable>& keys =
      Cached<ConfigKeyTable>("deepspeed-config", &LoadConfigKeyTable);
  if (!flags.ok()) return {flags.status().ToString()};
  if (!keys.ok()) return {keys.status().ToString()};
  std::vector<std::string> problems = CheckArguments(*flags, launcher_args);
  for (std::string& p : CheckConfig(*keys, config)) problems.push_back(std::move(p));
  return problems;
}

}  // namespace loom
