#include "core/json_reader.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
  EXPECT_NE(r.status().message().find("/nonexistent/dir/model.json: no such file"),
            std::string::npos);
  EXPECT_NE(r.status().message().find("check the path"), std::string::npos);
}

TEST(ReadJsonObjectFile, SyntaxErrorNamesFileAndPosition) {
  std::string path = WriteTemp("broken.json", "{\"hidden_size\": 4096,,}");
  Result<json> r = ReadJsonObjectFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path + ": not valid JSON"), std::string::npos);
  EXPECT_NE(r.status().message().find(": not valid JSON: parse error at line 1, column 22"),
            std::string::npos)
      << r.status().message();
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
  EXPECT_NE(m.find("models/x.json: hidden_size: must be an integer, got string \"4096\""),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("models/x.json: num_layers: is 0; it must be at least 1"), std::string::npos)
      << m;
  EXPECT_NE(m.find("models/x.json: heads: is -2; it must be at least 1"), std::string::npos) << m;
  EXPECT_NE(m.find("models/x.json: vocab_size: is missing; add \"vocab_size\": <integer>"),
            std::string::npos)
      << m;
  EXPECT_NE(
      m.find("models/x.json: fabric: is \"nvlink\"; it must be one of \"nvswitch\", \"pcie\""),
      std::string::npos)
      << m;
}

TEST(JsonReader, RejectsIntegersBeyond64Bits) {
  json j = json::parse("{\"n\": 18446744073709551615}");
  JsonReader r(j, "f.json");
  r.Int("n");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("f.json: n: 18446744073709551615 does not fit in 64 bits"),
            std::string::npos)
      << s.message();
}

TEST(JsonReader, UnknownKeyIsAnErrorWithSuggestion) {
  json j = {{"gpus_per_nod", 8}, {"colour", "red"}};
  JsonReader r(j, "c.json");
  r.OptionalInt("gpus_per_node");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.message().find("c.json: gpus_per_nod: is not a known key; did you mean \"gpus_per_node\"?"),
      std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("c.json: colour: is not a known key; remove it"), std::string::npos);
}

TEST(JsonReader, ForeignKeysPassButTyposDoNot) {
  json j = {{"num_hidden_layers", 4}, {"rope_theta", 10000.0}, {"num_hiden_layers", 4}};
  JsonReader r(j, "config.json");
  r.Int("num_hidden_layers");
  Status s = r.Finish(UnknownKeys::kRejectTypos);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("num_hiden_layers: looks like a misspelling of \"num_hidden_layers\""),
            std::string::npos)
      << s.message();
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
  EXPECT_NE(s.message().find("c.json: intra_node.bandwidth_GBps: is -1"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(
                "c.json: intra_node.latncy_us: is not a known key; did you mean \"latency_us\"?"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("c.json: host: is missing"), std::string::npos) << s.message();
}

TEST(EditDistance, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
}

TEST(ParseJson, ANumberOutOfRangeIsAnErrorNotAnAbort) {
  Result<json> r = ParseJson("{\"hidden_size\": 1e999}", "m.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "m.json: not valid JSON for loom: number overflow parsing '1e999'; numbers must "
            "fit a double (at most about 1.8e308)");
}

// 100k levels once overflowed the stack when an error printed the value.
TEST(ParseJson, NestingIsBounded) {
  std::string deep =
      "{\"a\": {\"b\": " + std::string(100000, '[') + std::string(100000, ']') + "}}";
  Result<json> r = ParseJson(deep, "m.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "m.json: arrays and objects nest deeper than 64 levels (at a.b); loom's files nest "
            "a few levels, so this is not one");
  std::string fine = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(fine, "ok.json").ok());
}

TEST(ParseJson, AKeyTwiceInOneObjectIsAnErrorNamingItsPath) {
  Result<json> top = ParseJson("{\"tp\": 2, \"pp\": 1, \"tp\": 4}", "s.json");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.status().message(),
            "s.json: key \"tp\" appears twice; JSON does not say which one counts, so keep "
            "only the one you mean");
  Result<json> nested = ParseJson("{\"strategy\": {\"tp\": 2, \"tp\": 2}}", "s.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("key \"tp\" appears twice in strategy;"),
            std::string::npos)
      << nested.status().message();
  // The same key in two objects, or in objects of an array, is fine.
  EXPECT_TRUE(ParseJson("{\"a\": {\"tp\": 1}, \"b\": {\"tp\": 1}, \"c\": [{\"x\": 1}, {\"x\": 2}]}",
                        "s.json")
                  .ok());
  Result<nlohmann::ordered_json> ordered =
      ParseOrderedJson("{\"b\": 1, \"a\": 2, \"b\": 3}", "o.json");
  EXPECT_FALSE(ordered.ok());
}

// A 10 MB key is quoted by its start, and finding the nearest known key stays cheap.
TEST(JsonReader, AnAbsurdlyLongUnknownKeyIsQuotedShort) {
  json object = {{"hidden_size", 1}, {std::string(10'000'000, 'k'), 1}};
  JsonReader r(object, "m.json");
  (void)r.Int("hidden_size");
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_LT(s.message().size(), 400u) << s.message().substr(0, 400);
  EXPECT_NE(s.message().find("kkk... (10000000 bytes): is not a known key"), std::string::npos);
}

TEST(JsonReader, ErrorsAreCappedAtAScreenful) {
  json object = json::object();
  for (int i = 0; i < 1000; ++i) object["unknown_" + std::to_string(i)] = i;
  JsonReader r(object, "m.json");
  Status s = r.Finish(UnknownKeys::kError);
  EXPECT_NE(s.message().find("m.json: ... and 980 more problems like these"), std::string::npos);
}

TEST(JsonReader, NumbersBeyondTheirPhysicalRangeNameTheBound) {
  json object = {{"bandwidth_GBps", 1e-300}, {"latency_us", 1e300}};
  JsonReader r(object, "c.json");
  (void)r.PositiveNumber("bandwidth_GBps", {1e-2, 1e6});
  (void)r.OptionalNonNegativeNumber("latency_us", {0, 1e6});
  Status s = r.Finish(UnknownKeys::kError);
  EXPECT_NE(
      s.message().find(
          "c.json: bandwidth_GBps: is 1e-300; it must be between 0.01 and 1e+06 (check its unit)"),
      std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("c.json: latency_us: is 1e+300; it must be between 0 and 1e+06"),
            std::string::npos)
      << s.message();
}

// What a reader read past, named by key path in the object's order: unread keys whole, the keys
// of an object read with Object one by one, Allow counting as read.
TEST(JsonReader, UnreadKeysNameWhatNoGetterAskedFor) {
  const nlohmann::json object = nlohmann::json::parse(
      R"({"a": 1, "b": {"c": 2, "d": [3]}, "e": {"f": 4}, "g": "x", "h": true})");
  JsonReader r(object, "f.json");
  r.OptionalInt("a");
  JsonReader& b = r.Object("b");
  b.OptionalInt("c");
  r.Allow("h");
  std::vector<std::string> unread;
  for (const auto& [key, value] : r.UnreadKeys()) unread.push_back(key + " " + value->dump());
  EXPECT_EQ(unread, (std::vector<std::string>{"b.d [3]", "e {\"f\":4}", "g \"x\""}));
}

}  // namespace
}  // namespace loom
