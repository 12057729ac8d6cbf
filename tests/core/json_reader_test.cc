#include "core/json_reader.h"

#include <fstream>

#include <gtest/gtest.h>

namespace loom {
namespace {

using nlohmann::json;

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ReadJsonObjectFile, MissingFileNamesThePath) {
  Result<json> r = ReadJsonObjectFile("/nonexistent/dir/model.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.json: cannot open"), std::string::npos);
  EXPECT_NE(r.status().message().find("check the path"), std::string::npos);
}

TEST(ReadJsonObjectFile, SyntaxErrorNamesFileAndPosition) {
  std::string path = WriteTemp("broken.json", "{\"hidden_size\": 4096,,}");
  Result<json> r = ReadJsonObjectFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path + ": not valid JSON"), std::string::npos);
  EXPECT_NE(r.status().message().find(": not valid JSON: parse error at line 1, column 22"), std::string::npos) << r.status().message();
}

TEST(ReadJsonObjectFile, TopLevelMustBeAnObject) {
  std::string path = WriteTemp("array.json", "[1, 2]");
  Result<json> r = ReadJsonObjectFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("top level is a JSON array"), std::string::npos);
}

TEST(JsonReader, ReadsTypedValues) {
  json j = {{"n", 8}, {"bw_GBps", 450.5}, {"fabric", "nvswitch"}, {"flag", true}, {"name", "x"}};
  JsonReader r(j, "f.json");
  EXPECT_EQ(r.Int("n"), 8);
  EXPECT_DOUBLE_EQ(r.PositiveNumber("bw_GBps"), 450.5);
  EXPECT_EQ(r.OneOf("fabric", {"nvswitch", "pcie"}), "nvswitch");
  EXPECT_EQ(r.OptionalBool("flag"), true);
  EXPECT_EQ(r.String("name"), "x");
  EXPECT_EQ(r.OptionalInt("absent"), std::nullopt);
  EXPECT_TRUE(r.Finish(UnknownKeys::kError).ok());
}

TEST(JsonReader, ReportsEveryProblemWithFileAndKey) {
  json j = {{"hidden_size", "4096"}, {"num_layers", 0}, {"heads", -2}, {"fabric", "nvlink"}};
  JsonReader r(j, "models/x.json");
  r.Int("hidden_size");
  r.Int("num_layers");
  r.Int("heads");
  r.Int("vocab_size");
  r.OneOf("fabric", {"nvswitch", "pcie"});
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("models/x.json: hidden_size: must be an integer, got string \"4096\""), std::string::npos) << m;
  EXPECT_NE(m.find("models/x.json: num_layers: is 0; it must be at least 1"), std::string::npos) << m;
  EXPECT_NE(m.find("models/x.json: heads: is -2; it must be at least 1"), std::string::npos) << m;
  EXPECT_NE(m.find("models/x.json: vocab_size: is missing; add \"vocab_size\": <integer>"), std::string::npos) << m;
  EXPECT_NE(m.find("models/x.json: fabric: is \"nvlink\"; it must be one of \"nvswitch\", \"pcie\""),
            std::string::npos) << m;
}

TEST(JsonReader, RejectsIntegersBeyond64Bits) {
  json j = json::parse("{\"n\": 18446744073709551615}");
  JsonReader r(j, "f.json");
  r.Int("n");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("f.json: n: 18446744073709551615 does not fit in 64 bits"), std::string::npos)
      << s.message();
}

TEST(JsonReader, UnknownKeyIsAnErrorWithSuggestion) {
  json j = {{"gpus_per_nod", 8}, {"colour", "red"}};
  JsonReader r(j, "c.json");
  r.OptionalInt("gpus_per_node");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("c.json: gpus_per_nod: is not a known key; did you mean \"gpus_per_node\"?"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("c.json: colour: is not a known key; remove it"), std::string::npos);
}

TEST(JsonReader, ForeignKeysPassButTyposDoNot) {
  json j = {{"num_hidden_layers", 4}, {"rope_theta", 10000.0}, {"num_hiden_layers", 4}};
  JsonReader r(j, "config.json");
  r.Int("num_hidden_layers");
  Status s = r.Finish(UnknownKeys::kRejectTypos);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_hiden_layers: looks like a misspelling of \"num_hidden_layers\""),
            std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("rope_theta"), std::string::npos);
}

TEST(JsonReader, NestedObjectErrorsCarryThePath) {
  json j = {{"intra_node", {{"bandwidth_GBps", -1}, {"latncy_us", 2}}}};
  JsonReader r(j, "c.json");
  JsonReader& intra = r.Object("intra_node");
  intra.OptionalPositiveNumber("bandwidth_GBps");
  intra.OptionalPositiveNumber("latency_us");
  r.Object("host");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("c.json: intra_node.bandwidth_GBps: is -1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("c.json: intra_node.latncy_us: is not a known key; did you mean \"latency_us\"?"),
            std::string::npos) << s.message();
  EXPECT_NE(s.message().find("c.json: host: is missing"), std::string::npos) << s.message();
}

TEST(EditDistance, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
}

}  // namespace
}  // namespace loom
