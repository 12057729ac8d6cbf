// loom fit --runs (issue 19): multipliers recovered from runs that loom itself made with known
// values, refusals when the runs cannot identify a parameter, and the runs file formats.

#include "plan/run_fit.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace loom {
namespace {

std::string ShippedPath(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Single-GPU runs of three GPT-3 sizes at micro-batches 1 to 16 (host-bound to kernel-bound) on a
// DGX H100 under megatron-core, their "measured" times made by loom with |host| and |compute|.
std::vector<MeasuredRun> SyntheticRuns(double host, double compute,
                                       const std::string& framework = "megatron-core") {
  std::vector<MeasuredRun> runs;
  Result<ClusterSpec> cluster = LoadClusterSpec(ShippedPath("hardware/clusters/dgx-h100.json"), 1);
  EXPECT_TRUE(cluster.ok());
  Result<std::optional<FrameworkProfile>> f = ResolveFramework(framework, cluster->file);
  EXPECT_TRUE(f.ok());
  for (const char* model : {"gpt3-125m", "gpt3-350m", "gpt3-1.3b"}) {
    Result<ModelSpec> m = LoadModelSpec(ShippedPath(std::string("models/") + model + ".json"));
    EXPECT_TRUE(m.ok());
    for (int64_t mb : {1, 4, 16}) {
      MeasuredRun run;
      run.name = std::string(model) + " mb" + std::to_string(mb);
      run.model = *m;
      run.cluster = *cluster;
      run.strategy.micro_batch = mb;
      run.strategy.global_batch = 16;
      run.strategy.seq_len = 2048;
      run.options.framework = *f;
      const MeasuredRun truth =
          WithMultipliers(run, {RunParam::kHost, RunParam::kCompute}, {host, compute});
      Result<SimulationResult> r =
          SimulateTrainingStep(truth.model, truth.cluster, truth.strategy, truth.options);
      EXPECT_TRUE(r.ok()) << r.status().message();
      run.step_time_s = r.ok() ? r->step_time_s : 1.0;
      runs.push_back(run);
    }
  }
  return runs;
}

TEST(FitRuns, RecoversTheHostAndComputeMultipliersLoomMadeTheRunsWith) {
  const std::vector<MeasuredRun> runs = SyntheticRuns(1.6, 0.85);
  Result<RunFit> fit = FitRuns(runs, {RunParam::kHost, RunParam::kCompute});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->values[0], 1.6, 0.02);
  EXPECT_NEAR(fit->values[1], 0.85, 0.02);
  EXPECT_GT(fit->before_mape, 10.0);
  EXPECT_LT(fit->fitted_mape, 0.5);
  // Every run can be left out (the others still identify both), and predicts it.
  ASSERT_TRUE(fit->left_out_mape.has_value());
  EXPECT_LT(*fit->left_out_mape, 1.0);
  for (const RunFitRow& row : fit->rows) {
    ASSERT_TRUE(row.left_out_s.has_value()) << row.name;
    EXPECT_NEAR(*row.left_out_s / row.measured_s, 1.0, 0.02) << row.name;
  }
  // Host-bound runs depend on the host, kernel-bound ones on the compute efficiency.
  EXPECT_GT(fit->sensitivity[0][0], 0.5);   // gpt3-125m mb1: host
  EXPECT_GT(fit->sensitivity[8][1], -1.2);  // gpt3-1.3b mb16: d log t / d log efficiency near -1
  EXPECT_LT(fit->sensitivity[8][1], -0.5);
}

TEST(FitRuns, RefusesAParameterNoRunDependsOn) {
  // Under --framework none no run has a host thread.
  const std::vector<MeasuredRun> runs = SyntheticRuns(1.0, 1.0, "none");
  Result<RunFit> fit = FitRuns(runs, {RunParam::kHost, RunParam::kCompute});
  ASSERT_FALSE(fit.ok());
  const std::string message(fit.status().message());
  EXPECT_NE(message.find("host: no run depends on it"), std::string::npos) << message;
  EXPECT_NE(message.find("micro-batch 1"), std::string::npos) << message;
  // Single-node runs say nothing of the network.
  Result<RunFit> network = FitRuns(runs, {RunParam::kInterNode});
  ASSERT_FALSE(network.ok());
  EXPECT_NE(network.status().message().find("crosses nodes"), std::string::npos)
      << network.status().message();
  std::vector<std::string> dropped;
  Result<std::vector<RunParam>> kept = IdentifiableParams(
      runs, {RunParam::kHost, RunParam::kCompute, RunParam::kInterNode}, &dropped);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, std::vector<RunParam>{RunParam::kCompute});
  EXPECT_EQ(dropped.size(), 2u);
}

