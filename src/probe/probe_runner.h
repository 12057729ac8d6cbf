#ifndef LOOM_PROBE_PROBE_RUNNER_H_
#define LOOM_PROBE_PROBE_RUNNER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/profile.h"
#include "device/launcher.h"
#include "probe/bench.h"
#include "probe/sweep.h"

namespace loom {

struct ProbeRunOptions {
  std::string output_path;  // the profile rank 0 writes
  // Continue the profile at |output_path|: its recorded points (samples and failures) are skipped.
  // Without it an existing file is an error, so that no measurement is overwritten by accident.
  bool resume = false;
  // With resume: measure the recorded failures again (their failure entries are dropped).
  bool retry_failed = false;
  BenchSettings settings;
  double collective_timeout_s = 120;
  std::string date;  // ISO 8601, the profile's "date" (a resumed profile keeps its own)
};

// What one finished point did, for progress reports (rank 0 only).
struct ProbeProgress {
  int64_t index = 0;  // 1-based among the points measured in this run
  int64_t total = 0;
  std::string point;   // its key
  std::string result;  // "0.412 ms", or the error
  bool failed = false;
};

struct ProbeSummary {
  int64_t planned = 0;
  int64_t resumed = 0;  // skipped: already in the profile
  int64_t measured = 0;
  int64_t failed = 0;
  int64_t abandoned = 0;  // collective points of a group aborted after a hang, left for --resume
  std::vector<std::string> hangs;  // the DeadlineExceeded messages
  Profile profile;                 // what rank 0 wrote (header only on other ranks)
};

// Measures |points| and records them in the profile at options.output_path, written by rank 0
// after every point (ProfileWriter: atomic, so a killed probe leaves every completed point).
// Kernel and host points run on rank 0 alone; collective points on every rank in the same order,
// each one's times the largest over the ranks. A point that fails (out of memory, a dtype this GPU
// lacks) is recorded as a failure with its reason and the sweep goes on. A collective that hangs
// is aborted by |collectives| after collective_timeout_s: it is recorded as a failure, the rest of
// its group's points are abandoned (not recorded, so --resume measures them), and the hang is
// reported in |hangs|. Every rank calls RunProbe with the same points; |kernels| may be null on
// ranks other than 0 and when there are no kernel points, |collectives| when there are no
// collective points. |facts| is rank 0's device. Errors: the profile cannot be written or read
// for --resume, an existing file without --resume, a resumed profile of another GPU, or an MPI
// failure.
Result<ProbeSummary> RunProbe(const std::vector<ProbePoint>& points, const DeviceFacts& facts,
                              Launcher& launcher, KernelBench* kernels,
                              CollectiveBench* collectives, const ProbeRunOptions& options,
                              const std::function<void(const ProbeProgress&)>& progress);

}  // namespace loom

#endif  // LOOM_PROBE_PROBE_RUNNER_H_
