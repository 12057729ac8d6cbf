// Interleaved 1F1B: |chunks| model chunks per stage, virtual stage = chunk * stages + stage.

#include <algorithm>
#include <cstdint>

#include "schedule/builders.h"

namespace loom::schedule_internal {
namespace {

// The k-th forward (k = 0 .. micro_batches * chunks - 1) of a stage in Megatron-LM's order:
// micro-batches go in groups of |group| (pp by default); a group runs through chunk 0, then
// chunk 1, and so on, before the next group starts. The last group takes what is left, fewer
// than |group| when |group| does not divide the micro-batches (megatron/core/pipeline_parallel/
// schedules.py, get_schedule_table, NVIDIA/Megatron-LM d98e8a64).
PipelineItem NthForward(int32_t k, int32_t micro_batches, int32_t chunks, int32_t group) {
  const int32_t whole = micro_batches / group;  // groups of |group|, before the last, partial one
  const int32_t in_whole = whole * group * chunks;
  if (k < in_whole) {
    const int32_t g = k / (group * chunks), at = k % (group * chunks);
    return {Pass::kF, g * group + at % group, at / group};
  }
  const int32_t size = micro_batches - whole * group, at = k - in_whole;
  return {Pass::kF, whole * group + at % size, at / size};
}

// The k-th backward: the same walk with the chunks in reverse, as gradients enter the last chunk.
PipelineItem NthBackward(int32_t k, int32_t micro_batches, int32_t chunks, int32_t group) {
  PipelineItem item = NthForward(k, micro_batches, chunks, group);
  item.pass = Pass::kBW;
  item.chunk = chunks - 1 - item.chunk;
  return item;
}

}  // namespace

// Interleaved 1F1B (Narayanan et al. 2021, §2.2.2, Figure 4 bottom). Each stage holds |chunks|
// smaller pieces of the model, so the fill and drain of the pipeline take 1/chunks of the time
// and the bubble shrinks by that factor: (p - 1)(T_F + T_B) / chunks for stage times T_F, T_B.
// The warm-up length is Megatron-LM's: (p - s - 1) * 2 + (chunks - 1) * group forwards, capped at
// the total; then one forward and one backward in turn; then the remaining backwards.
StageOrders InterleavedOrder(int32_t stages, int32_t micro_batches, int32_t chunks, int32_t group) {
  StageOrders order(stages);
  const int32_t total = micro_batches * chunks;
  for (int32_t stage = 0; stage < stages; ++stage) {
    auto& list = order[stage];
    list.reserve(2 * total);
    const int32_t warmup = std::min((stages - stage - 1) * 2 + (chunks - 1) * group, total);
    for (int32_t k = 0; k < warmup; ++k)
      list.push_back(NthForward(k, micro_batches, chunks, group));
    for (int32_t k = 0; k + warmup < total; ++k) {
      list.push_back(NthForward(k + warmup, micro_batches, chunks, group));
      list.push_back(NthBackward(k, micro_batches, chunks, group));
    }
    for (int32_t k = total - warmup; k < total; ++k) {
      list.push_back(NthBackward(k, micro_batches, chunks, group));
    }
  }
  return order;
}

}  // namespace loom::schedule_internal
