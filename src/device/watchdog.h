#ifndef LOOM_DEVICE_WATCHDOG_H_
#define LOOM_DEVICE_WATCHDOG_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "device/deadline.h"

namespace loom {

// A thread that aborts what another thread waits for when it misses its deadline. The waiting
// thread can then block inside the operation (a blocking NCCL call, a spin on a CUDA event)
// instead of polling it with sleeps, and a hang still ends: the abort action (ncclCommAbort) makes
// the operation return. (PyTorch's ProcessGroupNCCL keeps its collective timeouts with a watchdog
// thread too.)
//
// One operation is watched at a time: Arm, run it, Disarm. The thread reads |clock| at least every
// 10 ms while armed, so a deadline is kept to about 10 ms, and a fake clock drives it in tests.
// Thread-safe, but Arm and Disarm are meant for one thread (the one running the operation).
// RunUnlessFired and Fired take no lock: a host that spins on probes does not hold off the abort.
class Watchdog {
 public:
  // Starts the thread. |clock| must be thread-safe and outlive the watchdog.
  explicit Watchdog(Clock& clock);
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Stops the thread; an armed deadline is dropped without calling its action.
  // REQUIRES: no action is running that never returns.
  ~Watchdog();

  // Calls |abort| on the watchdog's thread once |timeout_s| have passed by the clock, unless
  // Disarm comes first. |abort| must not call the watchdog.
  // REQUIRES: not armed (a new watchdog, or Disarm since the last Arm).
  void Arm(double timeout_s, std::function<void()> abort);

  // Ends the watch. Returns true when the abort action ran (waiting until it has returned), false
  // when it did not and never will.
  bool Disarm();

  // Whether the abort action has started since the last Arm.
  bool Fired() const;

  // Runs |probe| on this thread unless the abort action has started, and keeps the action from
  // starting while |probe| runs: a probe of what the action destroys (ncclCommGetAsyncError of
  // the communicator ncclCommAbort frees) is never run during or after it. Returns whether |probe|
  // ran. |probe| must return soon and must not call the watchdog.
  bool RunUnlessFired(const std::function<void()>& probe);

 private:
  enum class State { kIdle, kArmed, kFiring, kFired };

  void Watch();

  Clock& clock_;
  std::atomic<bool> firing_{false};  // the action has started; set before it, cleared by Disarm
  std::atomic<int> probes_{0};       // RunUnlessFired probes running
  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::kIdle;
  double deadline_s_ = 0;  // by clock_, while armed
  std::function<void()> abort_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the fields above are set
};

// Runs |step| on this thread with |watchdog| armed to call |abort| once |timeout_s| have passed.
// Returns OK when |step| succeeded in time. Otherwise |abort| has run exactly once when this
// returns, on the watchdog's thread at the deadline or here after |step|'s error, and the result
// is DeadlineMissed(what, timeout_s), or |step|'s error with "<what>: " in front; either with
// "; aborting failed too: ..." appended when |abort| failed.
// REQUIRES: |watchdog| is not armed.
Status RunOrAbort(Watchdog& watchdog, double timeout_s, const std::string& what,
                  const std::function<Status()>& step, const std::function<Status()>& abort);

}  // namespace loom

#endif  // LOOM_DEVICE_WATCHDOG_H_
