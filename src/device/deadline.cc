#include "device/deadline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace loom {

double SteadyClock::NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void SteadyClock::SleepSeconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

Status DeadlineMissed(const std::string& what, double timeout_s) {
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", timeout_s);
  return Status::DeadlineExceeded(
      what + " did not finish within " + limit +
      " s and was aborted; a rank may have died or stalled, or the network between the "
      "hosts is down (raise --timeout-s if it is only slow)");
}

Status WaitUntilDone(const std::function<Result<bool>()>& poll, Clock& clock, double timeout_s,
                     const std::string& what) {
  const double start = clock.NowSeconds();
  double pause_s = 50e-6;
  while (true) {
    LOOM_ASSIGN_OR_RETURN(bool done, poll());
    if (done) return Status::Ok();
    if (clock.NowSeconds() - start >= timeout_s) return DeadlineMissed(what, timeout_s);
    clock.SleepSeconds(pause_s);
    pause_s = std::min(pause_s * 2, 10e-3);
  }
}

}  // namespace loom
