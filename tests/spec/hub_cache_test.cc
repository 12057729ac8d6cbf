#include "spec/hub_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "spec/model.h"
#include "spec/scenario.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

EnvironmentLookup FakeEnvironment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(HubCache, FoundAsHuggingfaceHubFindsIt) {
  EXPECT_EQ(FindHubCache(FakeEnvironment({{"HF_HUB_CACHE", "/c"}, {"HF_HOME", "/h"}})).dir, "/c");
  EXPECT_EQ(
      FindHubCache(FakeEnvironment({{"HUGGINGFACE_HUB_CACHE", "/old"}, {"HF_HOME", "/h"}})).basis,
      "HUGGINGFACE_HUB_CACHE");
  EXPECT_EQ(FindHubCache(FakeEnvironment({{"HF_HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}})).dir,
            "/h/hub");
  EXPECT_EQ(FindHubCache(FakeEnvironment({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/home/u"}})).dir,
            "/x/huggingface/hub");
  const HubCache home = FindHubCache(FakeEnvironment({{"HOME", "/home/u"}}));
  EXPECT_EQ(home.dir, "/home/u/.cache/huggingface/hub");
  EXPECT_NE(home.basis.find("default"), std::string::npos);
  // A leading ~ is the home folder, as os.path.expanduser reads it; an empty variable is unset.
  EXPECT_EQ(FindHubCache(FakeEnvironment({{"HF_HOME", "~/hf"}, {"HOME", "/home/u"}})).dir,
            "/home/u/hf/hub");
  EXPECT_EQ(FindHubCache(FakeEnvironment({{"HF_HUB_CACHE", ""}, {"HF_HOME", "/h"}})).dir, "/h/hub");
  EXPECT_TRUE(FindHubCache(FakeEnvironment({})).dir.empty());
}

TEST(HubCache, HubNamesAreOrgSlashNameWithAnOptionalRevision) {
  for (const char* name : {"meta-llama/Meta-Llama-3-8B", "Qwen/Qwen2.5-7B", "org/name@main",
                           "org/name@refs/pr/1", "google/gemma-3-1b-pt@0123abc"}) {
    EXPECT_TRUE(IsHubModelName(name)) << name;
  }
  for (const char* name : {"gpt2", "models/llama3-8b.json", "a/b/c", "/abs/b", "-a/b", "a/b.",
                           "a--b/c", "a/b..c", "a/b@", "a/b@../x", "a/b@/x", "", "a b/c"}) {
    EXPECT_FALSE(IsHubModelName(name)) << name;
  }
}

// A hub cache in a temporary folder, as huggingface_hub lays one out.
class FakeHubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("loom_hub_cache_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    repo_ = root_ / "models--org--tiny";
    fs::create_directories(repo_ / "refs");
    fs::create_directories(repo_ / "blobs");
    Write(repo_ / "blobs" / "abc", "{}");
    AddSnapshot("1111111111111111111111111111111111111111", true);
    AddSnapshot("2222222222222222222222222222222222222222", true);
    AddSnapshot("3333333333333333333333333333333333333333", false);
    Write(repo_ / "refs" / "main", "1111111111111111111111111111111111111111\n");
    Write(repo_ / "refs" / "dev", "2222222222222222222222222222222222222222");
    cache_ = {root_.string(), "HF_HUB_CACHE"};
  }
  void TearDown() override { fs::remove_all(root_); }

  static void Write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }
  void AddSnapshot(const std::string& commit, bool with_config) {
    fs::create_directories(repo_ / "snapshots" / commit);
    if (with_config) {
      fs::create_symlink("../../blobs/abc", repo_ / "snapshots" / commit / "config.json");
    }
  }
  std::string Snapshot(const std::string& commit) const {
    return (repo_ / "snapshots" / commit).string();
  }

  fs::path root_, repo_;
  HubCache cache_;
};

TEST_F(FakeHubCache, MainIsTheCommitRefsMainNames) {
  Result<std::string> dir = ResolveHubModel("org/tiny", cache_);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, Snapshot("1111111111111111111111111111111111111111"));
}

TEST_F(FakeHubCache, ARevisionIsABranchUnderRefsOrACommit) {
  Result<std::string> branch = ResolveHubModel("org/tiny@dev", cache_);
  ASSERT_TRUE(branch.ok()) << branch.status().message();
  EXPECT_EQ(*branch, Snapshot("2222222222222222222222222222222222222222"));
  Result<std::string> commit =
      ResolveHubModel("org/tiny@2222222222222222222222222222222222222222", cache_);
  ASSERT_TRUE(commit.ok()) << commit.status().message();
  EXPECT_EQ(*commit, Snapshot("2222222222222222222222222222222222222222"));
}

TEST_F(FakeHubCache, AModelNotThereSaysWhereLoomLookedAndHowToFetchIt) {
  Result<std::string> dir = ResolveHubModel("org/other", cache_);
  ASSERT_FALSE(dir.ok());
  const std::string& m = dir.status().message();
  EXPECT_NE(m.find(root_.string() + " (HF_HUB_CACHE)"), std::string::npos) << m;
  EXPECT_NE(m.find("models--org--other"), std::string::npos) << m;
  EXPECT_NE(m.find("`huggingface-cli download org/other config.json`"), std::string::npos) << m;
}

TEST_F(FakeHubCache, ARevisionNotThereListsTheSnapshots) {
  Result<std::string> dir = ResolveHubModel("org/tiny@v2", cache_);
  ASSERT_FALSE(dir.ok());
  const std::string& m = dir.status().message();
  EXPECT_NE(m.find("no refs/v2"), std::string::npos) << m;
  EXPECT_NE(m.find("1111111111111111111111111111111111111111, "
                   "2222222222222222222222222222222222222222"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("--revision v2"), std::string::npos) << m;
}

TEST_F(FakeHubCache, ASnapshotWithoutItsConfigIsNamed) {
  Result<std::string> dir =
      ResolveHubModel("org/tiny@3333333333333333333333333333333333333333", cache_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("has no config.json"), std::string::npos)
      << dir.status().message();
  // A link into blobs/ whose blob is gone is a missing config too.
  fs::remove(repo_ / "blobs" / "abc");
  dir = ResolveHubModel("org/tiny", cache_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("has no config.json"), std::string::npos);
}

TEST_F(FakeHubCache, ARefThatPointsOutOfTheCacheIsRefused) {
  Write(repo_ / "refs" / "main", "../../../etc");
  Result<std::string> dir = ResolveHubModel("org/tiny", cache_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("refs/main"), std::string::npos) << dir.status().message();
}

// The shipped fixture (tests/data/hf-hub) holds Meta-Llama-3-8B's config.json, the same file as
// models/llama3-8b.json.
class ShippedHubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("HF_HUB_CACHE");
    if (old != nullptr) saved_ = old;
    setenv("HF_HUB_CACHE", (std::string(LOOM_SOURCE_DIR) + "/tests/data/hf-hub").c_str(), 1);
  }
  void TearDown() override {
    if (saved_) {
      setenv("HF_HUB_CACHE", saved_->c_str(), 1);
    } else {
      unsetenv("HF_HUB_CACHE");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(ShippedHubCache, ModelSpecByHubNameIsTheConfigOfItsSnapshot) {
  Result<ModelSpec> by_name = LoadModelSpec("meta-llama/Meta-Llama-3-8B");
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  Result<ModelSpec> by_file =
      LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-8b.json");
  ASSERT_TRUE(by_file.ok());
  EXPECT_EQ(by_name->name, "Meta-Llama-3-8B");
  EXPECT_NE(by_name->file.find("snapshots/"), std::string::npos);
  Result<ParameterCount> a = CountParameters(*by_name), b = CountParameters(*by_file);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->total, b->total);
}

TEST_F(ShippedHubCache, AScenarioNamesItsModelByHubName) {
  const fs::path file = fs::temp_directory_path() / "loom_hub_scenario.json";
  std::ofstream(file) << R"({"schema": "loom.scenario/1", "model": "meta-llama/Meta-Llama-3-8B",
    "cluster": ")" << LOOM_SOURCE_DIR
                      << R"(/hardware/clusters/dgx-h100.json",
    "strategy": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8, "seq_len": 8192}})";
  Result<Scenario> scenario = LoadScenario(file.string());
  fs::remove(file);
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  EXPECT_EQ(scenario->model_path, "meta-llama/Meta-Llama-3-8B");
  EXPECT_TRUE(LoadModelSpec(scenario->model_path).ok());
}

TEST_F(ShippedHubCache, APathWithoutItsJsonEndingIsToldSo) {
  Result<ModelSpec> spec = LoadModelSpec(std::string(LOOM_SOURCE_DIR) + "/models/llama3-8b");
  // Absolute paths are never hub names; a relative one that misses its .json is hinted at.
  ASSERT_FALSE(spec.ok());
  const fs::path here = fs::current_path();
  fs::current_path(LOOM_SOURCE_DIR);
  spec = LoadModelSpec("models/llama3-8b");
  fs::current_path(here);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("did you mean models/llama3-8b.json?"), std::string::npos)
      << spec.status().message();
}

}  // namespace
}  // namespace loom
