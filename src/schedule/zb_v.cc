// ZB-V: two model chunks per stage in a V, virtual stage = stage (chunk 0) or
// 2 * stages - 1 - stage (chunk 1), with the backward split into B and W.

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <vector>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

constexpr int64_t kNotRun = -1;

// Builds the order by running the V-shaped pipeline with the given pass times and recording what
// each stage runs, as the zero-bubble repository does: it profiles its first iterations and builds
// the ZB-V schedule from the median forward, backward and weight-backward times and the transfer
// time (megatron/core/pipeline_parallel/zb_schedules.py update_schedule and v_schedule.py at
// sail-sg/zero-bubble-pipeline-parallelism 425b42e5; Qi et al. 2024, "Zero Bubble Pipeline
// Parallelism", section "Automatic pipeline scheduling"). Unit times (T_F = T_B = T_W, no
// transfer time) are the case ZB-V is designed for. Because an item starts only after its
// dependencies have ended, the recorded order is valid for any pass durations.
//
// A free stage picks the first of these whose dependencies have ended (and whose input, from
// another stage, has arrived):
//   1. F of chunk 1: it carries a micro-batch up to the loss on stage 0, where its backward starts;
//   2. B of chunk 1: the gradient going down the up arm, which the stages below wait for;
//   3. F of chunk 0: it feeds the stages below;
//   4. B of chunk 0: the gradient going up the down arm, the end of a micro-batch;
//   5. the oldest pending W: nothing waits for it, so it fills what would be idle time, and it
//      frees activation memory when the limit below stops the forwards.
// Of the 120 orders of these five, this one idled least over 2 <= p <= 10, 2p <= m <= 4p + 2 in
// unit time. With other times a W started just before an input arrives delays the pass that
// input feeds, so the repository fills a wait with W passes only while they end before the input
// arrives (v_schedule.py, "fill the bubble"): |fit_w| does the same. ZbVOrder keeps the order of
// these and of RoundVBuilder that ends soonest.
// Memory: a stage holds at most 2 * stages chunk activation sets (F done minus W done), that is
// |stages| full-stage sets, 1F1B's peak and ZB-V's memory target (Qi et al. 2024, section
// "Memory efficient zero bubble schedule"). F of chunk 0 also leaves one set free for chunk 1,
// so a stage full of chunk-0 activations never blocks the forwards coming back up the V.
class VBuilder {
 public:
  VBuilder(int32_t stages, int32_t micro_batches, const PassTimes& times, bool fit_w)
      : stages_(stages),
        micro_batches_(micro_batches),
        f_(std::max<int64_t>(1, times.f)),
        b_(std::max<int64_t>(1, times.b)),
        w_(std::max<int64_t>(1, times.w)),
        comm_(std::max<int64_t>(0, times.comm)),
        fit_w_(fit_w),
        f_end_(static_cast<size_t>(2 * stages) * micro_batches, kNotRun),
        b_end_(f_end_.size(), kNotRun),
        state_(stages),
        order_(stages) {
    for (auto& list : order_) list.reserve(6 * micro_batches);
  }

  StageOrders Build() {
    int64_t remaining = int64_t{6} * stages_ * micro_batches_;
    int64_t now = 0;
    while (remaining > 0) {
      for (int32_t stage = 0; stage < stages_; ++stage) {
        if (PipelineItem item; state_[stage].free_at <= now && Pick(stage, now, item)) {
          Start(stage, item, now);
          --remaining;
        }
      }
      // Nothing more can start before the next pass ends or the next input arrives.
      while (!events_.empty() && events_.top() <= now) events_.pop();
      assert((remaining == 0 || !events_.empty()) && "ZB-V construction stalled");
      if (events_.empty()) break;
      now = events_.top();
    }
    for (const StageState& s : state_) makespan_ = std::max(makespan_, s.free_at);
    return std::move(order_);
  }

  // When the last pass ends in the built timeline. REQUIRES: Build() ran.
  int64_t makespan() const { return makespan_; }

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

  int32_t StageOf(int32_t virtual_stage) const {
    return virtual_stage < stages_ ? virtual_stage : 2 * stages_ - 1 - virtual_stage;
  }

  // When the output of |virtual_stage|'s pass for |mb| (its end in |end|) is on |stage|: at its
  // end on the same stage, a transfer later on another; kNotRun before the pass has started.
  int64_t ArrivesAt(const std::vector<int64_t>& end, int32_t virtual_stage, int32_t mb,
                    int32_t stage) const {
    const int64_t t = end[static_cast<size_t>(virtual_stage) * micro_batches_ + mb];
    if (t == kNotRun) return kNotRun;
    return StageOf(virtual_stage) == stage ? t : t + comm_;
  }

  // When |stage| may start its next backward of |chunk|: kNotRun while a dependency has not
  // started, or when there is none left.
  int64_t BackwardInputAt(int32_t stage, int32_t chunk) const {
    const int32_t mb = state_[stage].next_b[chunk];
    if (mb >= micro_batches_) return kNotRun;
    const int32_t v = Virtual(stage, chunk);
    const int64_t own = ArrivesAt(f_end_, v, mb, stage);
    if (own == kNotRun || v + 1 == 2 * stages_) return own;
    const int64_t grad = ArrivesAt(b_end_, v + 1, mb, stage);
    return grad == kNotRun ? kNotRun : std::max(own, grad);
  }

