#include "cost/calibration_file.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

TEST(RoundSignificant, KeepsFourDigitsAtAnyScale) {
  EXPECT_EQ(RoundSignificant(0.761575, 4), 0.7616);
  EXPECT_EQ(RoundSignificant(90.49987, 4), 90.5);
  EXPECT_EQ(RoundSignificant(123456.0, 4), 123500.0);
  EXPECT_EQ(RoundSignificant(0.0, 4), 0.0);
}

TEST(WithCalibration, ReplacesInPlaceAppendsNewKeysAndKeepsTheOldSourceOfKeptKeys) {
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(
      R"({"schema": "x", "calibration": {"b": 1, "source": "table 2", "a": 2}, "sources": {}})");
  nlohmann::ordered_json out = WithCalibration(file, {{"a", 3}, {"c", 4}}, "fit of p.json.");
  EXPECT_EQ(
      out.dump(),
      R"({"schema":"x","calibration":{"b":1,"a":3,"c":4,)"
      R"("source":"fit of p.json. Kept from the earlier calibration (b): table 2"},"sources":{}})");
}

// A removed key is gone, and the source does not claim it was kept.
TEST(WithCalibration, RemovesKeysWithoutCallingThemKept) {
  nlohmann::ordered_json file = nlohmann::ordered_json::parse(
      R"({"calibration": {"tile": 64, "b": 1, "a": 2, "source": "table 2"}})");
  nlohmann::ordered_json out =
      WithCalibration(file, {{"a", 3}}, "fit of p.json.", {"tile", "absent"});
  EXPECT_EQ(out.dump(),
            R"({"calibration":{"b":1,"a":3,)"
            R"("source":"fit of p.json. Kept from the earlier calibration (b): table 2"}})");
  out = WithCalibration(file, {{"a", 3}, {"b", 4}}, "fit of p.json.", {"tile"});
  EXPECT_EQ(out["calibration"]["source"], "fit of p.json.");
}

TEST(WithCalibration, NewCalibrationGoesBeforeSources) {
  nlohmann::ordered_json file =
      nlohmann::ordered_json::parse(R"({"schema": "x", "name": "y", "sources": {}})");
  nlohmann::ordered_json out = WithCalibration(file, {{"a", 1}}, "s");
  EXPECT_EQ(out.dump(),
            R"({"schema":"x","name":"y","calibration":{"a":1,"source":"s"},"sources":{}})");
}

}  // namespace
}  // namespace loom
