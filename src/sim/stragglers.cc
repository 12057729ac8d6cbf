#include "sim/stragglers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "core/formatted.h"
#include "sim/critical_path.h"
#include "sim/engine.h"
#include "sim/graph_index.h"

namespace loom {
namespace {

SimTime ScaledBy(SimTime t, double factor) {
  return factor == 1 ? t : SimTime::FromSeconds(t.ToSeconds() * factor);
}

// The kernels of a rank: what a slower GPU stretches.
bool IsKernelTask(const StepGraph& step, TaskId id) {
  if (step.work.empty()) return step.graph.task(id).category == step.compute_category;
  const WorkKind kind = step.work[id].kind;
  return kind == WorkKind::kPass || kind == WorkKind::kOptimizer;
}

Status PartError(std::string_view flag, std::string_view text, std::string_view why,
                 SlowKind kind) {
  return Status::InvalidArgument(
      StrCat(flag, " '", text, "': ", why, "; write rank=GPU:FACTOR or node=NODE:FACTOR, e.g. ",
             kind == SlowKind::kCompute ? "rank=37:1.2 (GPU 37's kernels take 1.2 times as long)"
                                        : "node=3:0.5 (node 3's NICs at half their bandwidth)"));
}

// A per-draw stream of random numbers that depends on (seed, draw) only: SplitMix64 (Steele et
// al., "Fast splittable pseudorandom number generators", OOPSLA 2014) mixes the two into the seed
// of the draw's own Mersenne Twister.
uint64_t MixSeed(uint64_t seed, uint64_t draw) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (draw + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Per channel: the rank whose NIC it is, or -1. A transfer's route crosses the NICs of the ranks
// whose factors bound it.
std::vector<int32_t> NicOwners(const StepGraph& step) {
  std::vector<int32_t> owner(step.graph.num_channels(), -1);
  for (size_t rank = 0; rank < step.inter_node_port.size(); ++rank) {
    const Port& port = step.inter_node_port[rank];
    if (port.tx != kNoChannel) owner[port.tx] = static_cast<int32_t>(rank);
    if (port.rx != kNoChannel) owner[port.rx] = static_cast<int32_t>(rank);
  }
  return owner;
}

void Apply(const StepGraph& step, const std::vector<int32_t>& nic_owner, const RankFactors& factors,
           const std::vector<SimTime>& base, std::vector<SimTime>& out) {
  const TaskGraph& g = step.graph;
  out.resize(base.size());
  const bool any_nic = !factors.nic.empty();
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const Task& task = g.task(t);
    double scale = 1;
    if (IsKernelTask(step, t)) {
      scale = factors.compute[g.rank_of(t)];
    } else if (any_nic && task.route != kNoRoute) {
      double fraction = 1;
      for (ChannelId c : g.route_channels(task.route)) {
        if (const int32_t rank = nic_owner[c]; rank >= 0)
          fraction = std::min(fraction, factors.nic[rank]);
      }
      scale = 1 / fraction;
    }
    out[t] = ScaledBy(base[t], scale);
  }
}

// When each task could have started on its own: its stream's previous task and its dependencies
// ended. The rest of its wait, to its start, was for a link or its collective's other members.
std::vector<SimTime> OwnReady(const TaskGraph& g, const StepTimeline& timeline,
                              const std::vector<TaskId>& previous, const FlatRows& predecessors) {
  std::vector<SimTime> ready(g.num_tasks(), SimTime::Zero());
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (previous[t] >= 0) ready[t] = timeline.end[previous[t]];
    for (TaskId p : predecessors.Row(t)) ready[t] = Max(ready[t], timeline.end[p]);
  }
  return ready;
}

// A collective's name, and where the step builder recorded it, which stage's gradients or weights
// and which bucket: "grad reduce (virtual stage 3, bucket 2 of 4)".
std::string CollectiveName(const StepGraph& step, TaskId t) {
  std::string name(step.graph.Name(step.graph.task(t).name));
  if (step.work.empty()) return name;
  const TaskWork& w = step.work[t];
  if (w.kind != WorkKind::kGradReduce && w.kind != WorkKind::kParamGather) return name;
  const char* what = w.kind == WorkKind::kGradReduce ? "virtual stage " : "stage ";
  if (w.parts <= 1) return StrCat(name, " (", what, w.index, ")");
  return StrCat(name, " (", what, w.index, ", bucket ", w.part + 1, " of ", w.parts, ")");
}

// The baseline step replayed with other kernel times, in the order the engine started its tasks.
// Each task starts when its stream's previous task, its dependencies and the task that held its
// link before it in the baseline have ended (a collective when all its members could), and runs
// for the time it took in the baseline (its time alone stretched by the bandwidth it shared),
// kernels times their rank's factor. Without links and shared channels this is exactly what the
// engine computes (a longest path through the same graph); with them it keeps the baseline's link
// order and each transfer's contention, which a few percent of jitter barely moves - and it costs
// one pass over the tasks and edges instead of an event simulation.
class StepReplay {
 public:
  // Tasks are renumbered by their position in the baseline's start order, so that a replay reads
  // its arrays front to back and a task's predecessors, which started before it, are mostly close
  // behind it: a pass over three million tasks stays in cache instead of jumping through memory.
  // A collective's members start together, one after another in that order.
  StepReplay(const StepGraph& step, const StepTimeline& baseline) {
    const TaskGraph& g = step.graph;
    const int32_t n = g.num_tasks();
    const std::vector<int32_t>& position = baseline.start_sequence;
    std::vector<TaskId> order(n);
    for (TaskId t = 0; t < n; ++t) order[position[t]] = t;
    taken_.resize(n);
    kernel_rank_.assign(n, -1);
    members_.assign(n, 1);
    for (int32_t i = 0; i < n; ++i) {
      const TaskId t = order[i];
      taken_[i] = baseline.end[t] - baseline.start[t];
      if (IsKernelTask(step, t)) kernel_rank_[i] = g.rank_of(t);
      if (const GroupId group = g.group_of(t); group != kNoGroup) {
        const int32_t size = static_cast<int32_t>(g.group_members(group).size());
        const bool first = i == 0 || g.group_of(order[i - 1]) != group;
        members_[i] = first ? size : 0;
        // The engine starts a collective's members one after another (StartCollective); a
        // timeline where they are apart did not come from it.
        if (first && (i + size > n || g.group_of(order[i + size - 1]) != group))
          consecutive_ = false;
      }
    }
    // Predecessors: dependencies, the previous task on the stream, the link's previous holder.
    const std::vector<TaskId> previous = PreviousOnStream(g);
    std::vector<int32_t> link_previous(n, -1);  // by position
    std::vector<int32_t> link_last(g.num_links(), -1);
    for (int32_t i = 0; i < n; ++i) {
      if (const LinkId link = g.task(order[i]).link; link != kNoLink) {
        link_previous[i] = link_last[link];
        link_last[link] = i;
      }
    }
    std::vector<int32_t>& offsets = predecessors_.offsets;
    offsets.assign(n + 1, 0);
    for (const Dependency& d : g.dependencies()) ++offsets[position[d.after] + 1];
    for (int32_t i = 0; i < n; ++i)
      offsets[i + 1] += (previous[order[i]] >= 0) + (link_previous[i] >= 0);
    for (int32_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
    predecessors_.items.resize(offsets[n]);
    std::vector<int32_t> cursor(offsets.begin(), offsets.end() - 1);
    for (const Dependency& d : g.dependencies())
      predecessors_.items[cursor[position[d.after]]++] = position[d.before];
    for (int32_t i = 0; i < n; ++i) {
      if (const TaskId p = previous[order[i]]; p >= 0)
        predecessors_.items[cursor[i]++] = position[p];
      if (link_previous[i] >= 0) predecessors_.items[cursor[i]++] = link_previous[i];
    }
  }

  // Whether every collective's members started one after another, as the engine starts them.
  bool replayable() const { return consecutive_; }

  // The step's makespan with rank r's kernels |factor[r]| times as long; |end| is scratch.
  SimTime Makespan(const std::vector<double>& factor, std::vector<SimTime>& end) const {
    const int32_t n = static_cast<int32_t>(taken_.size());
    end.resize(n);
    const auto time_of = [&](int32_t i) {
      const int32_t rank = kernel_rank_[i];
      return rank < 0 ? taken_[i] : ScaledBy(taken_[i], factor[rank]);
    };
    const auto ready_of = [&](int32_t i) {
      SimTime ready;
      for (int32_t p : predecessors_.Row(i)) ready = Max(ready, end[p]);
      return ready;
    };
    SimTime makespan;
    for (int32_t i = 0; i < n;) {
      const int32_t size = members_[i];
      if (size == 1) {
        end[i] = ready_of(i) + time_of(i);
        makespan = Max(makespan, end[i]);
        ++i;
        continue;
      }
      // A collective: it starts when its last member is ready and runs for its longest member.
      SimTime start, longest;
      for (int32_t m = i; m < i + size; ++m) {
        start = Max(start, ready_of(m));
        longest = Max(longest, time_of(m));
      }
      for (int32_t m = i; m < i + size; ++m) end[m] = start + longest;
      makespan = Max(makespan, start + longest);
      i += size;
    }
    return makespan;
  }

 private:
  // By position in the baseline's start order:
  std::vector<SimTime> taken_;        // the time the task took in the baseline
  std::vector<int32_t> kernel_rank_;  // its rank if it is a kernel task, else -1
  std::vector<int32_t> members_;      // 1 alone; a collective's first member: its size
  FlatRows predecessors_;             // positions
  bool consecutive_ = true;
};

}  // namespace

Result<SlowPart> ParseSlowPart(std::string_view text, SlowKind kind, std::string_view flag) {
  SlowPart part;
  const size_t eq = text.find('=');
  const size_t colon = text.find(':');
  if (eq == std::string_view::npos || colon == std::string_view::npos || colon < eq)
    return PartError(flag, text, "no scope, index and factor", kind);
  const std::string_view scope = text.substr(0, eq);
  if (scope == "rank") {
    part.scope = SlowPart::Scope::kRank;
  } else if (scope == "node") {
    part.scope = SlowPart::Scope::kNode;
  } else {
    return PartError(flag, text, StrCat("unknown scope '", scope, "' (rank or node)"), kind);
  }
  const std::string_view index = text.substr(eq + 1, colon - eq - 1);
  const auto [index_end, index_error] =
      std::from_chars(index.data(), index.data() + index.size(), part.index);
  if (index.empty() || index_error != std::errc() || index_end != index.data() + index.size() ||
      part.index < 0) {
    return PartError(flag, text, StrCat("'", index, "' is not a GPU or node number (0, 1, ...)"),
                     kind);
  }
  const std::string factor(text.substr(colon + 1));
  char* end = nullptr;
  part.factor = factor.empty() ? NAN : std::strtod(factor.c_str(), &end);
  if (factor.empty() || end != factor.c_str() + factor.size() || !std::isfinite(part.factor))
    return PartError(flag, text, StrCat("'", factor, "' is not a number"), kind);
  if (kind == SlowKind::kCompute && (part.factor < 1 || part.factor > 100)) {
    return PartError(flag, text,
                     "the factor is how many times longer the GPU's kernels take: from 1 (no "
                     "change) to 100",
                     kind);
  }
  if (kind == SlowKind::kLink && (part.factor <= 0 || part.factor > 1)) {
    return PartError(
        flag, text, "the factor is the fraction of its bandwidth the NIC keeps: above 0, at most 1",
        kind);
  }
  return part;
}

int32_t GpuFolding::GraphRank(int64_t gpu) const {
  const int64_t replica = (gpu / (tp * cp)) % dp;
  const int64_t stage = gpu / (tp * cp * dp);
  if (replica >= replicas) return -1;
  return static_cast<int32_t>(stage + pp * replica);
}

GpuFolding FoldingOf(const Strategy& strategy, int64_t gpus_per_node, int32_t replicas) {
  return {strategy.tp, strategy.cp, strategy.dp, strategy.pp, gpus_per_node, replicas};
}

Result<RankFactors> FoldSlowParts(const GpuFolding& folding, const std::vector<SlowPart>& compute,
                                  const std::vector<SlowPart>& links, std::string_view flag_compute,
                                  std::string_view flag_links) {
  const int32_t ranks = static_cast<int32_t>(folding.pp * folding.replicas);
  RankFactors out;
  out.compute.assign(ranks, 1.0);
  if (!links.empty()) out.nic.assign(ranks, 1.0);
  const int64_t gpus = folding.gpus();
  const int64_t nodes = (gpus + folding.gpus_per_node - 1) / folding.gpus_per_node;
  const auto each_gpu = [&](const SlowPart& part, std::string_view flag, auto&& apply) -> Status {
    const bool node = part.scope == SlowPart::Scope::kNode;
    const int64_t limit = node ? nodes : gpus;
    if (part.index >= limit) {
      return Status::InvalidArgument(StrCat(flag, " ", node ? "node=" : "rank=", part.index,
                                            ": the job has ", limit, node ? " nodes" : " GPUs",
                                            " (numbered from 0); name one of them"));
    }
    const int64_t first = node ? part.index * folding.gpus_per_node : part.index;
    const int64_t last = node ? std::min(gpus, first + folding.gpus_per_node) : first + 1;
    for (int64_t gpu = first; gpu < last; ++gpu) {
      const int32_t rank = folding.GraphRank(gpu);
      if (rank < 0) {
        return Status::InvalidArgument(
            StrCat(flag, " ", node ? "node=" : "rank=", part.index, ": GPU ", gpu,
                   " is in data-parallel replica ", (gpu / (folding.tp * folding.cp)) % folding.dp,
                   ", which is not simulated; add --full to simulate every replica"));
      }
      apply(rank);
    }
    return Status::Ok();
  };
  for (const SlowPart& part : compute) {
    LOOM_RETURN_IF_ERROR(each_gpu(part, flag_compute, [&](int32_t rank) {
      out.compute[rank] = std::max(out.compute[rank], part.factor);
    }));
  }
  for (const SlowPart& part : links) {
    LOOM_RETURN_IF_ERROR(each_gpu(part, flag_links, [&](int32_t rank) {
      out.nic[rank] = std::min(out.nic[rank], part.factor);
    }));
  }
  return out;
}

void ApplyRankFactors(const StepGraph& step, const RankFactors& factors,
                      const std::vector<SimTime>& base, std::vector<SimTime>& out) {
  Apply(step, NicOwners(step), factors, base, out);
}

Result<StragglerReport> AnalyzeStragglers(const StepGraph& step, const StepTimeline& baseline,
                                          const RankFactors& factors) {
  const TaskGraph& g = step.graph;
  const std::vector<SimTime> base = TaskDurations(g);
  std::vector<SimTime> slowed;
  ApplyRankFactors(step, factors, base, slowed);
  LOOM_ASSIGN_OR_RETURN(const StepTimeline timeline, Simulate(g, slowed));

  StragglerReport report;
  report.baseline_step_s = baseline.makespan.ToSeconds();
  report.step_s = timeline.makespan.ToSeconds();
  std::vector<double> extra(g.num_ranks(), 0);
  for (TaskId t = 0; t < g.num_tasks(); ++t)
    extra[g.rank_of(t)] += (slowed[t] - base[t]).ToSeconds();
  const auto slowest = std::max_element(extra.begin(), extra.end());
  if (slowest != extra.end() && *slowest > 0) {
    report.slowest_rank = static_cast<int32_t>(slowest - extra.begin());
    report.slowest_rank_extra_work_s = *slowest;
  }

  for (const CriticalStep& on_path : CriticalPath(g, timeline))
    report.critical_extra_s += (slowed[on_path.task] - base[on_path.task]).ToSeconds();

  const std::vector<TaskId> previous = PreviousOnStream(g);
  const FlatRows predecessors = DependencyPredecessors(g);
  const std::vector<SimTime> ready_before = OwnReady(g, baseline, previous, predecessors);
  const std::vector<SimTime> ready_after = OwnReady(g, timeline, previous, predecessors);
  std::map<NameId, WaitGrowth> by_category;
  std::vector<double> group_wait(g.num_groups(), 0);
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    const SimTime before = baseline.start[t] - ready_before[t];
    const SimTime after = timeline.start[t] - ready_after[t];
    if (after <= before) continue;
    const double grown = (after - before).ToSeconds();
    WaitGrowth& w = by_category[g.task(t).category];
    w.added_wait_s += grown;
    ++w.tasks;
    if (const GroupId group = g.group_of(t); group != kNoGroup) group_wait[group] += grown;
  }
  for (auto& [category, w] : by_category) {
    w.category = std::string(g.Name(category));
    report.absorbed.push_back(w);
  }
  std::sort(report.absorbed.begin(), report.absorbed.end(),
            [](const WaitGrowth& a, const WaitGrowth& b) {
              return a.added_wait_s != b.added_wait_s ? a.added_wait_s > b.added_wait_s
                                                      : a.category < b.category;
            });
  std::vector<GroupId> groups;
  for (GroupId group = 0; group < g.num_groups(); ++group) {
    if (group_wait[group] > 0) groups.push_back(group);
  }
  constexpr size_t kShownCollectives = 5;
  const size_t shown = std::min(groups.size(), kShownCollectives);
  std::partial_sort(groups.begin(), groups.begin() + shown, groups.end(),
                    [&](GroupId a, GroupId b) {
                      return group_wait[a] != group_wait[b] ? group_wait[a] > group_wait[b] : a < b;
                    });
  for (size_t i = 0; i < shown; ++i) {
    const std::span<const TaskId> members = g.group_members(groups[i]);
    report.collectives.push_back({CollectiveName(step, members.front()),
                                  static_cast<int32_t>(members.size()), group_wait[groups[i]]});
  }

