#include "cli/json_contract.h"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/build_info.h"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kInputFileType[] = "FILE";

// The options of |app| and of its option groups (CLI11 keeps those in nameless subcommands).
std::vector<const CLI::Option*> AllOptions(const CLI::App& app) {
  std::vector<const CLI::Option*> options = app.get_options();
  for (const CLI::App* group :
       app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); })) {
    for (const CLI::Option* option : AllOptions(*group)) options.push_back(option);
  }
  return options;
}

Json GivenValue(const CLI::Option& option) {
  if (option.get_expected_min() == 0) return true;
  const std::vector<std::string>& results = option.results();
  if (results.size() == 1) return results.front();
  return results;
}

}  // namespace

CLI::Option* InputFile(CLI::Option* option) { return option->type_name(kInputFileType); }

Json CommandRequest(const CLI::App& command) {
  Json arguments = Json::object();
  Json input_files = Json::array();
  for (const CLI::Option* option : AllOptions(command)) {
    if (option->count() == 0 || option->get_single_name() == "help") continue;
    arguments[option->get_single_name()] = GivenValue(*option);
    if (option->get_type_name() == kInputFileType) {
      for (const std::string& path : option->results()) input_files.push_back(path);
    }
  }
  return {{"command", command.get_name()},
          {"arguments", std::move(arguments)},
          {"input_files", std::move(input_files)}};
}

Json Stamped(const Json& body, const Json& request) {
  Json stamped = Json::object();
  stamped["schema"] = body.at("schema");
  stamped["loom_version"] = LoomBuildVersion();
  stamped["request"] = request;
  for (const auto& [key, value] : body.items()) {
    if (key == "schema" || key == "loom_version") continue;
    if (key == "request" && value.is_object()) {
      for (const auto& [request_key, request_value] : value.items())
        stamped["request"][request_key] = request_value;
      continue;
    }
    stamped[key] = value;
  }
  return stamped;
}

}  // namespace loom
