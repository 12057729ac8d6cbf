// The JSON contract (issue 22): every JSON loom writes starts with its schema, the loom version and
// the request, and matches its JSON Schema in docs/schemas/; so does every shipped input file.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/json_contract.h"
#include "cli/probe_output.h"
#include "cli/run_loom.h"
#include "core/build_info.h"
#include "cost/profile.h"
#include "support/schema_check.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

std::string ReadSchemaFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> SchemaFiles() {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(SchemaDir())) {
    const std::string name = e.path().filename().string();
    if (name.size() > 12 && name.substr(name.size() - 12) == ".schema.json")
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every "$ref" target file named in |node|.
void CollectRefFiles(const nlohmann::json& node, std::set<std::string>& files) {
  if (node.is_object()) {
    if (auto ref = node.find("$ref"); ref != node.end() && ref->is_string()) {
      const std::string target =
          ref->get<std::string>().substr(0, ref->get<std::string>().find('#'));
      if (!target.empty()) files.insert(target);
    }
    for (const auto& [key, value] : node.items()) CollectRefFiles(value, files);
  } else if (node.is_array()) {
    for (const nlohmann::json& value : node) CollectRefFiles(value, files);
  }
}

TEST(JsonSchemas, EverySchemaFileIsAWellFormedDraft7Schema) {
  const std::vector<fs::path> files = SchemaFiles();
  ASSERT_GE(files.size(), 20u) << "docs/schemas/ holds the schemas of loom's files and outputs";
  for (const fs::path& file : files) {
    const std::vector<std::string> problems = SchemaFileProblems(file.string());
    std::string joined;
    for (const std::string& p : problems) joined += "\n  " + p;
    EXPECT_TRUE(problems.empty()) << file << ":" << joined;
  }
}

// A schema file is named for the "schema" value it checks (loom.<name>/<N> in
// <name>-<N>.schema.json), or is the target of another's "$ref"; docs/schemas/README.md lists each.
TEST(JsonSchemas, EverySchemaFileIsNamedForItsSchemaAndReferenced) {
  std::set<std::string> referenced;
  for (const fs::path& file : SchemaFiles()) {
    CollectRefFiles(nlohmann::json::parse(ReadSchemaFile(file)), referenced);
  }
  const std::string readme = ReadSchemaFile(SchemaDir() + "/README.md");
  for (const fs::path& file : SchemaFiles()) {
    const std::string name = file.filename().string();
    EXPECT_NE(readme.find(name), std::string::npos)
        << "docs/schemas/README.md does not list " << name;
    for (const std::string& target : referenced) {
      EXPECT_TRUE(fs::exists(SchemaDir() + "/" + target))
          << "a \"$ref\" names " << target << ", which is missing";
    }
    if (referenced.count(name) > 0) continue;
    const nlohmann::json schema = nlohmann::json::parse(ReadSchemaFile(file));
    const nlohmann::json* named = nullptr;
    if (auto p = schema.find("properties"); p != schema.end() && p->contains("schema"))
      named = &(*p)["schema"];
    ASSERT_NE(named, nullptr) << name << " is neither referenced nor checks a \"schema\" key";
    const nlohmann::json values = named->contains("const")
                                      ? nlohmann::json::array({(*named)["const"]})
                                      : named->value("enum", nlohmann::json::array());
    ASSERT_FALSE(values.empty()) << name << ": properties.schema has no const or enum";
    for (const nlohmann::json& value : values) {
      EXPECT_EQ(fs::path(SchemaFileOf(value.get<std::string>())).filename().string(), name)
          << name << " checks " << value << ", whose file would be another";
    }
  }
}

TEST(JsonSchemas, AMissingOrUnknownSchemaFails) {
  EXPECT_FALSE(MatchesSchema(nlohmann::json::object()));
  EXPECT_FALSE(MatchesSchema({{"schema", "loom.no-such-output/1"}}));
  EXPECT_FALSE(MatchesSchema({{"schema", "not a loom schema"}}));
  EXPECT_FALSE(MatchesSchema(nlohmann::json::array()));
  EXPECT_EQ(fs::path(SchemaFileOf("loom.plan-file/3")).filename(), "plan-file-3.schema.json");
  EXPECT_EQ(SchemaFileOf("loom.plan"), "");
}

// The schemas are strict: a renamed, missing or mistyped key of a real output fails.
TEST(JsonSchemas, ARenamedMissingOrMistypedKeyFails) {
  const CommandResult r = Loom({"describe", "--model", Shipped("models/llama3-8b.json"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json good = nlohmann::json::parse(r.out);
  ASSERT_TRUE(MatchesSchema(good));
  nlohmann::json renamed = good;
  renamed["flops_per_tok"] = renamed["flops_per_token"];
  renamed.erase("flops_per_token");
  EXPECT_FALSE(MatchesSchema(renamed));
  nlohmann::json extra = good;
  extra["model"]["hidden"] = 1;
  EXPECT_FALSE(MatchesSchema(extra));
  nlohmann::json mistyped = good;
  mistyped["seq_len"] = "8192";
  EXPECT_FALSE(MatchesSchema(mistyped));
  nlohmann::json unversioned = good;
  unversioned.erase("loom_version");
  EXPECT_FALSE(MatchesSchema(unversioned));
}

TEST(JsonContract, OutputsStartWithSchemaVersionAndTheRequest) {
  const std::string model = Shipped("models/llama3-8b.json");
  const std::string cluster = Shipped("hardware/clusters/dgx-h100.json");
  const CommandResult r = Loom({"describe", "--model", model, "--cluster", cluster, "--seq", "4096",
                                "--optimizer", "sgd", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  ASSERT_GE(keys.size(), 3u);
  EXPECT_EQ(keys[0], "schema");
  EXPECT_EQ(keys[1], "loom_version");
  EXPECT_EQ(keys[2], "request");
  EXPECT_EQ(j["loom_version"], LoomBuildVersion());
  const nlohmann::ordered_json& request = j["request"];
  EXPECT_EQ(request["command"], "describe");
  EXPECT_EQ(request["arguments"]["model"], model);
  EXPECT_EQ(request["arguments"]["seq"], "4096");
  EXPECT_EQ(request["arguments"]["optimizer"], "sgd");
  EXPECT_EQ(request["arguments"]["json"], true);
  EXPECT_FALSE(request["arguments"].contains("nodes"))
      << "options left at their default are not echoed";
  EXPECT_EQ(request["input_files"], nlohmann::ordered_json::array({model, cluster}));
}

// plan restates the question in the model's terms after the command's own request.
TEST(JsonContract, PlanKeepsItsRequestKeysAfterTheCommandLine) {
  const CommandResult r =
      Loom({"plan", "--model", Shipped("models/llama3-8b.json"), "--cluster",
            Shipped("hardware/clusters/dgx-h100.json"), "--gpus", "8", "--global-batch", "16",
            "--seq", "2048", "--fix", "tp=8,pp=1", "--top", "1", "--threads", "2", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["request"]["command"], "plan");
  EXPECT_EQ(j["request"]["arguments"]["fix"], "tp=8,pp=1");
  EXPECT_EQ(j["request"]["gpus"], 8);
  EXPECT_EQ(j["request"]["global_batch"], 16);
}

// The plan file is an output too (and validate's input): it carries its writer's version and
// request.
TEST(JsonSchemas, PlanFileMatchesItsSchema) {
  const std::string path = (fs::temp_directory_path() / "loom_json_schema_plan.json").string();
  const CommandResult r = Loom({"plan",
                                "--model",
                                Shipped("models/llama3-8b.json"),
                                "--cluster",
                                Shipped("hardware/clusters/dgx-h100.json"),
                                "--gpus",
                                "4",
                                "--global-batch",
                                "8",
                                "--seq",
                                "2048",
                                "--fix",
                                "pp=2,tp=2",
                                "--top",
                                "1",
                                "--threads",
                                "2",
                                "--emit",
                                "plan",
                                "--out",
                                path,
                                "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(ReadSchemaFile(path));
  EXPECT_TRUE(MatchesSchema(plan));
  EXPECT_EQ(plan["loom_version"], LoomBuildVersion());
  EXPECT_EQ(plan["source"]["request"]["command"], "plan");
  fs::remove(path);
}

// The GPU and cluster files loom fit writes are inputs again: they match the schemas the shipped
// ones do, calibration included.
TEST(JsonSchemas, FilesFitWritesMatchTheirSchemas) {
  const fs::path dir = fs::temp_directory_path() / "loom_json_schema_fit";
  fs::remove_all(dir);
  fs::create_directories(dir / "gpus");
  fs::create_directories(dir / "clusters");
  fs::copy_file(Shipped("hardware/gpus/a100-sxm4-80gb.json"), dir / "gpus" / "a100-sxm4-80gb.json");
  fs::copy_file(Shipped("hardware/clusters/dgx-a100.json"), dir / "clusters" / "dgx-a100.json");
  const std::string gpu = (dir / "gpus" / "gpu-fitted.json").string();
  CommandResult r =
      Loom({"fit", Shipped("tests/cli/data/profile_a100_synthetic.json"), "--gpu",
            (dir / "gpus" / "a100-sxm4-80gb.json").string(), "--output", gpu, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(MatchesSchema(nlohmann::json::parse(ReadSchemaFile(gpu))));
  const std::string cluster = (dir / "clusters" / "cluster-fitted.json").string();
  r = Loom({"fit", Shipped("tests/cost/data/all_gather_perf_2nodes_v2.6.txt"), "--cluster",
            (dir / "clusters" / "dgx-a100.json").string(), "--output", cluster, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(MatchesSchema(nlohmann::json::parse(ReadSchemaFile(cluster))));
  fs::remove_all(dir);
}

// loom probe needs a GPU, so its outputs are made here from the shipped H100 profile, with a
// collective and a failure added: the profile as probe writes it (loom.profile/2, with the loom
// version) and the report probe --json prints (loom.probe/1).
TEST(JsonSchemas, ProbeOutputsMatchTheirSchemas) {
  Result<Profile> read = ReadProfile(Shipped("hardware/profiles/h100-sxm5-80gb-2026-11-27.json"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  Profile profile = *read;
  ASSERT_FALSE(profile.samples.empty());
  ASSERT_FALSE(profile.host_samples.empty());
  CollectiveSample collective;
  collective.ranks = 8;
  collective.size_bytes = 1 << 20;
  collective.count = 1 << 18;
  collective.out_of_place = {100, 10.5, 18.3};
  collective.in_place = {101, 10.4, 18.2};
  profile.collectives.push_back(collective);
  profile.failures.push_back({"gemm fp8 m=1 n=1 k=1", "CUBLAS_STATUS_NOT_SUPPORTED"});
  const nlohmann::ordered_json written = ProfileJson(profile);
  EXPECT_EQ(written["loom_version"], LoomBuildVersion());
  EXPECT_TRUE(MatchesSchema(nlohmann::json::parse(written.dump())));

  ProbeSummary summary;
  summary.planned = 10;
  summary.measured = 9;
  summary.failed = 1;
  summary.profile = profile;
  const nlohmann::ordered_json request = {{"command", "probe"},
                                          {"arguments", {{"output", "h100.json"}, {"json", true}}},
                                          {"input_files", nlohmann::ordered_json::array()}};
  const nlohmann::ordered_json report = Stamped(ProbeReportJson(summary, "h100.json"), request);
  EXPECT_TRUE(MatchesSchema(nlohmann::json::parse(report.dump())));
  EXPECT_GE(report["classes"].size(), 3u);
}

// Every file loom ships that names a loom schema: GPUs, clusters, frameworks, profiles, scenarios,
// runs files and the test data.
TEST(JsonSchemas, ShippedFilesMatchTheirSchemas) {
  int checked = 0;
  std::set<std::string> schemas;
  for (const char* dir : {"hardware", "scenarios", "models", "tests"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(Shipped(dir))) {
      if (!e.is_regular_file() || e.path().extension() != ".json") continue;
      const nlohmann::json json = nlohmann::json::parse(ReadSchemaFile(e.path()), nullptr, false);
      if (json.is_discarded() || !json.is_object() || !json.contains("schema") ||
          !json["schema"].is_string())
        continue;
      const std::string schema = json["schema"];
      if (schema.rfind("loom.", 0) != 0 || e.path().filename() == "malformed_profile.json")
        continue;
      EXPECT_TRUE(MatchesSchema(json)) << e.path();
      schemas.insert(schema);
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
  for (const char* expected :
       {"loom.gpu/1", "loom.cluster/1", "loom.framework/1", "loom.scenario/1", "loom.runs/1"}) {
    EXPECT_EQ(schemas.count(expected), 1u) << "no shipped file of " << expected << " was checked";
  }
}

// Model files are Hugging Face config.json files (most have no "schema" key): each is checked
// against loom.model/1 all the same.
TEST(JsonSchemas, ShippedModelsMatchTheModelSchema) {
  int checked = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(Shipped("models"))) {
    if (e.path().extension() != ".json") continue;
    nlohmann::json json = nlohmann::json::parse(ReadSchemaFile(e.path()));
    json["schema"] = "loom.model/1";
    EXPECT_TRUE(MatchesSchema(json)) << e.path();
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace loom
