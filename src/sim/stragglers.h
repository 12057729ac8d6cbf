#ifndef LOOM_SIM_STRAGGLERS_H_
#define LOOM_SIM_STRAGGLERS_H_

// What-ifs on a simulated step: slow GPUs and slow NICs, fixed or drawn at random, run through
// the same step graph with only the task durations changed.
//
// Why these two: a synchronous step runs at the pace of its slowest member. MegaScale (Jiang et
// al., NSDI 2024) reports hosts whose GPUs computed some 10% slower than the rest dragging whole
// jobs, and slow or flapping NIC links; Llama 3 (Dubey et al. 2024, section 3.3.4) names a few slow
// stragglers that hold up thousands of GPUs, and a 1-2% throughput swing over the day as warmer
// GPUs lower their clocks (dynamic voltage and frequency scaling).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/sim_time.h"
#include "core/status.h"
#include "program/step_graph.h"
#include "program/step_timeline.h"
#include "spec/strategy.h"

namespace loom {

// One slow part of the cluster, as the command line names it: "rank=37:1.2" (GPU 37 in
// Megatron-core's rank order: tensor-parallel fastest, then context, data and pipeline parallel)
// or "node=3:1.2" (every GPU of node 3), and a factor: for a compute straggler the factor its
// kernels take longer (1.2: 20% slower), for a slow link the fraction of its bandwidth the NIC
// still has (0.5: half).
struct SlowPart {
  enum class Scope : uint8_t { kRank, kNode };
  Scope scope = Scope::kRank;
  int64_t index = 0;
  double factor = 1;
};

enum class SlowKind : uint8_t { kCompute, kLink };

// Parses |text| ("rank=37:1.2", "node=3:0.5") for the flag |flag|. Errors: InvalidArgument naming
// the flag, the text and the form, for a missing part, a negative index, or a factor that is not
// a number from 1 (no change) to 100 for kCompute, or in (0, 1] for kLink.
Result<SlowPart> ParseSlowPart(std::string_view text, SlowKind kind, std::string_view flag);

// Per rank of a step graph (the graph folds each tensor- and context-parallel group into one
// rank: StepGraph's rank r is stage r % stages of replica r / stages): how much longer its
// kernels take, and the bandwidth fraction left to its NICs. A folded rank runs at its slowest
// GPU: every layer's tensor-parallel collectives wait for the last member, and a transfer split
// over the group's NICs ends with the slowest one.
struct RankFactors {
  std::vector<double> compute;  // >= 1 where a GPU is slow
  std::vector<double> nic;      // in (0, 1]
};

// The GPUs of |strategy| as the step graph folds them: |gpus_per_node| GPUs per node.
struct GpuFolding {
  int64_t tp = 1, cp = 1, dp = 1, pp = 1;
  int64_t gpus_per_node = 1;
  int32_t replicas = 1;  // replicas the graph simulates: dp with --full, else 1

