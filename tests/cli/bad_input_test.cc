// Bad and hostile input to every loom command (issue 20). Each class runs the real binary as a
// subprocess in a scratch copy of the shipped files with one thing broken (tests/cli/bad_input/
// holds the table), under a deadline. A class passes when loom exits with the code the README
// promises (1: bad input, 2: a command line that does not parse), its message names the file and
// the key or flag at fault, and it neither crashes (a signal) nor hangs (the deadline).

#include <algorithm>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/bad_input/cases.h"

namespace loom::bad_input {
namespace {

// An error message quotes a bounded part of its input, whatever the input's size.
constexpr size_t kMaxStderrBytes = 64 * 1024;

std::vector<Case> AllCases() {
  std::vector<Case> all;
  for (auto group : {MalformedJsonCases, KeyCases, SizeCases, FileKindCases, FlagCases,
                     MeasurementCases, OutputCases, PlanFileCases}) {
    for (Case& c : group()) all.push_back(std::move(c));
  }
  return all;
}

// True when |text| holds one of the '|'-separated |alternatives|.
bool HasAny(const std::string& text, const std::string& alternatives) {
  std::stringstream list(alternatives);
  for (std::string one; std::getline(list, one, '|');) {
    if (text.find(one) != std::string::npos) return true;
  }
  return false;
}

std::string FirstLine(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

std::string Status(const Outcome& o) {
  if (o.timed_out) return "timed out after " + std::to_string(kDeadline.count()) + " s";
  if (o.signaled)
    return "killed by signal " + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")";
  return "exit " + std::to_string(o.code);
}

// The command, what it did and its stderr, for failure messages.
std::string Describe(const Case& c, const Outcome& o) {
  std::string line = "loom";
  for (const std::string& a : c.args) line += " " + (a.size() > 80 ? a.substr(0, 60) + "..." : a);
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.2f", o.wall_s);
  return line + "\n  -> " + Status(o) + " in " + wall + " s\n  stderr: " + o.err.substr(0, 2000) +
         (o.err.size() > 2000 ? "..." : "");
}

class BadInput : public testing::TestWithParam<Case> {};

TEST_P(BadInput, IsRefusedWithAMessageNamingTheInput) {
  const Case& c = GetParam();
  Workdir wd;
  if (c.setup) c.setup(wd);
  ASSERT_FALSE(HasFatalFailure());
  const Outcome o = wd.Loom(c.args);
  const std::string what = Describe(c, o);
  // One line per class, so that a run of the suite is also the list of what loom answers today.
  std::cout << "[ outcome  ] " << c.name << ": " << Status(o) << ": " << FirstLine(o.err) << "\n";
  ASSERT_FALSE(o.timed_out) << "hang: " << what;
  ASSERT_FALSE(o.signaled) << "crash: " << what;
  ASSERT_LT(o.code, 125) << "crash (or the binary did not start): " << what;
  EXPECT_TRUE(std::find(c.exits.begin(), c.exits.end(), o.code) != c.exits.end())
      << "wrong exit code: " << what;
  if (c.max_s > 0) EXPECT_LE(o.wall_s, c.max_s) << "too slow: " << what;
  if (o.code != 0) {
    if (o.code == 1) EXPECT_NE(o.err.find("loom: error: "), std::string::npos) << what;
    for (const std::string& wanted : c.err_has) {
      EXPECT_TRUE(HasAny(o.err, wanted)) << "stderr does not name \"" << wanted << "\": " << what;
    }
  }
  for (const std::string& unwanted : c.err_lacks) {
    EXPECT_FALSE(HasAny(o.err, unwanted)) << "stderr names \"" << unwanted << "\": " << what;
  }
  // CLI11's range message quotes DBL_MAX (1.79769e+308) for a side left open.
  EXPECT_FALSE(HasAny(o.err, "1797693|1.79769e+308")) << what;
  EXPECT_FALSE(HasAny(o.err, "terminate called|runtime error:|AddressSanitizer")) << what;
  // The command boundary's catch-all: an exception no reader turned into a message naming the
  // input.
  EXPECT_FALSE(HasAny(o.err, "unexpected failure|this is a bug")) << what;
  EXPECT_LE(o.err.size(), kMaxStderrBytes) << "the message quotes too much of its input: " << what;
  if (c.check) c.check(wd, o);
}

INSTANTIATE_TEST_SUITE_P(Classes, BadInput, testing::ValuesIn(AllCases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace loom::bad_input
