// Cost of simulating one training step of realistic size: a 16-stage 1F1B pipeline with ~50k
// tasks. The engine is meant to be cheap enough for the planner to simulate thousands of
// candidate strategies, so Simulate() should stay well under 10 ms for this graph.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "program/task_graph.h"
#include "sim/critical_path.h"
#include "sim/engine.h"
#include "sim/memory_tracker.h"
#include "sim/trace.h"

namespace loom {
namespace {

constexpr int32_t kStages = 16;
constexpr int32_t kMicroBatches = 320;
constexpr int32_t kLayersPerStage = 4;

// Per stage and micro-batch: one forward and one backward kernel per layer, a send of the
// activations to the next stage and of their gradient to the previous one (over the link shared
// by the two stages, in both directions), plus the tied-embedding all-reduce between the first
// and last stage (a 2-member collective) and one data-parallel gradient all-reduce per stage.
// Forwards keep their activations until the matching backward frees them. |shared_nics| puts
// every transfer on the NIC channels of its ranks (engine.h), so that the data-parallel
// all-reduces share them with the last backward sends.
class PipelineStepBuilder {
 public:
  explicit PipelineStepBuilder(bool shared_nics) {
    graph_.Reserve(kStages * kMicroBatches * (2 * kLayersPerStage + 2) + 3 * kStages,
                   kStages * kMicroBatches * 14);
    compute_ = graph_.Intern("compute");
    p2p_ = graph_.Intern("p2p");
    activations_ = graph_.AddPool("activations");
    for (int32_t s = 0; s < kStages; ++s) {
      compute_stream_.push_back(graph_.AddStream(s, "compute"));
      comm_stream_.push_back(graph_.AddStream(s, "comm"));
      if (s + 1 < kStages) {
        link_.push_back(
            graph_.AddLink("stage" + std::to_string(s) + "<->" + std::to_string(s + 1)));
      }
      if (shared_nics) {
        nic_tx_.push_back(graph_.AddChannel("stage" + std::to_string(s) + " nic tx"));
        nic_rx_.push_back(graph_.AddChannel("stage" + std::to_string(s) + " nic rx"));
      }
    }
    for (int32_t i = 0; i < kMicroBatches; ++i) {
      f_name_.push_back(graph_.Intern("F mb" + std::to_string(i)));
      b_name_.push_back(graph_.Intern("B mb" + std::to_string(i)));
    }
  }

  TaskGraph Build() && {
    for (int32_t s = 0; s < kStages; ++s) {
      forward_route_.push_back(s + 1 < kStages ? SendRoute(s, s + 1) : kNoRoute);
      backward_route_.push_back(s > 0 ? SendRoute(s, s - 1) : kNoRoute);
      duplex_route_.push_back(nic_tx_.empty() ? kNoRoute : Route({nic_tx_[s], nic_rx_[s]}));
    }
    for (int32_t s = 0; s < kStages; ++s) AddStageIn1F1BOrder(s);
    AddCrossStageDependencies();
    AddGradientReductions();
    return std::move(graph_);
  }

 private:
  static int32_t At(int32_t s, int32_t i) { return s * kMicroBatches + i; }

  RouteId Route(std::vector<ChannelId> channels) {
    return nic_tx_.empty() ? kNoRoute : graph_.AddRoute(channels);
  }
  RouteId SendRoute(int32_t from, int32_t to) {
    return nic_tx_.empty() ? kNoRoute : Route({nic_tx_[from], nic_rx_[to]});
  }

  // Warm-up forwards, then one forward and one backward in turn, then the remaining backwards.
  void AddStageIn1F1BOrder(int32_t s) {
    const int32_t warmup = std::min(kStages - s - 1, kMicroBatches);
    int32_t next_f = 0;
    int32_t next_b = 0;
    while (next_b < kMicroBatches) {
      if (next_f < kMicroBatches && next_f <= next_b + warmup) {
        AddForward(s, next_f++);
      } else {
        AddBackward(s, next_b++);
      }
    }
  }

