// ZB-V: two model chunks per stage in a V, virtual stage = stage (chunk 0) or
// 2 * stages - 1 - stage (chunk 1), with the backward split into B and W.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

constexpr int64_t kNotRun = -1;

// Builds the order by running the V-shaped pipeline in unit time (T_F = T_B = T_W = 1, the case
// ZB-V is designed for) and recording what each stage runs: the order ZbVOrder starts from and
// keeps unless one built from the pass times ends sooner (Qi et al. build theirs from profiled
// times, "Zero Bubble Pipeline Parallelism", 2024, section "Automatic pipeline scheduling";
// RoundVBuilder). Because an item starts only after its dependencies have ended, the recorded
// order is valid for any pass durations.
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
    return static_cast<int32_t>(VirtualStageOf(stages_, ScheduleKind::kZbV, stage, chunk));
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

// Builds the order in rounds, the way the zero-bubble repository lays out its ZB-V
// (v_schedule.py, PipelineGraph.try_v_schedule, at sail-sg/zero-bubble-pipeline-parallelism
// 425b42e5; the code here is loom's own): a warm-up of 2 * stages rounds in which each stage adds
// one forward, the down arm's until the up arm's next input is already there; then rounds in which
// every stage adds one backward and then one forward, the up arm's backward first (the loss is on
// stage 0), each after what it waits for on another stage has arrived; W passes fill a stage's wait
// for an input while they end before it arrives, and one more W goes in where the wait is longer
// than the stage could afford against the worst stage's idle time so far (|fill_f|, |fill_b|:
// also before forwards, before down-arm backwards). Memory: F takes 2 units and B and W give one
// back each, at most 4 * stages, the repository's limit (1F1B's peak). Returns nullopt where the
// rounds would place a pass before what it waits for, which happens only with few micro-batches;
// the other constructions cover those.
class RoundVBuilder {
 public:
  RoundVBuilder(int32_t stages, int32_t micro_batches, const PassTimes& times, bool fill_f,
                bool fill_b)
      : p_(stages),
        m_(micro_batches),
        cost_{std::max<int64_t>(1, times.f), std::max<int64_t>(1, times.b),
              std::max<int64_t>(1, times.w)},
        comm_(std::max<int64_t>(0, times.comm)),
        fill_f_(fill_f),
        fill_b_(fill_b),
        end_(static_cast<size_t>(2 * 2 * stages) * micro_batches, kNotRun),
        state_(stages),
        order_(stages) {}

  std::optional<StageOrders> Build() {
    for (int32_t round = 0; round < 2 * p_ && ok_; ++round) {
      for (int32_t s = 0; s < p_ && ok_; ++s) {
        const StageState& st = state_[s];
        int32_t chunk = 0;
        if (st.count[kF][1] < st.count[kF][0]) {
          chunk = s == p_ - 1 || Placed(kF, 1, s + 1, st.count[kF][1]) ? 1 : 0;
        }
        if (st.count[kF][chunk] < m_) Put(kF, chunk, s);
      }
    }
    for (int32_t round = 0; round < 2 * m_ && ok_; ++round) {
      // Backwards: the down arm's (chunk 0) go up the stages from the V's tip, the up arm's
      // (chunk 1) down from the loss on stage 0; each stage does its up-arm backward first.
      std::vector<int32_t> down, up;
      for (int32_t s = 0; s < p_; ++s) {
        const StageState& st = state_[s];
        if (st.count[kB][1] >= m_ && st.count[kB][0] >= m_) continue;
        const bool owes_down = st.count[kB][0] < st.count[kB][1];
        const bool down_next = owes_down && (s == p_ - 1 || Placed(kB, 0, s + 1, st.count[kB][0]) ||
                                             st.count[kB][1] >= m_);
        (down_next ? down : up).push_back(s);
      }
      for (auto it = down.rbegin(); it != down.rend() && ok_; ++it) FillAndPut(kB, 0, *it);
      for (int32_t s : up) {
        if (!ok_) break;
        FillAndPut(kB, 1, s);
      }
      for (int32_t s = 0; s < p_ && ok_; ++s) {
        const StageState& st = state_[s];
        if (st.count[kF][1] >= m_) continue;
        int32_t chunk = -1;
        if (st.count[kF][1] >= st.count[kF][0]) {
          chunk = 0;
        } else if (s == p_ - 1 || Placed(kF, 1, s + 1, st.count[kF][1])) {
          chunk = 1;
        } else if (st.count[kF][0] < m_ && (s == 0 || Placed(kF, 0, s - 1, st.count[kF][0]))) {
          chunk = 0;
        }
        if (chunk >= 0 && st.count[kF][chunk] < m_) FillAndPut(kF, chunk, s);
      }
    }
    for (int32_t s = 0; s < p_ && ok_; ++s) {
      while (!state_[s].pending_w.empty()) PutW(s);
    }
    for (const StageState& st : state_) {
      ok_ = ok_ && st.count[kF][0] == m_ && st.count[kF][1] == m_ && st.count[kB][0] == m_ &&
            st.count[kB][1] == m_;
    }
    if (!ok_) return std::nullopt;
    return std::move(order_);
  }

