#ifndef LOOM_TESTS_DEVICE_MANUAL_CLOCK_H_
#define LOOM_TESTS_DEVICE_MANUAL_CLOCK_H_

#include <atomic>

#include "device/deadline.h"

namespace loom::testing {

// A clock that moves only when a test (or a fake it drives) moves it; thread-safe, so that a
// Watchdog's thread reads it while the test moves it.
class ManualClock : public Clock {
 public:
  double NowSeconds() override { return now_s_.load(); }
  void SleepSeconds(double seconds) override { Advance(seconds); }
  void Advance(double seconds) { now_s_.fetch_add(seconds); }

 private:
  std::atomic<double> now_s_{1000};
};

}  // namespace loom::testing

#endif  // LOOM_TESTS_DEVICE_MANUAL_CLOCK_H_
