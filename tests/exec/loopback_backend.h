#ifndef LOOM_TESTS_EXEC_LOOPBACK_BACKEND_H_
#define LOOM_TESTS_EXEC_LOOPBACK_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "exec/exec_plan.h"
#include "exec/executor.h"
#include "exec/timed_backend.h"
#include "program/step_timeline.h"

namespace loom {

// Ranks as threads of one process, exchanging messages through shared queues: the executor and
// TimedBackend tested without MPI.
class LoopbackNetwork {
 public:
  explicit LoopbackNetwork(const ExecPlan& plan);

  // The transport of |rank|. REQUIRES: 0 <= rank < ranks.
  MessageTransport& transport(int32_t rank) { return *transports_[rank]; }

  // Runs every rank's program once, each on its own thread with a TimedBackend at |speedup|,
  // and returns the measured timeline, or the first rank's error.
  Result<StepTimeline> RunStep(double speedup, SimTime timeout = SimTime::FromSeconds(30));

 private:
  friend class LoopbackTransport;

  const ExecPlan& plan_;
  std::mutex mutex_;
  std::vector<std::vector<TaskId>> inbox_;  // per rank
  // Per communicator: the groups posted so far, in order, by each member.
  std::map<int32_t, std::map<int32_t, std::vector<GroupId>>> posted_;
  std::vector<std::unique_ptr<MessageTransport>> transports_;
};

}  // namespace loom

#endif  // LOOM_TESTS_EXEC_LOOPBACK_BACKEND_H_
