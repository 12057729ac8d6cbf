#include "exec/host_backend.h"

#include <memory>
#include <string>
#include <utility>

#include "device/deadline.h"
#include "exec/executor.h"
#include "exec/timed_backend.h"

#if LOOM_HAVE_MPI
#include <mpi.h>

#include "device/mpi_check.h"
#endif

namespace loom {
namespace {

// MessageTransport of a world of one rank, which needs no MPI: no rank to send to, and every
// collective, of one member, complete as soon as it is posted.
class OneRankTransport : public MessageTransport {
 public:
  Status PostCollective(TaskId task, GroupId, int32_t) override {
    done_.push_back(task);
    return Status::Ok();
  }
  Status Send(TaskId task, int32_t to) override {
    return Status::Internal("task " + std::to_string(task) + " sends to rank " +
                            std::to_string(to) + " in a world of one rank");
  }
  Status Poll(std::vector<TaskId>* collectives_done, std::vector<TaskId>*) override {
    collectives_done->insert(collectives_done->end(), done_.begin(), done_.end());
    done_.clear();
    return Status::Ok();
  }
  Status Flush() override { return Status::Ok(); }

 private:
  std::vector<TaskId> done_;
};

// How this rank reaches the others: its transport, and rank 0's clock minus its own.
struct RankLinks {
  std::unique_ptr<MessageTransport> transport;
  double clock_offset_s = 0;
};

// RankLinks over MPI for a world of several ranks; Unimplemented in a loom built without MPI.
Result<RankLinks> LinkRanksOverMpi(const ExecPlan& plan, const Launcher& launcher, Clock& clock);

// Every rank's times on rank 0 over MPI (a world of several ranks); Unimplemented without MPI.
Result<std::vector<RankTimes>> GatherRankTimesOverMpi(const RankTimes& mine, int rank, int world);

}  // namespace

#if LOOM_HAVE_MPI
namespace {

constexpr int kNotifyTag = 7;

// MessageTransport over MPI: notifications are int32 task ids on a duplicate of the world
// communicator; each collective an MPI_Iallreduce (MPI_MAX) of {group, -group}, which gives back
// the group only if every member posted the same one.
class MpiTransport : public MessageTransport {
 public:
  explicit MpiTransport(const ExecPlan& plan) : plan_(plan) {}
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  ~MpiTransport() override {
    if (receive_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&receive_);
      MPI_Wait(&receive_, MPI_STATUS_IGNORE);
    }
    for (MPI_Comm& comm : communicators_) {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
    if (notify_ != MPI_COMM_NULL) MPI_Comm_free(&notify_);
  }

