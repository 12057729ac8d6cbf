#include "unit_time_executor.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace loom::schedule_oracle {
namespace {

constexpr int64_t kNotDone = -1;

class Executor {
 public:
  Executor(const PipelineSchedule& schedule, const PassTimes& times)
      : s_(schedule),
        times_(times),
        f_end_(static_cast<size_t>(schedule.VirtualStages()) * schedule.micro_batches, kNotDone),
        b_end_(f_end_.size(), kNotDone),
        next_(schedule.stages, 0),
        free_at_(schedule.stages, 0),
        held_(schedule.stages, 0) {
    for (int32_t stage = 0; stage < schedule.stages; ++stage) {
      for (int32_t chunk = 0; chunk < schedule.chunks; ++chunk) {
        virtual_of_.push_back(schedule.VirtualStage(stage, chunk));
      }
    }
    out_.busy.assign(schedule.stages, 0);
    out_.peak_activations.assign(schedule.stages, 0);
  }

  Execution Run() {
    std::vector<int32_t> work(s_.stages);
    std::iota(work.begin(), work.end(), 0);
    std::vector<uint8_t> queued(s_.stages, 1);  // not vector<bool>: this loop is hot
    while (!work.empty()) {
      const int32_t stage = work.back();
      work.pop_back();
      queued[stage] = 0;
      if (!Advance(stage)) continue;
      for (int32_t chunk = 0; chunk < s_.chunks; ++chunk) {
        const int32_t v = Virtual(stage, chunk);
        for (int32_t neighbour : {v - 1, v + 1}) {
          if (neighbour < 0 || neighbour >= s_.VirtualStages()) continue;
          const int32_t other = s_.Place(neighbour).stage;
          if (!queued[other]) work.push_back(other);
          queued[other] = 1;
        }
      }
    }
    out_.completed = true;
    for (int32_t stage = 0; stage < s_.stages; ++stage) {
      out_.completed = out_.completed && next_[stage] == s_.order[stage].size();
    }
    out_.makespan = *std::max_element(free_at_.begin(), free_at_.end());
    return out_;
  }

 private:
  int64_t& End(std::vector<int64_t>& ends, int32_t v, int32_t mb) {
    return ends[static_cast<size_t>(v) * s_.micro_batches + mb];
  }

  int32_t Virtual(int32_t stage, int32_t chunk) const {
    return virtual_of_[static_cast<size_t>(stage) * s_.chunks + chunk];
  }

  // Returns when the dependencies of |item| on |stage| have all ended, or kNotDone if one has not.
  int64_t ReadyAt(int32_t stage, const PipelineItem& item) {
    const int32_t v = Virtual(stage, item.chunk);
    const int32_t mb = item.micro_batch;
    int64_t first = 0;  // the ends of at most two dependencies; 0 where there is none
    int64_t second = 0;
    if (item.pass == Pass::kF) {
      if (v > 0) first = End(f_end_, v - 1, mb);
    } else if (item.pass == Pass::kW) {
      first = End(b_end_, v, mb);
    } else {
      first = End(f_end_, v, mb);
      if (v + 1 < s_.VirtualStages()) second = End(b_end_, v + 1, mb);
    }
    if (first == kNotDone || second == kNotDone) return kNotDone;
    return std::max(first, second);
  }

  int64_t Duration(Pass pass) const {
    switch (pass) {
      case Pass::kF:
        return times_.forward;
      case Pass::kB:
        return times_.backward;
      case Pass::kW:
        return times_.weight;
      case Pass::kBW:
        return times_.backward + times_.weight;
    }
    return 0;
  }

  // Runs the passes of |stage| whose dependencies have ended; returns whether it ran any.
  bool Advance(int32_t stage) {
    const std::vector<PipelineItem>& list = s_.order[stage];
    bool ran = false;
    while (next_[stage] < list.size()) {
      const PipelineItem& item = list[next_[stage]];
      const int64_t ready = ReadyAt(stage, item);
      if (ready == kNotDone) break;
      const int64_t end = std::max(free_at_[stage], ready) + Duration(item.pass);
      const int32_t v = Virtual(stage, item.chunk);
      if (item.pass == Pass::kF) End(f_end_, v, item.micro_batch) = end;
      if (item.pass == Pass::kB || item.pass == Pass::kBW) End(b_end_, v, item.micro_batch) = end;
      free_at_[stage] = end;
      out_.busy[stage] += Duration(item.pass);
      if (item.pass == Pass::kF) ++held_[stage];
      if (item.pass == Pass::kW || item.pass == Pass::kBW) --held_[stage];
      out_.peak_activations[stage] = std::max(out_.peak_activations[stage], held_[stage]);
      ++next_[stage];
      ran = true;
    }
    return ran;
  }

  const PipelineSchedule& s_;
  PassTimes times_;
  std::vector<int32_t> virtual_of_;  // [stage * chunks + chunk]
  std::vector<int64_t> f_end_;       // [virtual stage * micro_batches + mb]
  std::vector<int64_t> b_end_;       // set by B or BW
  std::vector<size_t> next_;         // per stage: index of the next item to run
  std::vector<int64_t> free_at_;
  std::vector<int32_t> held_;
  Execution out_;
};

}  // namespace

double Execution::BubbleFraction() const {
  if (makespan == 0) return 0.0;
  const int64_t total_busy = std::accumulate(busy.begin(), busy.end(), int64_t{0});
  return 1.0 - static_cast<double>(total_busy) /
                   (static_cast<double>(busy.size()) * static_cast<double>(makespan));
}

Execution Execute(const PipelineSchedule& schedule, const PassTimes& times) {
  return Executor(schedule, times).Run();
}

}  // namespace loom::schedule_oracle
