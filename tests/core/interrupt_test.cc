#include "core/interrupt.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

namespace loom {
namespace {

// Each case raises real signals, so it runs in a child process of its own (a death test): a
// handler that failed to catch one ends that child, not the test binary.
class Interrupts : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// The child's status: 0 when |ok|, else 2.
[[noreturn]] void ExitWith(bool ok) { std::exit(ok ? 0 : 2); }

bool HandlerIsDefault(int signal) {
  struct sigaction action = {};
  sigaction(signal, nullptr, &action);
  return action.sa_handler == SIG_DFL;
}

TEST_F(Interrupts, InAnInterruptibleScopeASignalOnlySetsTheFlag) {
  EXPECT_EXIT(
      {
        bool ok = !InterruptRequested();
        {
          const InterruptibleScope scope;
          std::raise(SIGTERM);
          ok = ok && InterruptRequested() && InterruptSignal() == SIGTERM;
        }
        ExitWith(ok && InterruptRequested());  // the flag outlives the scope: the caller reports it
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Interrupts, TheFirstSignalWinsAndASecondTerminatesAtOnce) {
  EXPECT_EXIT(
      {
        const InterruptibleScope scope;
        std::raise(SIGINT);
        if (InterruptSignal() != SIGINT || !HandlerIsDefault(SIGINT) || !HandlerIsDefault(SIGTERM))
          ExitWith(false);
        std::fprintf(stderr, "shutting down");
        std::raise(SIGTERM);
        std::fprintf(stderr, ", survived the second signal");
        ExitWith(false);
      },
      ::testing::KilledBySignal(SIGTERM), "shutting down$");
}

// Once a signal was caught the process is shutting down: a later scope leaves the default action.
TEST_F(Interrupts, AfterASignalLaterScopesInstallNothing) {
  EXPECT_EXIT(
      {
        {
          const InterruptibleScope first;
          std::raise(SIGINT);
        }
        const InterruptibleScope second;
        ExitWith(HandlerIsDefault(SIGINT) && HandlerIsDefault(SIGTERM));
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Interrupts, AScopeRestoresTheActionsItReplaced) {
  EXPECT_EXIT(
      {
        std::signal(SIGTERM, SIG_IGN);
        {
          const InterruptibleScope scope;
          if (HandlerIsDefault(SIGINT)) ExitWith(false);  // installed
          std::raise(SIGTERM);                            // ignored, as the process asked
        }
        struct sigaction term = {};
        sigaction(SIGTERM, nullptr, &term);
        ExitWith(!InterruptRequested() && term.sa_handler == SIG_IGN && HandlerIsDefault(SIGINT));
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Interrupts, ADeferredSignalTerminatesWhenTheScopeEnds) {
  EXPECT_EXIT(
      {
        {
          const DeferredInterrupts hold;
          std::raise(SIGINT);
          std::fprintf(stderr, "finished the write");
        }
        std::fprintf(stderr, ", then went on");
        ExitWith(true);
      },
      ::testing::KilledBySignal(SIGINT), "finished the write$");
}

TEST_F(Interrupts, NestedDeferralsTerminateWhenTheOutermostEnds) {
  EXPECT_EXIT(
      {
        {
          const DeferredInterrupts outer;
          {
            const DeferredInterrupts inner;
            std::raise(SIGTERM);
          }
          std::fprintf(stderr, "outer scope still running");
        }
        ExitWith(true);
      },
      ::testing::KilledBySignal(SIGTERM), "outer scope still running$");
}

TEST_F(Interrupts, ADeferralInsideAnInterruptibleScopeLeavesTheSignalToIt) {
  EXPECT_EXIT(
      {
        const InterruptibleScope scope;
        {
          const DeferredInterrupts hold;
          std::raise(SIGINT);
        }
        ExitWith(InterruptSignal() == SIGINT);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Interrupts, WithoutASignalScopesChangeNothing) {
  ClearInterrupt();
  { const DeferredInterrupts hold; }
  { const InterruptibleScope scope; }
  EXPECT_FALSE(InterruptRequested());
  EXPECT_TRUE(HandlerIsDefault(SIGINT));
  EXPECT_TRUE(HandlerIsDefault(SIGTERM));
}

TEST_F(Interrupts, ClearForgetsASignalForTheNextCommand) {
  RequestInterruptForTesting(SIGTERM);
  EXPECT_EQ(InterruptSignal(), SIGTERM);
  ClearInterrupt();
  EXPECT_FALSE(InterruptRequested());
  EXPECT_EQ(InterruptSignal(), 0);
}

TEST(SignalName, NamesTheTwoSignalsLoomCatches) {
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(SignalName(SIGHUP), "signal " + std::to_string(SIGHUP));
}

}  // namespace
}  // namespace loom