  // The same for the next forward of |chunk|, also kNotRun when the memory limit stops it.
  int64_t ForwardInputAt(int32_t stage, int32_t chunk) const {
    const StageState& s = state_[stage];
    const int32_t mb = s.next_f[chunk];
    const int32_t sets_needed = chunk == 0 ? 2 : 1;
    if (mb >= micro_batches_ || s.activations + sets_needed > 2 * stages_) return kNotRun;
    const int32_t v = Virtual(stage, chunk);
    return v == 0 ? 0 : ArrivesAt(f_end_, v - 1, mb, stage);
  }

  static bool By(int64_t at, int64_t now) { return at != kNotRun && at <= now; }

  // Sets |item| to what |stage| runs at |now|, in the order of the class comment; returns false
  // when nothing can run, or (with |fit_w_|) when the only thing that can is a W that would still
  // run when the input of another pass arrives.
  bool Pick(int32_t stage, int64_t now, PipelineItem& item) const {
    const StageState& s = state_[stage];
    const int64_t f1 = ForwardInputAt(stage, 1), b1 = BackwardInputAt(stage, 1);
    const int64_t f0 = ForwardInputAt(stage, 0), b0 = BackwardInputAt(stage, 0);
    if (By(f1, now)) {
      item = {Pass::kF, s.next_f[1], 1};
    } else if (By(b1, now)) {
      item = {Pass::kB, s.next_b[1], 1};
    } else if (By(f0, now)) {
      item = {Pass::kF, s.next_f[0], 0};
    } else if (By(b0, now)) {
      item = {Pass::kB, s.next_b[0], 0};
    } else if (!s.pending_w.empty()) {
      if (fit_w_) {
        for (int64_t at : {f1, b1, f0, b0}) {
          if (at != kNotRun && at < now + w_) return false;  // wait for it instead
        }
      }
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
    int64_t took = 0;
    switch (item.pass) {
      case Pass::kF:
        took = f_;
        f_end_[slot] = now + took;
        ++s.next_f[item.chunk];
        ++s.activations;
        break;
      case Pass::kB:
        took = b_;
        b_end_[slot] = now + took;
        ++s.next_b[item.chunk];
        s.pending_w.push_back({Pass::kW, item.micro_batch, item.chunk});
        break;
      case Pass::kW:
        took = w_;
        s.pending_w.pop_front();
        --s.activations;
        break;
      case Pass::kBW:
        assert(false && "ZB-V splits every backward");
        break;
    }
    s.free_at = now + took;
    events_.push(s.free_at);
    if (comm_ > 0 && item.pass != Pass::kW) events_.push(s.free_at + comm_);
    order_[stage].push_back(item);
  }

  int32_t stages_;
  int32_t micro_batches_;
  int64_t f_, b_, w_, comm_;
  bool fit_w_;
  std::vector<int64_t> f_end_;  // [virtual stage * micro_batches + mb]: when F ends
  std::vector<int64_t> b_end_;  // the same for B
  std::vector<StageState> state_;
  StageOrders order_;
  // Times at which something may become possible: a pass ends, or its output arrives.
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> events_;
  int64_t makespan_ = 0;
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

  int64_t WorstIdle() const {
    int64_t worst = 0;
    for (const StageState& st : state_) worst = std::max(worst, st.idle);
    return worst;
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
    if (fill && !st.pending_w.empty() && in - st.time > WorstIdle() - st.idle) PutW(stage);
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
    if (st.count[kF][0] > 0) st.idle += start - st.time;
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
  bool ok_ = true;
};

// When |order| (a ZB-V order of |stages| and |micro_batches|) ends when run with |times|: each
// stage runs its list in order, a pass starting once its stage is free and its inputs are there
// (a transfer after the pass that made them, on another stage).
int64_t ReplayMakespan(const StageOrders& order, int32_t stages, int32_t micro_batches,
                       const PassTimes& times) {
  const int64_t f = std::max<int64_t>(1, times.f), b = std::max<int64_t>(1, times.b),
                w = std::max<int64_t>(1, times.w), comm = std::max<int64_t>(0, times.comm);
  const auto virtual_stage = [&](int32_t stage, int32_t chunk) {
    return chunk == 0 ? stage : 2 * stages - 1 - stage;
  };
  const auto stage_of = [&](int32_t v) { return v < stages ? v : 2 * stages - 1 - v; };
  const size_t slots = static_cast<size_t>(2 * stages) * micro_batches;
  std::vector<int64_t> f_end(slots, kNotRun), b_end(slots, kNotRun);
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  std::vector<int64_t> free_at(static_cast<size_t>(stages), 0);
  const auto arrives = [&](const std::vector<int64_t>& end, int32_t v, int32_t mb, int32_t stage) {
    const int64_t t = end[static_cast<size_t>(v) * micro_batches + mb];
    return t == kNotRun || stage_of(v) == stage ? t : t + comm;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int32_t stage = 0; stage < stages; ++stage) {
      for (; next[stage] < order[stage].size(); ++next[stage]) {
        const PipelineItem& item = order[stage][next[stage]];
        const int32_t v = virtual_stage(stage, item.chunk);
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
  // The order built in unit time, run with |times|, and the orders built with them (greedy, with
  // W fitted into the waits, and in the repository's rounds with each of its fillings): the one
  // that ends soonest, as the repository keeps the best of its tries.
  StageOrders best = VBuilder(stages, micro_batches, PassTimes{}, false).Build();
  int64_t best_end = ReplayMakespan(best, stages, micro_batches, times);
  for (bool fit_w : {false, true}) {
    VBuilder builder(stages, micro_batches, times, fit_w);
    StageOrders order = builder.Build();
    const int64_t end = builder.makespan();
    if (end < best_end) {
      best_end = end;
      best = std::move(order);
    }
  }
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