 private:
  enum Kind { kF = 0, kB = 1, kW = 2 };
  struct StageState {
    int32_t count[2][2] = {{0, 0}, {0, 0}};  // [F or B][chunk] placed
    std::deque<PipelineItem> pending_w;
    int64_t time = 0;    // when the stage's last placed pass ends
    int64_t memory = 0;  // units: F +2, B -1, W -1
    int64_t idle = 0;    // waits since its first forward
  };

  size_t Slot(Kind kind, int32_t chunk, int32_t stage, int32_t mb) const {
    return ((static_cast<size_t>(kind) * 2 + chunk) * p_ + stage) * m_ + mb;
  }
  bool Placed(Kind kind, int32_t chunk, int32_t stage, int32_t mb) const {
    return mb < m_ && end_[Slot(kind, chunk, stage, mb)] != kNotRun;
  }

  // When the input of |kind| (F or B) of |chunk| for the stage's next micro-batch is on |stage|;
  // kNotRun when what makes it is not placed.
  int64_t InputAt(Kind kind, int32_t chunk, int32_t stage) const {
    const int32_t mb = state_[stage].count[kind][chunk];
    const auto from = [&](Kind k, int32_t c, int32_t s, bool cross) {
      const int64_t t = end_[Slot(k, c, s, mb)];
      return t == kNotRun ? kNotRun : t + (cross ? comm_ : 0);
    };
    int64_t own = 0;
    if (kind == kB) {
      own = from(kF, chunk, stage, false);
      if (own == kNotRun) return kNotRun;
    }
    int64_t in = 0;
    if (kind == kF) {
      if (chunk == 0 && stage > 0) in = from(kF, 0, stage - 1, true);
      if (chunk == 1)
        in = stage == p_ - 1 ? from(kF, 0, stage, false) : from(kF, 1, stage + 1, true);
    } else {
      if (chunk == 1 && stage > 0) in = from(kB, 1, stage - 1, true);
      if (chunk == 0)
        in = stage == p_ - 1 ? from(kB, 1, stage, false) : from(kB, 0, stage + 1, true);
    }
    return in == kNotRun ? kNotRun : std::max(own, in);
  }

  void PutW(int32_t stage) {
    StageState& st = state_[stage];
    const PipelineItem w = st.pending_w.front();
    st.pending_w.pop_front();
    st.time += cost_[kW];
    st.memory -= 1;
    order_[stage].push_back(w);
  }

  void FillAndPut(Kind kind, int32_t chunk, int32_t stage) {
    StageState& st = state_[stage];
    if (kind == kF) {
      while (st.memory + 2 > 4 * int64_t{p_} && !st.pending_w.empty()) PutW(stage);
    }
    const int64_t in = InputAt(kind, chunk, stage);
    if (in == kNotRun) {
      ok_ = false;
      return;
    }
    while (!st.pending_w.empty() && in >= st.time + cost_[kW]) PutW(stage);
    const bool fill = kind == kF ? fill_f_ : (chunk == 0 || fill_b_);
    if (fill && !st.pending_w.empty() && in - st.time > worst_idle_ - st.idle) PutW(stage);
    Put(kind, chunk, stage);
  }

  void Put(Kind kind, int32_t chunk, int32_t stage) {
    StageState& st = state_[stage];
    const int64_t in = InputAt(kind, chunk, stage);
    if (in == kNotRun || (kind == kF && st.memory + 2 > 4 * int64_t{p_})) {
      ok_ = false;
      return;
    }
    const int32_t mb = st.count[kind][chunk];
    const int64_t start = std::max(st.time, in);
    if (st.count[kF][0] > 0) {
      st.idle += start - st.time;
      worst_idle_ = std::max(worst_idle_, st.idle);
    }
    st.time = start + cost_[kind];
    end_[Slot(kind, chunk, stage, mb)] = st.time;
    ++st.count[kind][chunk];
    if (kind == kF) {
      st.memory += 2;
      order_[stage].push_back({Pass::kF, mb, chunk});
    } else {
      st.memory -= 1;
      order_[stage].push_back({Pass::kB, mb, chunk});
      st.pending_w.push_back({Pass::kW, mb, chunk});
    }
  }