  std::vector<RankIdle> idle;
  for (int32_t rank = 0;
       rank < g.num_ranks() && rank < static_cast<int32_t>(step.compute_stream.size()); ++rank) {
    const StreamId stream = step.compute_stream[rank];
    const SimTime before = baseline.makespan - baseline.stream_busy[stream];
    const SimTime after = timeline.makespan - timeline.stream_busy[stream];
    if (after - before > SimTime::FromNanos(1000))
      idle.push_back({rank, (after - before).ToSeconds()});
  }
  report.ranks_waiting = static_cast<int32_t>(idle.size());
  const size_t shown_ranks = std::min(idle.size(), kShownCollectives);
  std::partial_sort(idle.begin(), idle.begin() + shown_ranks, idle.end(),
                    [](const RankIdle& a, const RankIdle& b) {
                      return a.added_idle_s != b.added_idle_s ? a.added_idle_s > b.added_idle_s
                                                              : a.rank < b.rank;
                    });
  report.most_idle.assign(idle.begin(), idle.begin() + shown_ranks);
  return report;
}

double Quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Result<MonteCarloResult> RunJitterMonteCarlo(const StepGraph& step, const StepTimeline& baseline,
                                             const GpuFolding& folding,
                                             const JitterOptions& options) {
  if (!(options.sigma >= 0 && options.sigma <= 1)) {
    return Status::InvalidArgument(
        StrCat("--jitter ", Percent(options.sigma),
               ": the spread of GPU speed must be from 0% to 100% (2% is a typical day's swing)"));
  }
  if (options.draws < 1)
    return Status::InvalidArgument(StrCat("--draws ", options.draws, ": draw at least once"));
  const TaskGraph& g = step.graph;
  // Only exact draws run the engine on scaled task times; a replay scales its own.
  const std::vector<SimTime> base = options.exact ? TaskDurations(g) : std::vector<SimTime>();
  const int64_t gpus = folding.gpus();
  // The GPUs each graph rank folds: a draw's rank factor is the largest of theirs.
  std::vector<int32_t> rank_of_gpu(gpus);
  for (int64_t gpu = 0; gpu < gpus; ++gpu) rank_of_gpu[gpu] = folding.GraphRank(gpu);

  MonteCarloResult result;
  result.baseline_step_s = baseline.makespan.ToSeconds();
  result.step_s.assign(options.draws, 0);
  std::vector<double> slowest(options.draws, 0);
  std::vector<Status> errors(std::max(1, options.threads));
  std::optional<StepReplay> replay;
  if (!options.exact) {
    replay.emplace(step, baseline);
    if (!replay->replayable()) {
      return Status::InvalidArgument(
          "the baseline timeline did not come from the event engine (a collective's members did "
          "not start together); simulate the step again, or run the draws exactly");
    }
  }
  const auto worker = [&](int32_t thread) {
    RankFactors factors;
    std::vector<SimTime> scratch;
    std::vector<SimTime> durations;
    for (int32_t draw = thread; draw < options.draws; draw += static_cast<int32_t>(errors.size())) {
      std::mt19937_64 rng(MixSeed(options.seed, static_cast<uint64_t>(draw)));
      std::normal_distribution<double> z;
      factors.compute.assign(g.num_ranks(), 0.0);
      double largest = 0;
      for (int64_t gpu = 0; gpu < gpus; ++gpu) {
        // Every GPU's number is drawn, simulated or not, so a draw is the same with --full or
        // without it.
        const double factor = std::exp(options.sigma * z(rng));
        largest = std::max(largest, factor);
        if (const int32_t rank = rank_of_gpu[gpu]; rank >= 0)
          factors.compute[rank] = std::max(factors.compute[rank], factor);
      }
      slowest[draw] = largest;
      if (replay) {
        result.step_s[draw] = replay->Makespan(factors.compute, scratch).ToSeconds();
        continue;
      }
      Apply(step, /*nic_owner=*/{}, factors, base, durations);  // jitter leaves NICs alone
      Result<StepTimeline> run = Simulate(g, durations);
      if (!run.ok()) {
        errors[thread] = run.status();
        return;
      }
      result.step_s[draw] = run->makespan.ToSeconds();
    }
  };
  std::vector<std::thread> pool;
  for (int32_t t = 1; t < static_cast<int32_t>(errors.size()); ++t) pool.emplace_back(worker, t);
  worker(0);
  for (std::thread& t : pool) t.join();
  for (const Status& error : errors) LOOM_RETURN_IF_ERROR(error);

  std::vector<double> sorted = result.step_s;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double s : sorted) sum += s;
  result.mean_s = sum / static_cast<double>(sorted.size());
  result.min_s = sorted.front();
  result.max_s = sorted.back();
  result.p50_s = Quantile(sorted, 0.50);
  result.p90_s = Quantile(sorted, 0.90);
  result.p99_s = Quantile(sorted, 0.99);
  double slowest_sum = 0;
  for (double s : slowest) slowest_sum += s;
  result.mean_slowest_factor = slowest_sum / static_cast<double>(slowest.size());
  return result;
}

}  // namespace loom
