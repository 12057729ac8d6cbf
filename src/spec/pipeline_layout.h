#ifndef LOOM_SPEC_PIPELINE_LAYOUT_H_
#define LOOM_SPEC_PIPELINE_LAYOUT_H_

// Megatron-core's pipeline layouts as text (--pipeline-model-parallel-layout, core_v0.13.0 and
// later): loom's layers per virtual stage (Strategy::layout, LayersPerVirtualStage) to and from it.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom {

// |layers| (per virtual stage, LayersPerVirtualStage's order) in Megatron-core's layout syntax
// (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list): virtual stages
// separated by "|", "E" the embedding, "t" a transformer layer, "L" the loss; runs of equal stages
// are folded as "(...|)*n" and runs of layers as "t*n". E.g. 126 layers on 16 stages with 8
// chunks, the first and last empty: "E|(t|)*126L".
std::string PipelineLayoutText(const std::vector<int64_t>& layers);

// Parses Megatron-core's layout syntax into transformer layers per virtual stage, for |pp| stages:
// E exactly once, first; L exactly once, last; only E, L and t (m, multi-token prediction, is not
// modelled); the number of virtual stages a multiple of pp. Errors: InvalidArgument naming the
// character or count and the fix.
Result<std::vector<int64_t>> ParsePipelineLayout(const std::string& text, int64_t pp);

// The smallest micro-batch group Megatron-LM's interleaved schedule accepts for |micro_batches| on
// |pp| stages (Strategy::microbatch_group: pp <= group <= micro-batches, the last group whole or of
// at least pp), or 0 when there is none (fewer micro-batches than stages).
int64_t SmallestMicrobatchGroup(int64_t micro_batches, int64_t pp);

}  // namespace loom

#endif  // LOOM_SPEC_PIPELINE_LAYOUT_H_