TEST(FitRuns, RefusesFewerRunsThanParametersPlusOne) {
  std::vector<MeasuredRun> runs = SyntheticRuns(1.0, 1.0);
  runs.resize(2);
  Result<RunFit> fit = FitRuns(runs, {RunParam::kHost, RunParam::kCompute});
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("at least 3 runs"), std::string::npos)
      << fit.status().message();
}

TEST(FitRuns, ReadsJsonAndCsvRunsBesideTheirFile) {
  const std::string cluster = ShippedPath("hardware/clusters/dgx-h100.json");
  const std::string model = ShippedPath("models/gpt3-125m.json");
  const std::string json = WriteTemp(
      "runs.json", R"({"schema": "loom.runs/1", "runs": [
    {"name": "a", "model": ")" +
                       model +
                       R"(", "strategy": {"micro_batch": 2, "global_batch": 8, "seq_len": 1024},
     "step_time_s": 0.5, "attention": "unfused", "dropout": true},
    {"model": ")" + model +
                       R"(", "strategy": {"tp": 2, "dp": 4, "global_batch": 8, "seq_len": 1024},
     "step_time_s": 0.25, "framework": "none"}]})");
  Result<std::vector<MeasuredRun>> runs = LoadRuns(json, cluster, "megatron-core");
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "a");
  EXPECT_EQ((*runs)[0].strategy.micro_batch, 2);
  EXPECT_EQ((*runs)[0].options.kernels.attention, AttentionKernel::kUnfused);
  ASSERT_TRUE((*runs)[0].options.framework.has_value());
  EXPECT_EQ((*runs)[0].options.framework->name, "megatron-core");
  EXPECT_FALSE((*runs)[1].options.framework.has_value());
  EXPECT_EQ((*runs)[1].cluster.nodes, 1);
  const std::string csv =
      WriteTemp("runs.csv",
                "name,model,tp,dp,micro_batch,global_batch,seq_len,step_time_s\n"
                "b," +
                    model +
                    ",1,1,4,16,2048,0.3\n"
                    "c," +
                    model + ",1,16,1,16,2048,0.1\n");
  Result<std::vector<MeasuredRun>> rows = LoadRuns(csv, cluster, "megatron-core");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].strategy.dp, 16);
  EXPECT_EQ((*rows)[1].cluster.nodes, 2);  // 16 GPUs on 8-GPU nodes
  EXPECT_EQ((*rows)[0].step_time_s, 0.3);
}

TEST(FitRuns, BadRunsNameTheFileTheRunAndTheKey) {
  const std::string cluster = ShippedPath("hardware/clusters/dgx-h100.json");
  const std::string bad = WriteTemp("bad-runs.json", R"({"schema": "loom.runs/1", "runs": [
    {"model": "nowhere.json", "strategy": {"micro_batch": 1}, "step_time_s": -1, "stepp": 2}]})");
  Result<std::vector<MeasuredRun>> runs = LoadRuns(bad, cluster, "megatron-core");
  ASSERT_FALSE(runs.ok());
  const std::string message(runs.status().message());
  EXPECT_NE(message.find(bad), std::string::npos) << message;
  EXPECT_NE(message.find("step_time_s"), std::string::npos) << message;
  EXPECT_NE(message.find("stepp"), std::string::npos) << message;
  const std::string empty =
      WriteTemp("empty-runs.json", R"({"schema": "loom.runs/1", "runs": []})");
  EXPECT_FALSE(LoadRuns(empty, cluster, "megatron-core").ok());
  const std::string ragged = WriteTemp("ragged.csv", "name,model,step_time_s\nx,m.json\n");
  Result<std::vector<MeasuredRun>> r = LoadRuns(ragged, cluster, "megatron-core");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
}

