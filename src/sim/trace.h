#ifndef LOOM_SIM_TRACE_H_
#define LOOM_SIM_TRACE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "program/step_graph.h"
#include "program/task_graph.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/simulator.h"
#include "sim/trace_collectives.h"
#include "spec/model.h"

namespace loom {

// What a trace says about the step beyond its graph and times; the CLI fills it, so that this
// layer needs no command line.
struct TraceContext {
  // otherData: what was simulated, for people. |strategy_json| is JSON text (StrategyJson(...)
  // dumped), written into the trace as it is; empty: null.
  std::string model, cluster, strategy_json, loom_version;
  // Megatron-LM's group sizes, for the global rank of each graph rank (TraceRankName).
  int64_t tp = 1, cp = 1, dp = 1;
  // The step is unfolded to its GPUs (program/unfold.h): graph rank u is one GPU, lane u / stages
  // of stage u % stages, and not a tp x cp group.
  bool unfolded = false;
  // Per virtual stage: its chunk (ChunkOfVirtualStages) and its transformer layers
  // (LayersPerVirtualStage; ChunkBlocks::layers). Empty: slices carry no chunk or layers.
  std::vector<int32_t> chunk_of_virtual_stage;
  std::vector<int64_t> layers_per_virtual_stage;
  // What transfers and collectives move (bytes on their slices); null: no bytes.
  const StepPayloads* payloads = nullptr;
  // Per virtual stage: what the tp, cp and ep collectives of each pass move
  // (PassCollectiveBytesOf), on the pass's tp slices. Empty: none.
  std::vector<PassCollectiveBytes> pass_collectives;
};

// The context of a step PrepareTrainingStep prepared for |model| with |kernels| (the options it was
// given): the group sizes, the chunk and layers of each virtual stage, the payloads (a pointer
// into |prepared|, which must outlive the context) and the collectives of each pass. The CLI adds
// model, cluster, strategy_json and loom_version. Errors: those of BuildChunkBlocks.
Result<TraceContext> StepTraceContext(const PreparedStep& prepared, const ModelSpec& model,
                                      const LayerOpsOptions& kernels = {});

// One timeline of the step, as processes of the trace: every rank r of the graph becomes process
// |pid_offset| + r, named |process_prefix| + TraceRankName. Two runs of one graph (predicted and
// measured) give one file with both, side by side.
struct TraceRun {
  const StepTimeline* timeline = nullptr;
  const MemoryReport* memory = nullptr;  // null: no memory counters
  std::string process_prefix;            // "predicted ", "measured ", or ""
  int32_t pid_offset = 0;
};

// Graph rank |rank| of |step| (stage rank % stages of replica rank / stages) named by the
// Megatron-LM global rank of its tp 0, cp 0 member, in the order tp-cp-ep-dp-pp of megatron/core/
// parallel_state.py (RankGenerator; ep is 1 in the dense groups): global = tp * cp * (dp_rank +
// dp * pp_rank). "rank 3072 (pp 3, dp 0, cp 0, tp 0)".
std::string TraceRankName(const StepGraph& step, const TraceContext& context, int32_t rank);

// Returns the step as Chrome trace JSON (the Trace Event Format; Perfetto and chrome://tracing
// open it): {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}} with, one event per
// line,
//  - "ph":"M" metadata naming each process (a graph rank of a run) and each thread (a stream, as
//    in AddStream()), with sort indices that keep runs, ranks and streams in id order;
//  - per run, one "ph":"X" complete event per task in task id order: name TaskLabel ("F mb3 c1"),
//    "cat" the graph's category, "ts"/"dur" in microseconds, "args" with the task id, then what
//    is known of micro_batch, chunk, virtual_stage, layers ("24-31", the chunk's transformer
//    layers), bytes (sends: the activations; collectives: the bucket or gather, as nccl-tests
//    counts them, with the collective's kind), pass_collective_bytes on a tp slice (what its
//    pass's tp, cp and ep collectives move, by group; its exposed and hidden slices share them),
//    peer (a send's receiver) or group (a collective's members, when the graph has them;
//    otherwise its size and kind of group), and the link and channels of the graph;
//  - per run, flow events ("ph":"s" on the source slice at its start, "ph":"f" with "bp":"e" on
//    the destination slice at its start; ids unique in the file) for each pipeline send to the
//    pass that receives it (cat "pp-send") and each other dependency between tasks on different
//    streams (cat "dependency"), except where a measured destination starts before its source
//    (clocks of two ranks apart). Their number is bounded by the graph's dependencies, which the
//    graph holds anyway: at most two events per dependency;
//  - per run with memory, one "ph":"C" counter event per sample of each rank's memory timeline,
//    named "memory", with "args":{"bytes":<total>}.
// otherData holds model, cluster, strategy, loom_version and what a process stands for. Times
// are printed from the integer nanoseconds with exactly three decimals, and keys in a fixed order,
// so the same input always gives the same bytes.
// REQUIRES: each run's timeline (and memory) came from |step|'s graph.
std::string ChromeTraceJson(const StepGraph& step, std::span<const TraceRun> runs,
                            const TraceContext& context);

// One run of a graph without a step around it: slices keep the graph's names, ranks are "rank r".
std::string ChromeTraceJson(const TaskGraph& graph, const StepTimeline& timeline,
                            const MemoryReport* memory = nullptr);

}  // namespace loom

#endif  // LOOM_SIM_TRACE_H_
