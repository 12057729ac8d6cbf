#include "core/formatted.h"

#include <string>

#include <gtest/gtest.h>

namespace loom {
namespace {

TEST(Formatted, PrintsAnyLength) {
  EXPECT_EQ(Formatted("%5.1f|%s", 2.25, "x"), "  2.2|x");
  const std::string long_text(300, 'a');
  EXPECT_EQ(Formatted("%s!", long_text.c_str()), long_text + "!");
}

TEST(Formatted, StrCatStreamsItsArgumentsInOrder) {
  EXPECT_EQ(StrCat("--tp ", 8, ": hidden_size (", int64_t{5120}, ") of ", std::string("m.json")),
            "--tp 8: hidden_size (5120) of m.json");
  EXPECT_EQ(StrCat(), "");
  EXPECT_EQ(StrCat(0.5, 'c'), "0.5c");
}

TEST(Formatted, FixedRoundsAndKeepsLargeValuesWhole) {
  EXPECT_EQ(Fixed(2.345, 1), "2.3");
  EXPECT_EQ(Fixed(-1.0, 3), "-1.000");
  EXPECT_EQ(Fixed(1e40, 0).size(), 41u);
}

TEST(Formatted, PercentHasOneDecimalAndNoNegativeZero) {
  EXPECT_EQ(Percent(0.1234), "12.3%");
  EXPECT_EQ(Percent(-0.05), "-5.0%");
  EXPECT_EQ(Percent(1.5), "150.0%");
  EXPECT_EQ(Percent(-0.0004), "0.0%");
  EXPECT_EQ(Percent(0), "0.0%");
}

TEST(Formatted, WholeBytesNamesMebibytesWhenWhole) {
  EXPECT_EQ(WholeBytes(int64_t{256} << 20), "256 MiB");
  EXPECT_EQ(WholeBytes(1000), "1000 B");
  EXPECT_EQ(WholeBytes(0), "0 B");
}

}  // namespace
}  // namespace loom
