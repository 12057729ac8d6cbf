#include "core/interrupt.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>

namespace loom {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};
constexpr int kCount = 2;

// What the handler touches: lock-free atomics only, so that it is async-signal-safe on any thread.
std::atomic<int> caught{0};
std::atomic<bool> installed[kCount];
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

// The scopes' bookkeeping; never taken in the handler.
std::mutex mutex;
int depth = 0;                // scopes of either kind alive
int interruptible_depth = 0;  // InterruptibleScopes alive
struct sigaction previous[kCount];

extern "C" void HandleInterrupt(int signal) {
  const int saved_errno = errno;  // sigaction may set it under the interrupted code's feet
  int none = 0;
  caught.compare_exchange_strong(none, signal, std::memory_order_relaxed);
  // Shutting down now: a second signal takes the default action and terminates at once.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int k = 0; k < kCount; ++k) {
    if (installed[k].load(std::memory_order_relaxed))
      sigaction(kSignals[k], &default_action, nullptr);
  }
  errno = saved_errno;
}

// REQUIRES: |mutex| held, no handler installed.
void Install() {
  struct sigaction action = {};
  action.sa_handler = HandleInterrupt;
  sigemptyset(&action.sa_mask);
  for (int signal : kSignals) sigaddset(&action.sa_mask, signal);
  action.sa_flags = SA_RESTART;  // reads, writes and waits carry on; the work polls the flag
  for (int k = 0; k < kCount; ++k) {
    if (sigaction(kSignals[k], nullptr, &previous[k]) != 0 || previous[k].sa_handler == SIG_IGN)
      continue;
    installed[k].store(true);
    if (sigaction(kSignals[k], &action, nullptr) != 0) installed[k].store(false);
  }
}

// REQUIRES: |mutex| held.
void Restore() {
  for (int k = 0; k < kCount; ++k) {
    if (!installed[k].load()) continue;
    sigaction(kSignals[k], &previous[k], nullptr);
    installed[k].store(false);
  }
}

void Enter(bool interruptible) {
  std::lock_guard<std::mutex> lock(mutex);
  if (depth++ == 0 && caught.load() == 0) Install();
  if (interruptible) ++interruptible_depth;
}

// Returns the signal the caller must raise now: one caught while the outermost deferring scope was
// alive, with no InterruptibleScope left to report it; else 0.
int Leave(bool interruptible, bool caught_before) {
  std::lock_guard<std::mutex> lock(mutex);
  if (interruptible) --interruptible_depth;
  if (--depth > 0) return 0;
  Restore();
  return interruptible || caught_before ? 0 : caught.load();
}

}  // namespace

InterruptibleScope::InterruptibleScope() { Enter(true); }

InterruptibleScope::~InterruptibleScope() { Leave(true, false); }

DeferredInterrupts::DeferredInterrupts() : caught_before_(InterruptSignal() != 0) { Enter(false); }

DeferredInterrupts::~DeferredInterrupts() {
  // The previous disposition is back (normally the default action), so this ends the process as
  // the signal would have.
  if (const int signal = Leave(false, caught_before_); signal != 0) std::raise(signal);
}

bool InterruptRequested() { return caught.load(std::memory_order_relaxed) != 0; }

int InterruptSignal() { return caught.load(std::memory_order_relaxed); }

std::string SignalName(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

void ClearInterrupt() { caught.store(0); }

void RequestInterruptForTesting(int signal) { caught.store(signal); }

}  // namespace loom