// A Megatron-LM log: its argument dump gives the strategy, its iteration lines the step time
// (the median after the first interval, which carries the warm-up).
TEST(FitRuns, ReadsTheStepTimeAndStrategyOfMegatronAndDeepSpeedLogs) {
  const std::string cluster = ShippedPath("hardware/clusters/dgx-h100.json");
  const std::string model = ShippedPath("models/gpt3-350m.json");
  const std::string megatron =
      WriteTemp("megatron.log",
                "using world size: 16, data-parallel size: 2, tensor-model-parallel size: 4\n"
                "------------------------ arguments ------------------------\n"
                "  bf16 ............................................ True\n"
                "  data_parallel_size .............................. 2\n"
                "  global_batch_size ............................... 64\n"
                "  micro_batch_size ................................ 2\n"
                "  num_layers ...................................... 24\n"
                "  num_layers_per_virtual_pipeline_stage ........... 6\n"
                "  pipeline_model_parallel_size .................... 2\n"
                "  recompute_granularity ........................... selective\n"
                "  seq_length ...................................... 2048\n"
                "  sequence_parallel ............................... True\n"
                "  tensor_model_parallel_size ...................... 4\n"
                "  use_distributed_optimizer ....................... True\n"
                "-------------------- end of arguments ---------------------\n"
                " iteration       10/     100 | consumed samples:          640 | elapsed time per "
                "iteration (ms): 2500.0 |\n"
                " iteration       20/     100 | consumed samples:         1280 | elapsed time per "
                "iteration (ms): 1210.0 |\n"
                " iteration       30/     100 | consumed samples:         1920 | elapsed time per "
                "iteration (ms): 1190.0 |\n"
                " iteration       40/     100 | consumed samples:         2560 | elapsed time per "
                "iteration (ms): 1200.0 |\n");
  const std::string deepspeed = WriteTemp("deepspeed.log",
                                          "[Rank 0] epoch=0/micro_step=10/global_step=10, "
                                          "RunningAvgSamplesPerSec=10.0, CurrSamplesPerSec=8.0, "
                                          "MemAllocated=3GB\n"
                                          "[Rank 0] epoch=0/micro_step=20/global_step=20, "
                                          "RunningAvgSamplesPerSec=15.0, CurrSamplesPerSec=16.0, "
                                          "MemAllocated=3GB\n"
                                          "[Rank 0] epoch=0/micro_step=30/global_step=30, "
                                          "RunningAvgSamplesPerSec=15.5, CurrSamplesPerSec=16.0, "
                                          "MemAllocated=3GB\n");
  const std::string runs = WriteTemp("log-runs.json", R"({"schema": "loom.runs/1", "runs": [
    {"name": "megatron", "model": ")" + model + R"(", "log": ")" +
                                                          megatron + R"("},
    {"name": "overridden", "model": ")" + model + R"(", "log": ")" +
                                                          megatron +
                                                          R"(", "strategy": {"micro_batch": 4}},
    {"name": "deepspeed", "model": ")" + model + R"(", "log": ")" +
                                                          deepspeed + R"(",
     "strategy": {"dp": 8, "micro_batch": 4, "global_batch": 32, "seq_len": 2048, "zero_stage": 2}}]})");
  Result<std::vector<MeasuredRun>> read = LoadRuns(runs, cluster, "megatron-core");
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Strategy& s = (*read)[0].strategy;
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.vpp, 2);
  EXPECT_EQ(s.schedule, ScheduleKind::kInterleaved);
  EXPECT_TRUE(s.sp);
  EXPECT_EQ(s.recompute, Recompute::kSelective);
  EXPECT_EQ(s.zero_stage, 1);
  EXPECT_EQ(s.global_batch, 64);
  EXPECT_EQ(s.seq_len, 2048);
  EXPECT_DOUBLE_EQ((*read)[0].step_time_s, 1.2);  // median of 1210, 1190, 1200 ms
  EXPECT_EQ((*read)[0].cluster.nodes, 2);
  EXPECT_EQ((*read)[1].strategy.micro_batch, 4);
  EXPECT_EQ((*read)[1].strategy.tp, 4);
  EXPECT_DOUBLE_EQ((*read)[2].step_time_s, 2.0);  // 32 samples at 16 samples/s
  // A log of one interval cannot separate the warm-up; step_time_s beside a log is ambiguous.
  const std::string short_log = WriteTemp("short.log", "elapsed time per iteration (ms): 900.0\n");
  const std::string bad = WriteTemp("bad-log-runs.json", R"({"schema": "loom.runs/1", "runs": [
    {"model": ")" + model + R"(", "log": ")" + short_log + R"("}]})");
  Result<std::vector<MeasuredRun>> refused = LoadRuns(bad, cluster, "megatron-core");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("warm-up"), std::string::npos)
      << refused.status().message();
  const std::string both = WriteTemp("both-runs.json", R"({"schema": "loom.runs/1", "runs": [
    {"model": ")" + model + R"(", "log": ")" + megatron + R"(", "step_time_s": 1.0}]})");
  Result<std::vector<MeasuredRun>> ambiguous = LoadRuns(both, cluster, "megatron-core");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.status().message().find("keep one"), std::string::npos)
      << ambiguous.status().message();
}

}  // namespace
}  // namespace loom
