#include "spec/framework.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

std::string ShippedFramework(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Framework, ShippedProfilesLoadAndRoundTrip) {
  for (const char* name : {"megatron-core", "megatron-core-cudagraphs", "pytorch-eager"}) {
    const std::string path = ShippedFramework(std::string("hardware/frameworks/") + name + ".json");
    Result<FrameworkProfile> p = LoadFrameworkProfile(path);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->name, name);
    EXPECT_GT(p->forward_us_per_op, 0);
    EXPECT_GT(p->backward_us_per_op, 0);
    EXPECT_FALSE(p->source.empty());
    const std::string copy = WriteTemp(std::string(name) + "-copy.json", FrameworkJson(*p).dump(2));
    Result<FrameworkProfile> again = LoadFrameworkProfile(copy);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->forward_us_per_op, p->forward_us_per_op);
    EXPECT_EQ(again->cuda_graph_layers, p->cuda_graph_layers);
    EXPECT_EQ(again->sync_after_p2p, p->sync_after_p2p);
  }
  Result<FrameworkProfile> graphs =
      LoadFrameworkProfile(ShippedFramework("hardware/frameworks/megatron-core-cudagraphs.json"));
  ASSERT_TRUE(graphs.ok());
  EXPECT_TRUE(graphs->cuda_graph_layers);
}

TEST(Framework, BadValuesNameTheFileAndTheKey) {
  const std::string path = WriteTemp("bad-framework.json", R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": -3, "backward_us_per_op": 1, "optimizer_us_per_layer": 0,
             "optimizer_us_fixed": 0, "scale": 0},
    "sync": {"after_p2p": true}, "cuda_graph": {}})");
  Result<FrameworkProfile> p = LoadFrameworkProfile(path);
  ASSERT_FALSE(p.ok());
  const std::string message(p.status().message());
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("forward_us_per_op"), std::string::npos) << message;
  EXPECT_NE(message.find("scale"), std::string::npos) << message;
  EXPECT_NE(message.find("before_optimizer"), std::string::npos) << message;
  EXPECT_NE(message.find("cuda_graph"), std::string::npos) << message;
}

TEST(Framework, MissingHostTimeSaysWhatToGive) {
  const std::string path = WriteTemp("missing-framework.json", R"({
    "schema": "loom.framework/1", "name": "x", "source": "s",
    "host": {"forward_us_per_op": 3, "optimizer_us_per_layer": 0, "optimizer_us_fixed": 0},
    "sync": {"after_p2p": true, "before_optimizer": false}})");
  Result<FrameworkProfile> p = LoadFrameworkProfile(path);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("backward_us_per_op"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("microseconds"), std::string::npos) << p.status().message();
}

TEST(Framework, ResolvesNamesBesideTheClusterFolderPathsAndNone) {
  const std::string cluster = ShippedFramework("hardware/clusters/dgx-h100.json");
  Result<std::optional<FrameworkProfile>> none = ResolveFramework("none", cluster);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Result<std::optional<FrameworkProfile>> named = ResolveFramework("megatron-core", cluster);
  ASSERT_TRUE(named.ok()) << named.status().message();
  ASSERT_TRUE(named->has_value());
  EXPECT_EQ((*named)->name, "megatron-core");
  Result<std::optional<FrameworkProfile>> by_path =
      ResolveFramework(ShippedFramework("hardware/frameworks/pytorch-eager.json"), cluster);
  ASSERT_TRUE(by_path.ok()) << by_path.status().message();
  EXPECT_EQ((*by_path)->name, "pytorch-eager");
  Result<std::optional<FrameworkProfile>> unknown = ResolveFramework("megatron-cor", cluster);
  ASSERT_FALSE(unknown.ok());
  const std::string message(unknown.status().message());
  EXPECT_NE(message.find("megatron-core-cudagraphs"), std::string::npos) << message;
  EXPECT_NE(message.find("none"), std::string::npos) << message;
  EXPECT_FALSE(ResolveFramework("", cluster).ok());
}

}  // namespace
}  // namespace loom
