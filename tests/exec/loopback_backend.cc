#include "exec/loopback_backend.h"

#include <algorithm>
#include <string>
#include <thread>

#include "device/deadline.h"

namespace loom {

class LoopbackTransport : public MessageTransport {
 public:
  LoopbackTransport(LoopbackNetwork& network, int32_t rank) : network_(network), rank_(rank) {}

  Status PostCollective(TaskId task, GroupId group, int32_t communicator) override {
    std::lock_guard<std::mutex> lock(network_.mutex_);
    auto& mine = network_.posted_[communicator][rank_];
    pending_.push_back({task, group, communicator, static_cast<int32_t>(mine.size())});
    mine.push_back(group);
    return Status::Ok();
  }

  Status Send(TaskId task, int32_t to) override {
    std::lock_guard<std::mutex> lock(network_.mutex_);
    network_.inbox_[to].push_back(task);
    return Status::Ok();
  }

  // A collective completes once every member has posted as many collectives on the communicator;
  // it fails if one of them posted another group at that position.
  Status Poll(std::vector<TaskId>* collectives_done, std::vector<TaskId>* received) override {
    std::lock_guard<std::mutex> lock(network_.mutex_);
    for (size_t i = 0; i < pending_.size();) {
      const Pending& p = pending_[i];
      bool all = true;
      for (int32_t member : network_.plan_.communicators()[p.communicator].ranks) {
        const auto& posted = network_.posted_[p.communicator][member];
        if (static_cast<int32_t>(posted.size()) <= p.position) {
          all = false;
        } else if (posted[p.position] != p.group) {
          return Status::Internal("rank " + std::to_string(member) + " posted group " +
                                  std::to_string(posted[p.position]) + " where rank " +
                                  std::to_string(rank_) + " posted group " +
                                  std::to_string(p.group));
        }
      }
      if (all) {
        collectives_done->push_back(p.task);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    auto& inbox = network_.inbox_[rank_];
    received->insert(received->end(), inbox.begin(), inbox.end());
    inbox.clear();
    return Status::Ok();
  }

  Status Flush() override { return Status::Ok(); }

 private:
  struct Pending {
    TaskId task;
    GroupId group;
    int32_t communicator;
    int32_t position;
  };
  LoopbackNetwork& network_;
  int32_t rank_;
  std::vector<Pending> pending_;
};

LoopbackNetwork::LoopbackNetwork(const ExecPlan& plan) : plan_(plan) {
  const int32_t ranks = static_cast<int32_t>(plan.ranks().size());
  inbox_.resize(static_cast<size_t>(ranks));
  for (int32_t r = 0; r < ranks; ++r)
    transports_.push_back(std::make_unique<LoopbackTransport>(*this, r));
}

Result<StepTimeline> LoopbackNetwork::RunStep(double speedup, SimTime timeout) {
  const size_t ranks = transports_.size();
  posted_.clear();
  SteadyClock clock;
  std::vector<std::unique_ptr<TimedBackend>> backends;
  for (size_t r = 0; r < ranks; ++r) {
    backends.push_back(
        std::make_unique<TimedBackend>(plan_.graph(), *transports_[r], clock, speedup));
  }
  std::vector<Result<RankTimes>> results(ranks, Status::Internal("not run"));
  std::vector<std::thread> threads;
  RunOptions options;
  options.timeout = timeout;
  const double epoch_s = clock.NowSeconds();
  for (size_t r = 0; r < ranks; ++r) backends[r]->StartEpoch(epoch_s);
  for (size_t r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      results[r] = RunRankProgram(plan_, static_cast<int32_t>(r), *backends[r], options);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<RankTimes> times;
  for (Result<RankTimes>& r : results) {
    if (!r.ok()) return r.status();
    times.push_back(std::move(r).value());
  }
  return MeasuredTimeline(plan_.graph(), times);
}

}  // namespace loom