  int32_t p_, m_;
  int64_t cost_[3];
  int64_t comm_;
  bool fill_f_, fill_b_;
  std::vector<int64_t> end_;  // [(kind * 2 + chunk) * p + stage][mb]: when F or B ends
  std::vector<StageState> state_;
  StageOrders order_;
  int64_t worst_idle_ = 0;  // the most any stage has waited
  bool ok_ = true;
};

// When |order| (a ZB-V order of |stages| and |micro_batches|) ends when run with |times|: each
// stage runs its list in order, a pass starting once its stage is free and its inputs are there
// (a transfer after the pass that made them, on another stage).
int64_t ReplayMakespan(const StageOrders& order, int32_t stages, int32_t micro_batches,
                       const PassTimes& times) {
  const int64_t f = std::max<int64_t>(1, times.f), b = std::max<int64_t>(1, times.b),
                w = std::max<int64_t>(1, times.w), comm = std::max<int64_t>(0, times.comm);
  const size_t slots = static_cast<size_t>(2 * stages) * micro_batches;
  std::vector<int64_t> f_end(slots, kNotRun), b_end(slots, kNotRun);
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(stages), 0);
  const auto arrives = [&](const std::vector<int64_t>& end, int32_t v, int32_t mb, int32_t stage) {
    const int64_t t = end[static_cast<size_t>(v) * micro_batches + mb];
    return t == kNotRun || StageOfVirtualStage(stages, ScheduleKind::kZbV, v) == stage ? t
                                                                                   : t + comm;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int32_t stage = 0; stage < stages; ++stage) {
      for (; next[stage] < order[stage].size(); ++next[stage]) {
        const PipelineItem& item = order[stage][next[stage]];
        const int32_t v =
            static_cast<int32_t>(VirtualStageOf(stages, ScheduleKind::kZbV, stage, item.chunk));
        const size_t slot = static_cast<size_t>(v) * micro_batches + item.micro_batch;
        int64_t ready = free_at[stage];
        if (item.pass == Pass::kF && v > 0) {
          const int64_t in = arrives(f_end, v - 1, item.micro_batch, stage);
          if (in == kNotRun) break;
          ready = std::max(ready, in);
        } else if (item.pass == Pass::kB && v + 1 < 2 * stages) {
          const int64_t in = arrives(b_end, v + 1, item.micro_batch, stage);
          if (in == kNotRun) break;
          ready = std::max(ready, in);
        }
        // A stage's own F precedes its B, and its B its W, in its list.
        const int64_t took = item.pass == Pass::kF ? f : item.pass == Pass::kB ? b : w;
        free_at[stage] = ready + took;
        if (item.pass == Pass::kF) f_end[slot] = free_at[stage];
        if (item.pass == Pass::kB) b_end[slot] = free_at[stage];
        progress = true;
      }
    }
  }
  int64_t end = 0;
  for (int32_t stage = 0; stage < stages; ++stage) {
    // An order that stalls (a pass before what it waits for) never ends.
    if (next[stage] < order[stage].size()) return std::numeric_limits<int64_t>::max();
    end = std::max(end, free_at[stage]);
  }
  return end;
}

}  // namespace

// ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", section "Memory efficient zero
// bubble schedule"; Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): the model
// in 2 * stages pieces placed in a V, so the first stage holds both the first and the last piece
// and the loss is computed where the pipeline started. With T_F = T_B = T_W and
// micro_batches >= stages, every stage idles only stages - 1 chunk-pass times per step while
// holding at most 1F1B's peak activation memory.
StageOrders ZbVOrder(int32_t stages, int32_t micro_batches, const PassTimes& times) {
  // The order built in unit time, run with |times|, and the orders built with them in the
  // repository's rounds with each of its fillings: the one that ends soonest, as the repository
  // keeps the best of its tries.
  StageOrders best = UnitTimeVBuilder(stages, micro_batches).Build();
  int64_t best_end = ReplayMakespan(best, stages, micro_batches, times);
  for (bool fill_f : {false, true}) {
    for (bool fill_b : {false, true}) {
      std::optional<StageOrders> order =
          RoundVBuilder(stages, micro_batches, times, fill_f, fill_b).Build();
      if (!order) continue;
      const int64_t end = ReplayMakespan(*order, stages, micro_batches, times);
      if (end < best_end) {
        best_end = end;
        best = std::move(*order);
      }
    }
  }
  return best;
}

}  // namespace loom::schedule_internal