  // Every rank makes the communicators in the plan's order (MPI_Comm_split is collective).
  Status Init(int rank) {
    rank_ = rank;
    LOOM_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &notify_));
    for (const Communicator& c : plan_.communicators()) {
      bool member = false;
      for (int32_t r : c.ranks) member = member || r == rank;
      MPI_Comm comm = MPI_COMM_NULL;
      LOOM_MPI(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &comm));
      communicators_.push_back(comm);
    }
    LOOM_MPI(MPI_Irecv(&received_, 1, MPI_INT32_T, MPI_ANY_SOURCE, kNotifyTag, notify_, &receive_));
    return Status::Ok();
  }

  Status PostCollective(TaskId task, GroupId group, int32_t communicator) override {
    auto pending = std::make_unique<PendingCollective>();
    pending->task = task;
    pending->group = group;
    pending->send[0] = group;
    pending->send[1] = -group;
    LOOM_MPI(MPI_Iallreduce(pending->send, pending->result, 2, MPI_INT32_T, MPI_MAX,
                            communicators_[communicator], &pending->request));
    collectives_.push_back(std::move(pending));
    return Status::Ok();
  }

  Status Send(TaskId task, int32_t to) override {
    auto pending = std::make_unique<PendingSend>();
    pending->task = task;
    LOOM_MPI(MPI_Isend(&pending->task, 1, MPI_INT32_T, to, kNotifyTag, notify_, &pending->request));
    sends_.push_back(std::move(pending));
    return Status::Ok();
  }

  Status Poll(std::vector<TaskId>* collectives_done, std::vector<TaskId>* received) override {
    for (size_t i = 0; i < collectives_.size();) {
      int done = 0;
      LOOM_MPI(MPI_Test(&collectives_[i]->request, &done, MPI_STATUS_IGNORE));
      if (!done) {
        ++i;
        continue;
      }
      LOOM_RETURN_IF_ERROR(CheckSameGroup(*collectives_[i]));
      collectives_done->push_back(collectives_[i]->task);
      collectives_.erase(collectives_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (;;) {
      int done = 0;
      LOOM_MPI(MPI_Test(&receive_, &done, MPI_STATUS_IGNORE));
      if (!done) break;
      received->push_back(received_);
      LOOM_MPI(
          MPI_Irecv(&received_, 1, MPI_INT32_T, MPI_ANY_SOURCE, kNotifyTag, notify_, &receive_));
    }
    return DropSentMessages(/*wait=*/false);
  }

  Status Flush() override { return DropSentMessages(/*wait=*/true); }

 private:
  struct PendingCollective {
    TaskId task = -1;
    GroupId group = kNoGroup;
    int32_t send[2] = {0, 0};
    int32_t result[2] = {0, 0};
    MPI_Request request = MPI_REQUEST_NULL;
  };
  struct PendingSend {
    int32_t task = -1;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  Status CheckSameGroup(const PendingCollective& c) const {
    if (c.result[0] == c.group && -c.result[1] == c.group) return Status::Ok();
    return Status::Internal(
        "rank " + std::to_string(rank_) + " joined the collective of " +
        plan_.graph().DescribeTask(c.task) +
        ", but other members of its communicator were in other collectives (groups " +
        std::to_string(-c.result[1]) + " to " + std::to_string(c.result[0]) +
        "): the ranks issued their collectives in different orders");
  }

  Status DropSentMessages(bool wait) {
    for (size_t i = 0; i < sends_.size();) {
      int done = 0;
      if (wait) {
        LOOM_MPI(MPI_Wait(&sends_[i]->request, MPI_STATUS_IGNORE));
        done = 1;
      } else {
        LOOM_MPI(MPI_Test(&sends_[i]->request, &done, MPI_STATUS_IGNORE));
      }
      if (done) {
        sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    return Status::Ok();
  }

  const ExecPlan& plan_;
  int rank_ = 0;
  MPI_Comm notify_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> communicators_;
  int32_t received_ = -1;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  std::vector<std::unique_ptr<PendingCollective>> collectives_;
  std::vector<std::unique_ptr<PendingSend>> sends_;
};

// Rank 0's clock minus this rank's at the same instant. Ranks on rank 0's host share its
// CLOCK_MONOTONIC (std::chrono::steady_clock): zero. Others estimate it from the fastest of 16
// round trips with rank 0 (Cristian's method: rank 0's reading is taken halfway through the round
// trip), which is off by up to half that round trip: on a loaded machine, milliseconds.
Result<double> ClockOffsetFromRankZero(Clock& clock, const Launcher& launcher) {
  const int rank = launcher.Rank(), world = launcher.Size();
  const std::vector<std::string>& hosts = launcher.Hosts();
  constexpr int kRounds = 16;
  constexpr int kTag = 9;
  double offset = 0;
  if (rank != 0 && hosts[rank] == hosts[0]) return offset;
  if (rank != 0) {
    for (int i = 0; i < kRounds; ++i) {
      double sent = 0;
      LOOM_MPI(MPI_Recv(&sent, 1, MPI_DOUBLE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      double now = clock.NowSeconds();
      LOOM_MPI(MPI_Send(&now, 1, MPI_DOUBLE, 0, kTag, MPI_COMM_WORLD));
    }
    LOOM_MPI(MPI_Recv(&offset, 1, MPI_DOUBLE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return offset;
  }
  for (int r = 1; r < world; ++r) {
    if (hosts[r] == hosts[0]) continue;
    double best_round_trip = 1e300, best = 0;
    for (int i = 0; i < kRounds; ++i) {
      double sent = clock.NowSeconds(), theirs = 0;
      LOOM_MPI(MPI_Send(&sent, 1, MPI_DOUBLE, r, kTag, MPI_COMM_WORLD));
      LOOM_MPI(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      const double back = clock.NowSeconds();
      if (back - sent < best_round_trip) {
        best_round_trip = back - sent;
        best = (sent + back) / 2 - theirs;
      }
    }
    LOOM_MPI(MPI_Send(&best, 1, MPI_DOUBLE, r, kTag, MPI_COMM_WORLD));
  }
  return offset;
}

Result<RankLinks> LinkRanksOverMpi(const ExecPlan& plan, const Launcher& launcher, Clock& clock) {
  auto transport = std::make_unique<MpiTransport>(plan);
  LOOM_RETURN_IF_ERROR(transport->Init(launcher.Rank()));
  LOOM_ASSIGN_OR_RETURN(double offset_s, ClockOffsetFromRankZero(clock, launcher));
  return RankLinks{std::move(transport), offset_s};
}

// Every rank's times travel as (task, start ns, end ns) triples.
Result<std::vector<RankTimes>> GatherRankTimesOverMpi(const RankTimes& mine, int rank, int world) {
  std::vector<int64_t> flat;
  for (size_t i = 0; i < mine.tasks.size(); ++i) {
    flat.insert(flat.end(), {mine.tasks[i], mine.start[i].nanos(), mine.end[i].nanos()});
  }
  const int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<size_t>(world)), offsets(static_cast<size_t>(world));
  LOOM_MPI(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  int total = 0;
  for (int r = 0; r < world; ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<int64_t> all(rank == 0 ? static_cast<size_t>(total) : 0);
  LOOM_MPI(MPI_Gatherv(flat.data(), count, MPI_INT64_T, all.data(), counts.data(), offsets.data(),
                       MPI_INT64_T, 0, MPI_COMM_WORLD));
  std::vector<RankTimes> times;
  if (rank != 0) return times;
  for (int r = 0; r < world; ++r) {
    RankTimes t;
    for (int i = offsets[r]; i < offsets[r] + counts[r]; i += 3) {
      t.tasks.push_back(static_cast<TaskId>(all[i]));
      t.start.push_back(SimTime::FromNanos(all[i + 1]));
      t.end.push_back(SimTime::FromNanos(all[i + 2]));
    }
    times.push_back(std::move(t));
  }
  return times;
}

}  // namespace

#else

namespace {

Result<RankLinks> LinkRanksOverMpi(const ExecPlan&, const Launcher&, Clock&) {
  return Status::Unimplemented(
      "loom was built without MPI, which the host backend needs for more than one rank: install "
      "Debian's "
      "libopenmpi-dev (tools/loom does) and rebuild");
}

Result<std::vector<RankTimes>> GatherRankTimesOverMpi(const RankTimes&, int, int world) {
  return Status::Unimplemented(
      "loom was built without MPI: gathering the times of " + std::to_string(world) +
      " ranks needs it; install Debian's libopenmpi-dev (tools/loom does) and rebuild");
}

}  // namespace

#endif

Result<std::vector<RankTimes>> GatherRankTimes(const RankTimes& mine, int rank, int world) {
  if (world == 1) return std::vector<RankTimes>{mine};  // also where MPI was never started
  return GatherRankTimesOverMpi(mine, rank, world);
}

Result<std::vector<StepTimeline>> RunOnHost(const ExecPlan& plan, Launcher& launcher,
                                            const HostRunOptions& options) {
  const int rank = launcher.Rank(), world = launcher.Size();
  SteadyClock clock;
  RankLinks links;
  if (world == 1) {
    links.transport = std::make_unique<OneRankTransport>();
  } else {
    LOOM_ASSIGN_OR_RETURN(links, LinkRanksOverMpi(plan, launcher, clock));
  }
  TimedBackend backend(plan.graph(), *links.transport, clock, options.speedup);
  RunOptions run;
  run.timeout = options.timeout;
  std::vector<StepTimeline> measured;
  for (int32_t step = 0; step < options.warmup_steps + options.steps; ++step) {
    LOOM_RETURN_IF_ERROR(launcher.Barrier());
    double epoch_s = clock.NowSeconds();
    LOOM_RETURN_IF_ERROR(launcher.Broadcast(&epoch_s, sizeof(epoch_s), 0));
    // Every step starts at one instant on every rank, rank 0's clock reading after a barrier: a
    // rank that leaves the barrier late shows as late, instead of shifting its times.
    backend.StartEpoch(epoch_s - links.clock_offset_s);
    Result<RankTimes> times = RunRankProgram(plan, rank, backend, run);
    Status flushed = times.ok() ? links.transport->Flush() : Status::Ok();
    // Whether every rank's step went well; a rank that failed has already said why.
    LOOM_ASSIGN_OR_RETURN(double failures,
                          launcher.MaxOverRanks(times.ok() && flushed.ok() ? 0.0 : 1.0));
    if (!times.ok()) return times.status();
    LOOM_RETURN_IF_ERROR(flushed);
    if (failures > 0) {
      return Status::Internal("rank " + std::to_string(rank) +
                              " stopped: another rank failed in step " + std::to_string(step) +
                              " (its error says why)");
    }
    LOOM_ASSIGN_OR_RETURN(std::vector<RankTimes> all, GatherRankTimes(*times, rank, world));
    if (rank == 0 && step >= options.warmup_steps)
      measured.push_back(MeasuredTimeline(plan.graph(), all));
  }
  return measured;
}

}  // namespace loom