  void AddForward(int32_t s, int32_t i) {
    for (int32_t l = 0; l < kLayersPerStage; ++l) {
      activations_of_[l] = graph_.AddTask({.stream = compute_stream_[s],
                                           .duration = SimTime::FromMicros(100),
                                           .name = f_name_[i],
                                           .category = compute_,
                                           .alloc_at_start_bytes = 64 << 20,
                                           .pool = activations_});
      if (l > 0) graph_.AddDependency(activations_of_[l - 1], activations_of_[l]);
      forward_[At(s, i)][l] = activations_of_[l];
    }
    if (s + 1 < kStages) {
      f_send_[At(s, i)] = graph_.AddTask({.stream = comm_stream_[s],
                                          .link = link_[s],
                                          .duration = SimTime::FromMicros(50),
                                          .name = p2p_,
                                          .category = p2p_,
                                          .route = forward_route_[s]});
      graph_.AddDependency(activations_of_[kLayersPerStage - 1], f_send_[At(s, i)]);
    }
  }

  void AddBackward(int32_t s, int32_t i) {
    TaskId previous = -1;
    for (int32_t l = kLayersPerStage - 1; l >= 0; --l) {
      const TaskId b = graph_.AddTask({.stream = compute_stream_[s],
                                       .duration = SimTime::FromMicros(200),
                                       .name = b_name_[i],
                                       .category = compute_,
                                       .free_at_end_bytes = 64 << 20,
                                       .pool = activations_});
      if (previous < 0) b_first_[At(s, i)] = b;
      graph_.AddDependency(forward_[At(s, i)][l], b);
      if (previous >= 0) graph_.AddDependency(previous, b);
      previous = b;
    }
    b_last_[At(s, i)] = previous;
    if (s > 0) {
      b_send_[At(s, i)] = graph_.AddTask({.stream = comm_stream_[s],
                                          .link = link_[s - 1],
                                          .duration = SimTime::FromMicros(50),
                                          .name = p2p_,
                                          .category = p2p_,
                                          .route = backward_route_[s]});
      graph_.AddDependency(previous, b_send_[At(s, i)]);
    }
  }

  // A forward needs the previous stage's activations, a backward the next stage's gradients.
  void AddCrossStageDependencies() {
    for (int32_t s = 0; s < kStages; ++s) {
      for (int32_t i = 0; i < kMicroBatches; ++i) {
        if (s > 0) graph_.AddDependency(f_send_[At(s - 1, i)], forward_[At(s, i)][0]);
        if (s + 1 < kStages) graph_.AddDependency(b_send_[At(s + 1, i)], b_first_[At(s, i)]);
      }
    }
  }

  void AddGradientReductions() {
    std::vector<TaskId> embedding_all_reduce;
    for (int32_t s = 0; s < kStages; ++s) {
      const TaskId dp = graph_.AddTask({.stream = comm_stream_[s],
                                        .duration = SimTime::FromMicros(900),
                                        .name = graph_.Intern("DP all-reduce"),
                                        .category = p2p_,
                                        .route = duplex_route_[s]});
      graph_.AddDependency(b_last_[At(s, kMicroBatches - 1)], dp);
      if (s == 0 || s == kStages - 1) {
        embedding_all_reduce.push_back(
            graph_.AddTask({.stream = comm_stream_[s],
                            .duration = SimTime::FromMicros(300),
                            .name = graph_.Intern("embedding all-reduce"),
                            .category = p2p_,
                            .route = duplex_route_[s]}));
      }
    }
    graph_.AddCollective(embedding_all_reduce);
  }

