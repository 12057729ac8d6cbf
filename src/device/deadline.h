#ifndef LOOM_DEVICE_DEADLINE_H_
#define LOOM_DEVICE_DEADLINE_H_

#include <functional>
#include <string>

#include "core/status.h"

namespace loom {

// Wall-clock time, behind an interface so that timeouts are tested without waiting.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSeconds() = 0;
  virtual void SleepSeconds(double seconds) = 0;
};

// std::chrono::steady_clock and std::this_thread::sleep_for.
class SteadyClock : public Clock {
 public:
  double NowSeconds() override;
  void SleepSeconds(double seconds) override;
};

// "<what> did not finish within <timeout_s> s and was aborted; ..." with the usual causes and the
// fix: the DeadlineExceeded of an operation whose deadline passed.
Status DeadlineMissed(const std::string& what, double timeout_s);

// Calls |poll| until it returns true (done) or an error, sleeping between calls (50 us at first,
// doubling up to 10 ms, so that a short operation is not slowed and a long one does not spin).
// Returns poll's error, or DeadlineExceeded("<what> did not finish within <timeout_s> s ...") once
// |timeout_s| have passed since the call without |poll| returning true; |poll| is not called
// after that, the caller aborts what it waited for.
Status WaitUntilDone(const std::function<Result<bool>()>& poll, Clock& clock, double timeout_s,
                     const std::string& what);

}  // namespace loom

#endif  // LOOM_DEVICE_DEADLINE_H_
