#include "device/watchdog.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>
#include <utility>

namespace loom {

namespace {

// How often the armed watchdog reads the clock: the slack of a deadline, and how soon a fake
// clock moved by a test is noticed.
constexpr double kPollS = 0.01;

Status WithAbortFailure(const Status& status, const Status& aborted) {
  if (aborted.ok()) return status;
  return status.WithSuffix("; aborting failed too: " + aborted.message());
}

}  // namespace

Watchdog::Watchdog(Clock& clock) : clock_(clock), thread_([this] { Watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::Arm(double timeout_s, std::function<void()> abort) {
  const double now_s = clock_.NowSeconds();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    assert(state_ == State::kIdle && "Watchdog::Arm while armed: Disarm first");
    deadline_s_ = now_s + timeout_s;
    abort_ = std::move(abort);
    state_ = State::kArmed;
  }
  changed_.notify_all();
}

bool Watchdog::Disarm() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return state_ != State::kFiring; });
  const bool fired = state_ == State::kFired;
  state_ = State::kIdle;
  abort_ = nullptr;
  firing_.store(false);
  return fired;
}

bool Watchdog::Fired() const { return firing_.load(); }

// Dekker's handshake, lock-free on this side so that a host spinning on probes never holds off the
// watchdog's thread: this thread announces the probe, then looks for the abort; the watchdog's
// announces the abort, then waits out any probe. Both are sequentially consistent, so at least
// one of them sees the other's announcement.
bool Watchdog::RunUnlessFired(const std::function<void()>& probe) {
  probes_.fetch_add(1);
  if (firing_.load()) {
    probes_.fetch_sub(1);
    return false;
  }
  probe();
  probes_.fetch_sub(1);
  return true;
}

// The watchdog's thread. The action runs without the lock, so that Disarm can wait for it.
void Watchdog::Watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (state_ != State::kArmed) {
      changed_.wait(lock);
      continue;
    }
    const double left_s = deadline_s_ - clock_.NowSeconds();
    if (left_s > 0) {
      changed_.wait_for(lock, std::chrono::duration<double>(std::min(left_s, kPollS)));
      continue;
    }
    state_ = State::kFiring;
    std::function<void()> abort = std::move(abort_);
    abort_ = nullptr;
    lock.unlock();
    firing_.store(true);
    while (probes_.load() > 0) std::this_thread::yield();
    abort();
    lock.lock();
    state_ = State::kFired;
    changed_.notify_all();
  }
}

Status RunOrAbort(Watchdog& watchdog, double timeout_s, const std::string& what,
                  const std::function<Status()>& step, const std::function<Status()>& abort) {
  Status aborted_by_watchdog;  // written on the watchdog's thread; read after Disarm, which waits
                               // for it
  watchdog.Arm(timeout_s, [&] { aborted_by_watchdog = abort(); });
  const Status status = step();
  if (watchdog.Disarm())
    return WithAbortFailure(DeadlineMissed(what, timeout_s), aborted_by_watchdog);
  if (status.ok()) return status;
  return WithAbortFailure(status.WithContext(what), abort());
}

}  // namespace loom