  TaskGraph graph_;
  NameId compute_, p2p_;
  PoolId activations_;
  std::vector<StreamId> compute_stream_, comm_stream_;
  std::vector<LinkId> link_;
  std::vector<ChannelId> nic_tx_, nic_rx_;  // per stage; empty without shared NICs
  std::vector<RouteId> forward_route_, backward_route_, duplex_route_;
  std::vector<NameId> f_name_, b_name_;
  std::array<TaskId, kLayersPerStage> activations_of_{};
  // Indexed by At(stage, micro-batch).
  std::vector<std::array<TaskId, kLayersPerStage>> forward_ =
      std::vector<std::array<TaskId, kLayersPerStage>>(kStages * kMicroBatches);
  std::vector<TaskId> f_send_ = std::vector<TaskId>(kStages * kMicroBatches, -1);
  std::vector<TaskId> b_first_ = std::vector<TaskId>(kStages * kMicroBatches, -1);
  std::vector<TaskId> b_last_ = std::vector<TaskId>(kStages * kMicroBatches, -1);
  std::vector<TaskId> b_send_ = std::vector<TaskId>(kStages * kMicroBatches, -1);
};

TaskGraph BuildPipelineStep(bool shared_nics = false) {
  return PipelineStepBuilder(shared_nics).Build();
}

void SetGraphCounters(benchmark::State& state, const TaskGraph& graph) {
  state.counters["tasks"] = graph.num_tasks();
  state.counters["dependencies"] = static_cast<double>(graph.dependencies().size());
  state.SetItemsProcessed(state.iterations() * graph.num_tasks());
}

void BM_BuildGraph(benchmark::State& state) {
  for (auto _ : state) {
    TaskGraph graph = BuildPipelineStep();
    benchmark::DoNotOptimize(graph);
  }
  SetGraphCounters(state, BuildPipelineStep());
}
BENCHMARK(BM_BuildGraph)->Unit(benchmark::kMillisecond);

void SimulateStep(benchmark::State& state, bool shared_nics) {
  const TaskGraph graph = BuildPipelineStep(shared_nics);
  for (auto _ : state) {
    Result<StepTimeline> timeline = Simulate(graph);
    if (!timeline.ok()) {
      state.SkipWithError(timeline.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(timeline);
  }
  SetGraphCounters(state, graph);
  state.counters["makespan_ms"] = Simulate(graph)->makespan.ToSeconds() * 1e3;
}

void BM_Simulate(benchmark::State& state) { SimulateStep(state, false); }
BENCHMARK(BM_Simulate)->Unit(benchmark::kMillisecond);

// The same step with every transfer sharing its ranks' NICs: the cost of the fluid bookkeeping.
void BM_SimulateSharedNics(benchmark::State& state) { SimulateStep(state, true); }
BENCHMARK(BM_SimulateSharedNics)->Unit(benchmark::kMillisecond);

void BM_Validate(benchmark::State& state) {
  const TaskGraph graph = BuildPipelineStep();
  for (auto _ : state) {
    Status status = graph.Validate();
    if (!status.ok()) {
      state.SkipWithError(status.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(status);
  }
  SetGraphCounters(state, graph);
}
BENCHMARK(BM_Validate)->Unit(benchmark::kMillisecond);

void BM_Analyses(benchmark::State& state) {
  const TaskGraph graph = BuildPipelineStep();
  const StepTimeline timeline = *Simulate(graph);
  for (auto _ : state) {
    std::vector<CriticalStep> path = CriticalPath(graph, timeline);
    Result<MemoryReport> memory = TrackMemory(graph, timeline, {});
    benchmark::DoNotOptimize(path);
    benchmark::DoNotOptimize(memory);
  }
  SetGraphCounters(state, graph);
}
BENCHMARK(BM_Analyses)->Unit(benchmark::kMillisecond);

void BM_ChromeTrace(benchmark::State& state) {
  const TaskGraph graph = BuildPipelineStep();
  const StepTimeline timeline = *Simulate(graph);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = ChromeTraceJson(graph, timeline);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  SetGraphCounters(state, graph);
  state.counters["json_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_ChromeTrace)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loom
