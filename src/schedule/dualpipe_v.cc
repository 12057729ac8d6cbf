// DualPipeV: two model chunks per stage in a V (as ZB-V), with forward+backward pairs of the two
// chunks that run overlapped.

#include <cassert>
#include <cstdint>
#include <deque>
#include <vector>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

// Appends the passes of one stage. Micro-batches enter every (pass, chunk) in order, so each
// call names only the pass and the chunk; the next micro-batch for it is counted here.
class StageWriter {
 public:
  explicit StageWriter(std::vector<PipelineItem>& list) : list_(list) {}

  void Forward(int32_t chunk) { list_.push_back({Pass::kF, next_f_[chunk]++, chunk}); }

  // A backward of |chunk|; with |split_w| only its input part (B), its W queued for Weight().
  void Backward(int32_t chunk, bool split_w) {
    const int32_t mb = next_b_[chunk]++;
    if (!split_w) {
      list_.push_back({Pass::kBW, mb, chunk});
      return;
    }
    list_.push_back({Pass::kB, mb, chunk});
    pending_w_.push_back({Pass::kW, mb, chunk});
  }

  // The oldest W that a split backward left behind.
  void Weight() {
    assert(!pending_w_.empty());
    list_.push_back(pending_w_.front());
    pending_w_.pop_front();
  }

  void WeightsLeft() {
    while (!pending_w_.empty()) Weight();
  }

  // A forward of |f_chunk| then a full backward of |b_chunk|, overlapped if |overlapped|.
  void Pair(int32_t f_chunk, int32_t b_chunk, bool overlapped = true) {
    Forward(f_chunk);
    list_.back().overlaps_next = overlapped;
    Backward(b_chunk, /*split_w=*/false);
  }

 private:
  std::vector<PipelineItem>& list_;
  int32_t next_f_[2] = {0, 0};
  int32_t next_b_[2] = {0, 0};
  std::deque<PipelineItem> pending_w_;
};

// The step of stage |s| (of p stages, m micro-batches) in eight phases. Chunk 0 is the arm that
// goes down the stages, chunk 1 the arm that comes back; stage 0 computes the loss.
void WriteStage(int32_t p, int32_t m, int32_t s, StageWriter& out) {
  const int32_t below = p - s - 1;  // stages under this one
  // 1. Fill the down arm: micro-batch 0 goes down the stages below and back up before its
  //    chunk-1 forward reaches this stage, time for two chunk-0 forwards per stage below.
  for (int32_t i = 0; i < 2 * below; ++i) out.Forward(0);
  // 2. Forwards of both chunks in turn, until the first gradient, which starts at the loss on
  //    stage 0 and goes down s stages, reaches this stage.
  for (int32_t i = 0; i <= s; ++i) {
    out.Forward(0);
    out.Forward(1);
  }
  // 3. Up-arm backwards with W split off and run at once ("zero bubble"), between forwards.
  for (int32_t i = 0; i < below; ++i) {
    out.Backward(1, /*split_w=*/true);
    out.Weight();
    out.Forward(1);
  }
  // 4. Steady state: two overlapped pairs, F0 with BW1 and F1 with BW0. The last stage runs its
  //    first F0 and BW1 apart: that BW1 is the first gradient to come all the way down the up
  //    arm, and F0 need not wait for it.
  for (int32_t i = 0; i < m - 2 * p + s + 1; ++i) {
    out.Pair(0, 1, /*overlapped=*/!(i == 0 && s == p - 1));
    out.Pair(1, 0);
  }
  // 5. The down arm has no forwards left: BW1 alone, then F1 with BW0.
  for (int32_t i = 0; i < below; ++i) {
    out.Backward(1, /*split_w=*/false);
    out.Pair(1, 0);
  }
  // 6. Backwards of both chunks. From the middle on they split W off, to fill the drain
  //    with Ws in phases 7 and 8; odd stages start splitting one backward earlier, so every
  //    stage defers s + 1 Ws.
  for (int32_t i = 0; i <= s; ++i) {
    const int32_t half = (s + 1) / 2;
    out.Backward(1, /*split_w=*/i > half || (i == half && s % 2 == 1));
    out.Backward(0, /*split_w=*/i >= half);
  }
  // 7. The last down-arm backwards, each after one deferred W.
  for (int32_t i = 0; i < below; ++i) {
    out.Weight();
    out.Backward(0, /*split_w=*/true);
  }
  // 8. The Ws left.
  out.WeightsLeft();
}

}  // namespace

// DualPipeV: DualPipe (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §3.2.1) cut in half,
// so that each stage holds two chunks in a V instead of two copies of the model (the "cut-in-half"
// DualPipe of Sea AI Lab, adopted as DualPipeV in deepseek-ai/DualPipe). Its core is DualPipe's:
// a forward of one chunk and a backward of the other form a pair whose communication hides
// behind each other's computation, and the drain is filled with Ws split off the backwards.
// REQUIRES: micro_batches >= 2 * stages - 1 (phase 4 needs a non-negative length on stage 0);
// BuildSchedule asks for 2 * stages, as the reference implementation does.
StageOrders DualPipeVOrder(int32_t stages, int32_t micro_batches) {
  StageOrders order(stages);
  for (int32_t stage = 0; stage < stages; ++stage) {
    order[stage].reserve(6 * micro_batches);
    StageWriter writer(order[stage]);
    WriteStage(stages, micro_batches, stage, writer);
  }
  return order;
}

}  // namespace loom::schedule_internal
