#include "probe/collective_timing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "device/manual_clock.h"

namespace loom {
namespace {

using testing::ManualClock;

constexpr char kWhat[] = "all_gather of 65536 B over group intra_node (8 ranks)";

// A stream that runs queued operation i in 10 + i us, back to back. The GPU advances one operation
// each time the host polls Reached, so a host that did not poll would wait forever; a marker is
// reached once the operations before it are done. Every call is logged ("E", "M0", "R1", "T01",
// "A"), consecutive polls of one marker once.
class FakeQueue : public CollectiveQueue {
 public:
  explicit FakeQueue(ManualClock& clock) : clock_(clock) {}

  Status Enqueue() override {
    Log("E");
    const int64_t index = queued_++;
    if (index == block_enqueue_at) {
      clock_.Advance(block_advance_s);
      std::unique_lock<std::mutex> lock(mutex_);
      released_.wait_for(lock, std::chrono::seconds(30), [this] { return aborts_ > 0; });
      return Status::Internal("ncclGroupEnd: aborted while connecting");
    }
    if (index == fail_enqueue_at) return Status::ResourceExhausted("ncclAllGather: out of memory");
    max_batches_ahead_ = std::max(max_batches_ahead_, BatchesAhead());
    return Status::Ok();
  }
  Status Mark(int64_t k) override {
    Log("M" + std::to_string(k));
    if (markers_.size() <= static_cast<size_t>(k)) markers_.resize(static_cast<size_t>(k) + 1, -1);
    markers_[static_cast<size_t>(k)] = queued_;
    return Status::Ok();
  }
  Result<bool> Reached(int64_t k) override {
    if (in_reached_.exchange(true)) overlapped_ = true;
    const std::string entry = "R" + std::to_string(k);
    if (log_.empty() || log_.back() != entry) Log(entry);
    ++polls_;
    if (done_ < queued_ && done_ < hang_at) ++done_;
    if (done_ == hang_at) {
      // Hung: each poll takes a while, as a slow ncclCommGetAsyncError would, so that an abort
      // let in during a poll would be seen.
      clock_.Advance(0.1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Result<bool> reached = done_ >= markers_[static_cast<size_t>(k)];
    if (*reached && k > reached_) reached_ = k;
    if (k == error_at_marker)
      reached = Status::Internal("NCCL reported an asynchronous error: remote process exited");
    in_reached_ = false;
    return reached;
  }
  Result<double> MicrosecondsBetween(int64_t from, int64_t to) override {
    Log("T" + std::to_string(from) + std::to_string(to));
    return EndUs(markers_[static_cast<size_t>(to)]) - EndUs(markers_[static_cast<size_t>(from)]);
  }
  Status Abort() override {
    if (in_reached_) overlapped_ = true;
    Log("A");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++aborts_;
      abort_thread_ = std::this_thread::get_id();
    }
    released_.notify_all();
    return Status::Ok();
  }

  // The end of operation |count| - 1 on the GPU, in us: operations 0..count-1 run back to back.
  static double EndUs(int64_t count) {
    return 10.0 * static_cast<double>(count) + count * (count - 1) / 2.0;
  }

  // "E E M0 R0 ...": the calls so far, with the calls after an abort marked by "!".
  std::string Log() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const std::string& entry : log_) text += (text.empty() ? "" : " ") + entry;
    return text;
  }
  int Aborts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return aborts_;
  }
  std::thread::id AbortThread() {
    std::lock_guard<std::mutex> lock(mutex_);
    return abort_thread_;
  }

  int64_t hang_at = int64_t{1} << 40;  // operations from this index on never finish
  int64_t block_enqueue_at = -1;       // this Enqueue blocks until Abort
  double block_advance_s = 0;          // the clock's move as it blocks
  int64_t fail_enqueue_at = -1;        // this Enqueue fails
  int64_t error_at_marker = -1;        // polling this marker reports an asynchronous error
  int64_t polls_ = 0;
  int64_t max_batches_ahead_ = 0;  // batches queued and not seen done, when an operation is queued
  std::atomic<bool> overlapped_{false};  // Abort and Reached ran at once

 private:
  // Batches whose end marker is placed and not yet seen reached by the host.
  int64_t BatchesAhead() const {
    int64_t ahead = 0;
    for (size_t k = static_cast<size_t>(reached_) + 1; k < markers_.size(); ++k)
      ahead += markers_[k] >= 0 ? 1 : 0;
    return ahead;
  }
  void Log(const std::string& entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_.push_back(aborts_ > 0 && entry != "A" ? "!" + entry : entry);
  }

  ManualClock& clock_;
  std::mutex mutex_;
  std::condition_variable released_;
  std::vector<std::string> log_;
  std::vector<int64_t> markers_;  // operations queued before marker k
  int64_t queued_ = 0;
  int64_t done_ = 0;
  int64_t reached_ = 0;  // the last batch marker the host saw reached (0: none)
  int aborts_ = 0;
  std::thread::id abort_thread_;
  std::atomic<bool> in_reached_{false};
};

