#include "device/watchdog.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "device/manual_clock.h"

namespace loom {
namespace {

using testing::ManualClock;

constexpr auto kPatience = std::chrono::seconds(30);  // a real watchdog acts within 10 ms

// An operation that, like a collective whose peer died, returns only once it is aborted.
class BlockedOperation {
 public:
  // Blocks until Abort; returns false if that takes longer than kPatience.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    return released_.wait_for(lock, kPatience, [this] { return aborts_ > 0; });
  }
  void Abort() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++aborts_;
      abort_thread_ = std::this_thread::get_id();
    }
    released_.notify_all();
  }
  int Aborts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborts_;
  }
  std::thread::id AbortThread() {
    std::lock_guard<std::mutex> lock(mutex_);
    return abort_thread_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  int aborts_ = 0;
  std::thread::id abort_thread_;
};

TEST(Watchdog, AbortsABlockedOperationOnceItsDeadlinePasses) {
  ManualClock clock;
  Watchdog watchdog(clock);
  BlockedOperation operation;
  watchdog.Arm(5, [&] { operation.Abort(); });
  clock.Advance(4.5);
  EXPECT_FALSE(watchdog.Fired());  // 0.5 s left by the clock: the watchdog waits
  clock.Advance(1);
  ASSERT_TRUE(operation.Wait()) << "the watchdog did not abort within 30 s of the deadline";
  EXPECT_TRUE(watchdog.Fired());
  EXPECT_TRUE(watchdog.Disarm());
  EXPECT_EQ(operation.Aborts(), 1);
  EXPECT_NE(operation.AbortThread(), std::this_thread::get_id());  // from the watchdog's own thread
}

TEST(Watchdog, DisarmedInTimeNeverAborts) {
  ManualClock clock;
  Watchdog watchdog(clock);
  std::atomic<int> first_aborts{0};
  watchdog.Arm(5, [&] { ++first_aborts; });
  clock.Advance(1);
  EXPECT_FALSE(watchdog.Disarm());
  clock.Advance(100);  // far past the first deadline
  std::this_thread::sleep_for(
      std::chrono::milliseconds(50));  // a few of the watchdog's 10 ms looks
  // A second watch fires; the watchdog has run past the first deadline by then and left it alone.
  BlockedOperation second;
  watchdog.Arm(5, [&] { second.Abort(); });
  clock.Advance(10);
  ASSERT_TRUE(second.Wait());
  EXPECT_TRUE(watchdog.Disarm());
  EXPECT_EQ(first_aborts.load(), 0);
  EXPECT_EQ(second.Aborts(), 1);
}

TEST(Watchdog, NeverAbortsWhileAProbeRunsNorProbesAfterward) {
  ManualClock clock;
  Watchdog watchdog(clock);
  BlockedOperation operation;
  watchdog.Arm(5, [&] { operation.Abort(); });
  bool ran = false;
  EXPECT_TRUE(watchdog.RunUnlessFired([&] {
    ran = true;
    clock.Advance(10);
    // The deadline has passed, but the abort waits for the probe (ncclCommAbort would free the
    // communicator the probe reads).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(operation.Aborts(), 0);
  }));
  EXPECT_TRUE(ran);
  ASSERT_TRUE(operation.Wait());
  EXPECT_TRUE(watchdog.Fired());
  bool probed_after_abort = false;
  EXPECT_FALSE(watchdog.RunUnlessFired([&] { probed_after_abort = true; }));
  EXPECT_FALSE(probed_after_abort);
  EXPECT_TRUE(watchdog.Disarm());
  EXPECT_FALSE(watchdog.Fired());  // disarmed: the next watch starts afresh
}

TEST(Watchdog, RunOrAbortDeadlineAbortsABlockedStepAndNamesTheOperation) {
  ManualClock clock;
  Watchdog watchdog(clock);
  BlockedOperation operation;
  const Status s = RunOrAbort(
      watchdog, 5, "all_reduce of 1024 B over group world (8 ranks)",
      [&] {
        clock.Advance(6);
        return operation.Wait() ? Status::Internal("ncclGroupEnd: aborted") : Status::Ok();
      },
      [&] {
        operation.Abort();
        return Status::Ok();
      });
  ASSERT_EQ(s.code(), Status::Code::kDeadlineExceeded) << s.ToString();
  EXPECT_EQ(s.message().rfind(
                "all_reduce of 1024 B over group world (8 ranks) did not finish within 5 s and was "
                "aborted; a rank may have died",
                0),
            0u)
      << s.message();
  EXPECT_EQ(operation.Aborts(), 1);
}

TEST(Watchdog, RunOrAbortStepErrorAbortsOnceHereWithTheOperationInFront) {
  ManualClock clock;
  Watchdog watchdog(clock);
  BlockedOperation operation;
  const Status s = RunOrAbort(
      watchdog, 5, "closing the rails communicator",
      [] { return Status::ResourceExhausted("ncclCommFinalize(comm): out of memory"); },
      [&] {
        operation.Abort();
        return Status::Internal("ncclCommAbort(comm): invalid usage");
      });
  EXPECT_EQ(s.code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(
      s.message(),
      "closing the rails communicator: ncclCommFinalize(comm): out of memory; aborting failed too: "
      "ncclCommAbort(comm): invalid usage");
  EXPECT_EQ(operation.Aborts(), 1);
  EXPECT_EQ(operation.AbortThread(), std::this_thread::get_id());
}

TEST(Watchdog, RunOrAbortStepInTimeNeverAborts) {
  ManualClock clock;
  Watchdog watchdog(clock);
  int aborts = 0;
  const Status s = RunOrAbort(
      watchdog, 5, "x",
      [&] {
        clock.Advance(4);
        return Status::Ok();
      },
      [&] {
        ++aborts;
        return Status::Ok();
      });
  EXPECT_TRUE(s.ok()) << s.ToString();
  clock.Advance(100);
  EXPECT_FALSE(watchdog.Fired());
  EXPECT_EQ(aborts, 0);
}

}  // namespace
}  // namespace loom