  int64_t gpus() const { return tp * cp * dp * pp; }
  // The graph rank of GPU |gpu|, or -1 when the graph does not simulate its replica.
  int32_t GraphRank(int64_t gpu) const;
};

GpuFolding FoldingOf(const Strategy& strategy, int64_t gpus_per_node, int32_t replicas);

// Every part of |compute| and |links| on the ranks of the graph. Errors: InvalidArgument naming
// the part when it lies beyond the job's GPUs or nodes, or in a replica the graph does not
// simulate.
Result<RankFactors> FoldSlowParts(const GpuFolding& folding, const std::vector<SlowPart>& compute,
                                  const std::vector<SlowPart>& links, std::string_view flag_compute,
                                  std::string_view flag_links);

// |base| (one time per task) with |factors| applied into |out|: a kernel task (a pass, the
// optimizer step, the marker before a pass) on a slow rank takes compute[rank] times as long; a
// transfer whose route crosses a slow rank's NIC takes as long as its slowest NIC allows
// (base / the smallest factor on its route). Tensor-parallel collectives run on NVLink (or are
// folded into the rank) and keep their time.
void ApplyRankFactors(const StepGraph& step, const RankFactors& factors,
                      const std::vector<SimTime>& base, std::vector<SimTime>& out);

// Where a slower step spent the extra time. A task's wait is the time from when its own stream and
// dependencies let it start to when it started: the time it spent for a link or for the other
// members of its collective.
struct WaitGrowth {
  std::string category;     // the task category ("dp", "pp", "tp", ...)
  double added_wait_s = 0;  // summed over every task of the category on every rank
  int64_t tasks = 0;        // tasks whose wait grew by more than a nanosecond
};

struct CollectiveDelay {
  std::string
      name;  // the collective's task name, with its virtual stage and bucket when it has them
  int32_t members = 0;
  double added_wait_s = 0;  // summed over its members
};

// A rank whose compute stream idled longer in the slowed step: it waited for the slow one.
struct RankIdle {
  int32_t rank = 0;  // graph rank: stage rank % stages of replica rank / stages
  double added_idle_s = 0;
};

struct StragglerReport {
  double baseline_step_s = 0;
  double step_s = 0;
  // The extra kernel time of the slowest rank, over the whole step: what it would add to the step
  // if every one of its kernels were on the critical path.
  double slowest_rank_extra_work_s = 0;
  int32_t slowest_rank = -1;
  // The extra time of the tasks on the slowed step's critical path (CriticalPath): the step grows
  // by this much when that chain of tasks also bounded the step before (else by less), never more.
  double critical_extra_s = 0;
  std::vector<WaitGrowth> absorbed;          // by category, the largest first
  std::vector<CollectiveDelay> collectives;  // the 5 whose members waited longest, in total
  // Ranks whose compute stream idled more than a microsecond longer (makespan less busy time),
  // and the 5 that idled the most longer; the slow rank itself idles less, or more by less.
  int32_t ranks_waiting = 0;
  std::vector<RankIdle> most_idle;
};

// Runs |step| with |factors| applied and compares it with |baseline| (its run without them).
Result<StragglerReport> AnalyzeStragglers(const StepGraph& step, const StepTimeline& baseline,
                                          const RankFactors& factors);

// Monte Carlo draws of per-GPU speed: each draw gives every GPU a factor exp(sigma * z), z standard
// normal (log-normal, median 1), and its kernels take that factor's time; |sigma| is the --jitter
// fraction. The spread is per GPU and per step, not per kernel: a kernel-level jitter averages
// out over the thousands of kernels of a step, while a GPU held at a lower clock (thermal or power
// throttling) stays slow for the whole step.
struct JitterOptions {
  double sigma = 0;
  int32_t draws = 0;
  uint64_t seed = 1;
  int32_t threads = 1;  // draws run in parallel; the result does not depend on it
  // Run every draw through the event engine rather than replaying the baseline's order (see
  // RunJitterMonteCarlo): exact where links or shared channels make the two differ, and some
  // hundred times slower on large steps. For checking the replay.
  bool exact = false;
};

struct MonteCarloResult {
  double baseline_step_s = 0;
  std::vector<double> step_s;  // per draw, in draw order
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, min_s = 0, max_s = 0;
  // The mean over draws of the slowest GPU's factor: the step follows it when one GPU bounds it.
  double mean_slowest_factor = 0;
};

// |options.draws| runs of |step| (already simulated: |baseline|) under per-GPU jitter; the draws
// are seeded by (seed, draw index), so each is the same whatever the thread count.
// A draw replays the baseline: every task starts when its stream, its dependencies, its
// collective's members and its link (in the baseline's order) allow, and takes its baseline time,
// kernels times their rank's factor - one pass over the tasks and edges. That is the engine's
// answer exactly for a step without links or shared channels; with them, each transfer keeps the
// contention it met in the baseline (options.exact runs the engine instead). Errors:
// InvalidArgument for sigma < 0 or > 1, draws < 1, or an engine error.
Result<MonteCarloResult> RunJitterMonteCarlo(const StepGraph& step, const StepTimeline& baseline,
                                             const GpuFolding& folding,
                                             const JitterOptions& options);

// The |q| quantile (0..1) of |sorted| by linear interpolation between closest ranks.
// REQUIRES: |sorted| is non-empty and ascending.
double Quantile(const std::vector<double>& sorted, double q);

}  // namespace loom

#endif  // LOOM_SIM_STRAGGLERS_H_