TimingPlan Timing(int64_t warmup, int64_t repeats, int64_t operations_per_batch) {
  return TimingPlan{warmup, repeats, operations_per_batch, /*timeout_s=*/2, kWhat};
}

TEST(CollectiveTiming, FirstWarmupAloneThenBackToBackBatchesBetweenMarkers) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(3, 2, 2));
  ASSERT_TRUE(times.ok()) << times.status().ToString();
  EXPECT_EQ(queue.Log(), "E M0 R0 E E M0 E E M1 E E M2 R1 R2 T01 T12");
  // Batch k runs operations 3 + 2k and 4 + 2k (after 3 warm-ups), of 13 + 2k and 14 + 2k us.
  EXPECT_EQ(*times, (std::vector<double>{13.5, 15.5}));
  EXPECT_EQ(queue.Aborts(), 0);
}

TEST(CollectiveTiming, NoWarmupStartsWithTheFirstBatch) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(0, 1, 3));
  ASSERT_TRUE(times.ok()) << times.status().ToString();
  EXPECT_EQ(queue.Log(), "M0 E E E M1 R1 T01");
  EXPECT_EQ(*times, (std::vector<double>{11.0}));
}

TEST(CollectiveTiming, PollsUntilEachBatchEndsAndKeepsAtMostTwoBatchesQueued) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(5, 20, 20));
  ASSERT_TRUE(times.ok()) << times.status().ToString();
  ASSERT_EQ(times->size(), 20u);
  EXPECT_DOUBLE_EQ(times->back(), 10 + 5 + 19 * 20 + 9.5);
  // The GPU moves one operation per poll, so every operation was polled for: 405 of them.
  EXPECT_GE(queue.polls_, 405);
  // Batch k is queued only once batch k-2 is done: one batch ahead of the one being queued.
  EXPECT_EQ(queue.max_batches_ahead_, 1);
}

TEST(CollectiveTiming, HungBatchIsAbortedByTheWatchdogAndNamed) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  queue.hang_at = 5 + 2 * 20 + 7;  // inside batch 2
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(5, 20, 20));
  ASSERT_EQ(times.status().code(), Status::Code::kDeadlineExceeded) << times.status().ToString();
  EXPECT_EQ(times.status().message().rfind(
                std::string(kWhat) + " did not finish within 2 s and was aborted", 0),
            0u)
      << times.status().message();
  EXPECT_EQ(queue.Aborts(), 1);
  EXPECT_NE(queue.AbortThread(), std::this_thread::get_id());
  EXPECT_FALSE(queue.overlapped_.load());
  const std::string log = queue.Log();
  EXPECT_EQ(log.find('!'), std::string::npos) << "called after the abort: " << log;
  // Hung waiting for the end of batch 2 (marker 3), with batch 3 queued behind it.
  EXPECT_NE(log.find("M4 R3 A"), std::string::npos) << log;
}

TEST(CollectiveTiming, OperationBlockedInsideNcclIsAbortedByTheWatchdog) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  queue.block_enqueue_at = 0;  // the first warm-up operation, as a peer that never connects
  queue.block_advance_s = 3;
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(5, 20, 20));
  ASSERT_EQ(times.status().code(), Status::Code::kDeadlineExceeded) << times.status().ToString();
  EXPECT_EQ(queue.Aborts(), 1);
  EXPECT_EQ(queue.Log(), "E A");
}

TEST(CollectiveTiming, AsynchronousErrorAbortsOnceAndNamesThePoint) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  queue.error_at_marker = 1;
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(1, 3, 2));
  ASSERT_EQ(times.status().code(), Status::Code::kInternal);
  EXPECT_EQ(times.status().message(),
            std::string(kWhat) + ": NCCL reported an asynchronous error: remote process exited");
  EXPECT_EQ(queue.Aborts(), 1);
  EXPECT_EQ(queue.AbortThread(), std::this_thread::get_id());
  EXPECT_EQ(queue.Log(), "E M0 R0 M0 E E M1 E E M2 R1 A");
}

TEST(CollectiveTiming, EnqueueErrorKeepsItsCodeAndAbortsOnce) {
  ManualClock clock;
  Watchdog watchdog(clock);
  FakeQueue queue(clock);
  queue.fail_enqueue_at = 2;
  Result<std::vector<double>> times = TimeCollective(queue, watchdog, Timing(1, 3, 2));
  ASSERT_EQ(times.status().code(), Status::Code::kResourceExhausted);
  EXPECT_EQ(times.status().message(), std::string(kWhat) + ": ncclAllGather: out of memory");
  EXPECT_EQ(queue.Aborts(), 1);
  EXPECT_EQ(queue.Log(), "E M0 R0 M0 E E A");
}

}  // namespace
}  // namespace loom
