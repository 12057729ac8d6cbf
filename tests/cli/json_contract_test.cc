#include "cli/json_contract.h"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/build_info.h"

namespace loom {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> KeysOf(const Json& json) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  return keys;
}

// A command like loom's: a positional list of input files, an option group, a flag, a list option
// and options left at their defaults.
struct Command {
  CLI::App app{"test"};
  CLI::App* sub = app.add_subcommand("fit", "");
  std::vector<std::string> inputs;
  std::string gpu, output, params = "auto";
  std::vector<std::string> measure;
  bool json = false;

  Command() {
    InputFile(sub->add_option("inputs", inputs, ""));
    CLI::Option_group* target = sub->add_option_group("target", "");
    InputFile(target->add_option("--gpu", gpu, ""));
    sub->add_option("--output", output, "");
    sub->add_option("--params", params, "")->capture_default_str();
    sub->add_option("--measure", measure, "")->delimiter(',');
    sub->add_flag("--json", json, "");
  }

  Json Request(std::vector<std::string> args) {
    args.insert(args.begin(), "loom");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    return CommandRequest(*sub);
  }
};

TEST(CommandRequest, EchoesTheGivenOptionsAndListsTheInputFiles) {
  Command c;
  const Json r = c.Request({"fit", "a.json", "b.json", "--gpu", "g.json", "--output", "out.json",
                            "--measure", "gemm,host", "--json"});
  EXPECT_EQ(KeysOf(r), (std::vector<std::string>{"command", "arguments", "input_files"}));
  EXPECT_EQ(r["command"], "fit");
  EXPECT_EQ(r["arguments"]["inputs"], Json::array({"a.json", "b.json"}));
  EXPECT_EQ(r["arguments"]["gpu"], "g.json");  // an option of an option group
  EXPECT_EQ(r["arguments"]["output"], "out.json");
  EXPECT_EQ(r["arguments"]["measure"], Json::array({"gemm", "host"}));
  EXPECT_EQ(r["arguments"]["json"], true);
  EXPECT_FALSE(r["arguments"].contains("params")) << "a default is not a request";
  // The files read, not the one written.
  EXPECT_EQ(r["input_files"], Json::array({"a.json", "b.json", "g.json"}));
}

TEST(CommandRequest, NothingGivenIsAnEmptyRequest) {
  Command c;
  const Json r = c.Request({"fit"});
  EXPECT_TRUE(r["arguments"].empty());
  EXPECT_TRUE(r["input_files"].empty());
}

TEST(InputFile, HelpSaysFile) {
  Command c;
  EXPECT_NE(c.sub->help().find("--gpu FILE"), std::string::npos) << c.sub->help();
}

TEST(Stamped, PutsSchemaVersionAndRequestFirstAndKeepsTheRestInOrder) {
  const Json body = {{"schema", "loom.test/1"}, {"b", 1}, {"a", 2}};
  const Json request = {
      {"command", "describe"}, {"arguments", Json::object()}, {"input_files", Json::array()}};
  const Json stamped = Stamped(body, request);
  EXPECT_EQ(KeysOf(stamped),
            (std::vector<std::string>{"schema", "loom_version", "request", "b", "a"}));
  EXPECT_EQ(stamped["loom_version"], LoomBuildVersion());
  EXPECT_EQ(stamped["request"], request);
}

TEST(Stamped, ABodysOwnRequestFollowsTheCommandLine) {
  const Json body = {
      {"schema", "loom.plan/1"}, {"request", {{"model", "m.json"}, {"gpus", 8}}}, {"plans", 1}};
  const Json request = {
      {"command", "plan"}, {"arguments", {{"gpus", "8"}}}, {"input_files", {"m.json"}}};
  const Json stamped = Stamped(body, request);
  EXPECT_EQ(KeysOf(stamped),
            (std::vector<std::string>{"schema", "loom_version", "request", "plans"}));
  EXPECT_EQ(KeysOf(stamped["request"]),
            (std::vector<std::string>{"command", "arguments", "input_files", "model", "gpus"}));
  EXPECT_EQ(stamped["request"]["gpus"], 8);
}

}  // namespace
}  // namespace loom
