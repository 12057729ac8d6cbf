// Interleaved 1F1B: |chunks| model chunks per stage, virtual stage = chunk * stages + stage.

#include <algorithm>
#include <cstdint>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

// The k-th forward (k = 0 .. micro_batches * chunks - 1) of a stage in Megatron-LM's order:
// micro-batches go in groups of |stages|; a group runs through chunk 0, then chunk 1, and so on,
// before the next group starts (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving, get_model_chunk_id).
PipelineItem NthForward(int32_t k, int32_t stages, int32_t chunks) {
  const int32_t group = k / (stages * chunks);
  const int32_t chunk = (k / stages) % chunks;
  return {Pass::kF, group * stages + k % stages, chunk};
}

// The k-th backward: the same walk with the chunks in reverse, as gradients enter the last chunk.
PipelineItem NthBackward(int32_t k, int32_t stages, int32_t chunks) {
  PipelineItem item = NthForward(k, stages, chunks);
  item.pass = Pass::kBW;
  item.chunk = chunks - 1 - item.chunk;
  return item;
}

}  // namespace

// Interleaved 1F1B (Narayanan et al. 2021, §2.2.2, Figure 4 bottom). Each stage holds |chunks|
// smaller pieces of the model, so the fill and drain of the pipeline take 1/chunks of the time
// and the bubble shrinks by that factor: (p - 1)(T_F + T_B) / chunks for stage times T_F, T_B.
// The warm-up length is Megatron-LM's: (p - s - 1) * 2 + (chunks - 1) * p forwards, capped at
// the total; then one forward and one backward in turn; then the remaining backwards.
// REQUIRES: micro_batches % stages == 0, so the groups of |stages| micro-batches are whole.
StageOrders InterleavedOrder(int32_t stages, int32_t micro_batches, int32_t chunks) {
  StageOrders order(stages);
  const int32_t total = micro_batches * chunks;
  for (int32_t stage = 0; stage < stages; ++stage) {
    auto& list = order[stage];
    list.reserve(2 * total);
    const int32_t warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * stages, total);
    for (int32_t k = 0; k < warmup; ++k) list.push_back(NthForward(k, stages, chunks));
    for (int32_t k = 0; k + warmup < total; ++k) {
      list.push_back(NthForward(k + warmup, stages, chunks));
      list.push_back(NthBackward(k, stages, chunks));
    }
    for (int32_t k = total - warmup; k < total; ++k) {
      list.push_back(NthBackward(k, stages, chunks));
    }
  }
  return order;
}

}  // namespace loom::schedule_internal
