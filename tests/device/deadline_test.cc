#include "device/deadline.h"

#include <gtest/gtest.h>

namespace loom {
namespace {

// Time moves only when the code under test sleeps.
class FakeClock : public Clock {
 public:
  double NowSeconds() override { return now; }
  void SleepSeconds(double seconds) override {
    now += seconds;
    sleeps.push_back(seconds);
  }
  double now = 1000;
  std::vector<double> sleeps;
};

TEST(WaitUntilDone, ReturnsOnceThePollSaysDone) {
  FakeClock clock;
  int polls = 0;
  Status s = WaitUntilDone([&]() -> Result<bool> { return ++polls == 3; }, clock, 10, "all_reduce");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(polls, 3);
  EXPECT_EQ(clock.sleeps, (std::vector<double>{50e-6, 100e-6}));
}

TEST(WaitUntilDone, HangIsADeadlineErrorNamingTheOperation) {
  FakeClock clock;
  Status s = WaitUntilDone([]() -> Result<bool> { return false; }, clock, 5,
                           "all_reduce of 1073741824 B over group intra_node (8 ranks)");
  ASSERT_EQ(s.code(), Status::Code::kDeadlineExceeded);
  EXPECT_EQ(
      s.message().rfind(
          "all_reduce of 1073741824 B over group intra_node (8 ranks) did not finish within 5 s "
          "and was aborted",
          0),
      0u)
      << s.message();
  EXPECT_GE(clock.now - 1000, 5);
  EXPECT_LT(clock.now - 1000, 5.02);  // sleeps are capped at 10 ms
}

TEST(WaitUntilDone, PollErrorIsReturnedAtOnce) {
  FakeClock clock;
  Status s = WaitUntilDone(
      []() -> Result<bool> { return Status::Internal("ncclCommGetAsyncError: remote error"); },
      clock, 5, "x");
  EXPECT_EQ(s.code(), Status::Code::kInternal);
  EXPECT_TRUE(clock.sleeps.empty());
}

}  // namespace
}  // namespace loom
