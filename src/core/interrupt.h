#ifndef LOOM_CORE_INTERRUPT_H_
#define LOOM_CORE_INTERRUPT_H_

#include <string>

namespace loom {

// SIGINT (Ctrl-C) and SIGTERM while loom works. Left alone they terminate the process wherever it
// is: a long search loses everything it found, and a file written as a temporary then renamed
// leaves the temporary behind. The two scopes below change that for their lifetime.
//
// Both are process-wide (signal dispositions are), nest with each other, and install nothing for a
// signal the process ignores (a shell starts background jobs with SIGINT ignored). The first signal
// caught sets both signals back to their default action, so a second one terminates at once; and
// once one was caught, later scopes install nothing until ClearInterrupt().

// While alive, a caught signal only records itself for InterruptRequested(): the work polls it
// between units, stops at a safe point and reports what it finished (loom plan's search).
class InterruptibleScope {
 public:
  InterruptibleScope();
  ~InterruptibleScope();
  InterruptibleScope(const InterruptibleScope&) = delete;
  InterruptibleScope& operator=(const InterruptibleScope&) = delete;
};

// While alive, a caught signal waits: when the outermost scope ends, outside any
// InterruptibleScope, the process terminates by that signal, as it would have when it came. For
// writing a file as a temporary and renaming it over the target, so that an interrupt leaves the
// old file or the new one, complete, and never the temporary.
class DeferredInterrupts {
 public:
  DeferredInterrupts();
  ~DeferredInterrupts();
  DeferredInterrupts(const DeferredInterrupts&) = delete;
  DeferredInterrupts& operator=(const DeferredInterrupts&) = delete;

 private:
  bool caught_before_;  // a signal was recorded before this scope began: not this scope's to raise
};

// True once a signal was caught inside a scope. A relaxed load of a lock-free atomic: cheap enough
// to poll per unit of work on every thread, and what the signal handler writes.
bool InterruptRequested();

// The first signal caught (SIGINT or SIGTERM), or 0.
int InterruptSignal();

// "SIGINT", "SIGTERM", else "signal N".
std::string SignalName(int signal);

// Forgets a caught signal. For a process that runs several commands in turn (RunLoom in tests):
// each starts uninterrupted.
void ClearInterrupt();

// Records |signal| as if it had been caught (tests of the code that polls InterruptRequested()).
void RequestInterruptForTesting(int signal);

}  // namespace loom

#endif  // LOOM_CORE_INTERRUPT_H_
