// ZB-V: two model chunks per stage in a V, virtual stage = stage (chunk 0) or
// 2 * stages - 1 - stage (chunk 1), with the backward split into B and W.

#include <cassert>
#include <cstdint>
#include <deque>
#include <vector>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

constexpr int64_t kNotRun = -1;

// Builds the order by running the V-shaped pipeline in unit time (T_F = T_B = T_W = 1, the case
// ZB-V is designed for) and recording what each stage runs. Qi et al. build their schedules the
// same way, by a greedy pass over the pipeline with profiled pass times ("Zero Bubble Pipeline
// Parallelism", 2024, section "Automatic pipeline scheduling"). Because an item starts only
// after its dependencies have ended, the recorded order is valid for any pass durations.
//
// A free stage picks the first of these whose dependencies have ended:
//   1. F of chunk 1: it carries a micro-batch up to the loss on stage 0, where its backward starts;
//   2. B of chunk 1: the gradient going down the up arm, which the stages below wait for;
//   3. F of chunk 0: it feeds the stages below;
//   4. B of chunk 0: the gradient going up the down arm, the end of a micro-batch;
//   5. the oldest pending W: nothing waits for it, so it fills what would be idle time, and it
//      frees activation memory when the limit below stops the forwards.
// Of the 120 orders of these five, this one idled least over 2 <= p <= 10, 2p <= m <= 4p + 2.
// Memory: a stage holds at most 2 * stages chunk activation sets (F done minus W done), that is
// |stages| full-stage sets, 1F1B's peak and ZB-V's memory target (Qi et al. 2024, section
// "Memory efficient zero bubble schedule"). F of chunk 0 also leaves one set free for chunk 1,
// so a stage full of chunk-0 activations never blocks the forwards coming back up the V.
class UnitTimeVBuilder {
 public:
  UnitTimeVBuilder(int32_t stages, int32_t micro_batches)
      : stages_(stages),
        micro_batches_(micro_batches),
        f_end_(static_cast<size_t>(2 * stages) * micro_batches, kNotRun),
        b_end_(f_end_.size(), kNotRun),
        state_(stages),
        order_(stages) {
    for (auto& list : order_) list.reserve(6 * micro_batches);
  }

  StageOrders Build() {
    int64_t remaining = int64_t{6} * stages_ * micro_batches_;
    for (int64_t now = 0; remaining > 0; ++now) {
      bool active = false;
      for (int32_t stage = 0; stage < stages_; ++stage) {
        if (state_[stage].free_at > now) {
          active = true;
        } else if (PipelineItem item; Pick(stage, now, item)) {
          Start(stage, item, now);
          active = true;
          --remaining;
        }
      }
      assert(active && "ZB-V construction stalled");
      if (!active) break;
    }
    return std::move(order_);
  }

 private:
  struct StageState {
    int32_t next_f[2] = {0, 0};
    int32_t next_b[2] = {0, 0};
    std::deque<PipelineItem> pending_w;  // oldest first
    int32_t activations = 0;             // chunk activation sets held
    int64_t free_at = 0;
  };

  int32_t Virtual(int32_t stage, int32_t chunk) const {
    return chunk == 0 ? stage : 2 * stages_ - 1 - stage;
  }

  bool Ended(const std::vector<int64_t>& end, int32_t virtual_stage, int32_t mb,
             int64_t now) const {
    const int64_t t = end[static_cast<size_t>(virtual_stage) * micro_batches_ + mb];
    return t != kNotRun && t <= now;
  }

  bool BackwardReady(int32_t stage, int32_t chunk, int64_t now) const {
    const int32_t mb = state_[stage].next_b[chunk];
    if (mb >= micro_batches_) return false;
    const int32_t v = Virtual(stage, chunk);
    return Ended(f_end_, v, mb, now) && (v + 1 == 2 * stages_ || Ended(b_end_, v + 1, mb, now));
  }

  bool ForwardReady(int32_t stage, int32_t chunk, int64_t now) const {
    const StageState& s = state_[stage];
    const int32_t mb = s.next_f[chunk];
    const int32_t sets_needed = chunk == 0 ? 2 : 1;
    if (mb >= micro_batches_ || s.activations + sets_needed > 2 * stages_) return false;
    const int32_t v = Virtual(stage, chunk);
    return v == 0 || Ended(f_end_, v - 1, mb, now);
  }

  // Sets |item| to what |stage| runs at |now|, in the order of the class comment; returns false
  // when nothing can run.
  bool Pick(int32_t stage, int64_t now, PipelineItem& item) const {
    const StageState& s = state_[stage];
    if (ForwardReady(stage, 1, now)) {
      item = {Pass::kF, s.next_f[1], 1};
    } else if (BackwardReady(stage, 1, now)) {
      item = {Pass::kB, s.next_b[1], 1};
    } else if (ForwardReady(stage, 0, now)) {
      item = {Pass::kF, s.next_f[0], 0};
    } else if (BackwardReady(stage, 0, now)) {
      item = {Pass::kB, s.next_b[0], 0};
    } else if (!s.pending_w.empty()) {
      item = s.pending_w.front();
    } else {
      return false;
    }
    return true;
  }

  void Start(int32_t stage, const PipelineItem& item, int64_t now) {
    StageState& s = state_[stage];
    const size_t slot =
        static_cast<size_t>(Virtual(stage, item.chunk)) * micro_batches_ + item.micro_batch;
    switch (item.pass) {
      case Pass::kF:
        f_end_[slot] = now + 1;
        ++s.next_f[item.chunk];
        ++s.activations;
        break;
      case Pass::kB:
        b_end_[slot] = now + 1;
        ++s.next_b[item.chunk];
        s.pending_w.push_back({Pass::kW, item.micro_batch, item.chunk});
        break;
      case Pass::kW:
        s.pending_w.pop_front();
        --s.activations;
        break;
      case Pass::kBW:
        assert(false && "ZB-V splits every backward");
        break;
    }
    s.free_at = now + 1;
    order_[stage].push_back(item);
  }

  int32_t stages_;
  int32_t micro_batches_;
  std::vector<int64_t> f_end_;  // [virtual stage * micro_batches + mb]: when F ends
  std::vector<int64_t> b_end_;  // the same for B
  std::vector<StageState> state_;
  StageOrders order_;
};

}  // namespace

// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", section "Memory efficient zero
// bubble schedule"; Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): the model
// in 2 * stages pieces placed in a V, so the first stage holds both the first and the last piece
// and the loss is computed where the pipeline started. With T_F = T_B = T_W and
// micro_batches >= stages, every stage idles only stages - 1 chunk-pass times per step while
// holding at most 1F1B's peak activation memory.
StageOrders ZbVOrder(int32_t stages, int32_t micro_batches) {
  return UnitTimeVBuilder(stages, micro_batches).Build();
}

}  // namespace loom::schedule_internal
