// `loom validate` refuses bad plans before it joins an MPI job, runs a plan of one rank in this
// process, and prints its comparison as documented. Runs of several ranks are checked under mpirun
// (tests/exec/validate_host_check.sh): MPI cannot start twice in one test process.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/validate_output.h"
#include "program/plan_file.h"
#include "run_loom.h"
#include "sim/simulated_plan.h"
#include "spec/cluster.h"
#include "spec/model.h"

namespace loom {
namespace {

// A 1F1B plan of Llama 3 8B over two pipeline stages and two replicas, both in the file (as loom
// plan writes it with --full), so that it has data-parallel collectives of its own.
nlohmann::ordered_json TwoStagePlanJson() {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/llama3-8b.json"));
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"));
  EXPECT_TRUE(model.ok() && cluster.ok());
  Strategy s;
  s.tp = 1;
  s.pp = 2;
  s.dp = 2;
  s.micro_batch = 1;
  s.global_batch = 8;
  s.seq_len = 2048;
  SimulationOptions full;
  full.full = true;
  Result<PlanFile> plan = MakePlanFile(*model, *cluster, s, full, {{"test", true}});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return PlanFileJson(*plan);
}

std::string Write(const nlohmann::ordered_json& json, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << json.dump();
  return path;
}

TEST(Validate, RefusesAPlanThatWouldDeadlockBeforeRunningAnything) {
  nlohmann::ordered_json plan = TwoStagePlanJson();
  // Rank 0's first task waits for the last task of rank 1, which waits for it through the pipeline.
  auto& step = plan["step"];
  int64_t last = static_cast<int64_t>(step["tasks"].size()) - 1;  // rank 1's last task
  while (step["streams"][step["tasks"][last][0].get<size_t>()]["rank"] != 1) --last;
  step["dependencies"].push_back({last, 0});
  const std::string path = Write(plan, "loom_validate_deadlock.json");
  const CommandResult r = Loom({"validate", path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(path + ": the plan's rank programs would deadlock, so nothing was run"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cycle"), std::string::npos) << r.err;
}

// --one-gpu runs one GPU of a plan alone on the cuda backend: with the host backend, or a GPU the
// plan has not, it is refused before anything runs.
TEST(Validate, OneGpuNeedsTheCudaBackendAndAGpuOfThePlan) {
  const std::string path = Write(TwoStagePlanJson(), "loom_validate_one_gpu.json");
  CommandResult r = Loom({"validate", path, "--one-gpu", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--one-gpu runs one GPU's kernels alone on a GPU: add --backend cuda"),
            std::string::npos)
      << r.err;
  r = Loom({"validate", path, "--one-gpu", "4", "--backend", "cuda"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(path + ": GPU 4 is not one of its 4 GPUs; give --one-gpu a rank from 0 to 3"),
            std::string::npos)
      << r.err;
}

TEST(Validate, RefusesACollectiveOfATaskThatDoesNotExist) {
  nlohmann::ordered_json plan = TwoStagePlanJson();
  ASSERT_FALSE(plan["step"]["collectives"].empty());
  plan["step"]["collectives"][0].push_back(999999);
  const std::string path = Write(plan, "loom_validate_unknown_group.json");
  const CommandResult r = Loom({"validate", path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("collectives[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("999999"), std::string::npos) << r.err;
}

// The cuda backend runs tensor-parallel plans unfolded, one process per GPU: a tp 2 x pp 2 plan
// on one process is refused with the command that launches it. What it does not run, ZeRO-Offload's
// copies, it refuses before it starts MPI or touches a GPU (without CUDA: that it was not built).
TEST(Validate, CudaBackendRunsTensorParallelPlansUnfoldedAndRefusesOffload) {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/llama3-8b.json"));
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"));
  ASSERT_TRUE(model.ok() && cluster.ok());
  Strategy s;
  s.tp = 2;
  s.sp = true;
  s.pp = 2;
  s.micro_batch = 1;
  s.global_batch = 4;
  s.seq_len = 2048;
  Result<PlanFile> plan = MakePlanFile(*model, *cluster, s, {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string path = Write(PlanFileJson(*plan), "loom_validate_cuda_tp.json");
  CommandResult r = Loom({"validate", path, "--backend", "cuda"});
#ifdef LOOM_HAVE_CUDA
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("mpirun -np 4 loom validate"), std::string::npos) << r.err;
#else
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("built without CUDA"), std::string::npos) << r.err;
#endif

  Strategy offload;
  offload.dp = 2;
  offload.zero_stage = 2;
  offload.offload = Offload::kOptimizer;
  offload.micro_batch = 1;
  offload.global_batch = 4;
  offload.seq_len = 2048;
  plan = MakePlanFile(*model, *cluster, offload, {}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string offload_path = Write(PlanFileJson(*plan), "loom_validate_cuda_offload.json");
  r = Loom({"validate", offload_path, "--backend", "cuda"});
#ifdef LOOM_HAVE_CUDA
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(offload_path + ": task "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is offload"), std::string::npos) << r.err;
#else
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("built without CUDA"), std::string::npos) << r.err;
#endif
  EXPECT_NE(r.err.find("--backend host"), std::string::npos) << r.err;
}

// A plan of one rank: GPT-3 125M on one GPU, as the GPU kit validates it.
std::string OneRankPlan(const std::string& name) {
  Result<ModelSpec> model = LoadModelSpec(Shipped("models/gpt3-125m.json"));
  Result<ClusterSpec> cluster = LoadClusterSpec(Shipped("hardware/clusters/dgx-h100.json"));
  EXPECT_TRUE(model.ok() && cluster.ok());
  Strategy s;
  s.tp = 1;
  s.pp = 1;
  s.dp = 1;
  s.micro_batch = 4;
  s.global_batch = 16;
  s.seq_len = 2048;
  Result<PlanFile> plan = MakePlanFile(*model, *cluster, s, {}, {});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return Write(PlanFileJson(*plan), name);
}

// Without mpirun (this test process was not started by one), a plan of one rank runs in this
// process: no MPI is started, so it works in any build, and the next test can do it again.
TEST(Validate, OneRankPlanRunsWithoutMpirun) {
  const std::string path = OneRankPlan("loom_validate_one_rank.json");
  for (int run = 0; run < 2; ++run) {
    const CommandResult r = Loom({"validate", path, "--backend", "host", "--speedup", "1000",
                                  "--steps", "2", "--warmup", "0", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ranks"], 1);
    EXPECT_EQ(j["order"]["dependency_violations"], 0) << r.out;
  }
}

// --trace writes the prediction and the measurement into one file: distinct processes, the same
// slices in each, and flow events that pair up within each run.
TEST(Validate, TraceMergesPredictedAndMeasuredStepsAsDistinctProcesses) {
  const std::string path = OneRankPlan("loom_validate_trace_plan.json");
  const std::string trace =
      (std::filesystem::temp_directory_path() / "loom_validate_merged_trace.json").string();
  const CommandResult r = Loom({"validate", path, "--backend", "host", "--speedup", "1000",
                                "--steps", "1", "--warmup", "0", "--trace", trace});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(trace);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  std::map<int, std::string> process;
  std::map<int, std::multiset<std::string>> slices;  // per pid: the slice names
  std::map<std::string, int> flow_balance;           // per flow id: starts minus finishes
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      process[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "X") slices[e["pid"].get<int>()].insert(e["name"].get<std::string>());
    if (e["ph"] == "s") ++flow_balance[e["id"].dump()];
    if (e["ph"] == "f") --flow_balance[e["id"].dump()];
  }
  ASSERT_EQ(process.size(), 2u);
  const std::string first = process.begin()->second, second = process.rbegin()->second;
  EXPECT_EQ(first.rfind("predicted rank 0", 0), 0u) << first;
  EXPECT_EQ(second.rfind("measured rank 0", 0), 0u) << second;
  EXPECT_FALSE(slices[process.begin()->first].empty());
  EXPECT_EQ(slices[process.begin()->first], slices[process.rbegin()->first]);
  for (const auto& [id, balance] : flow_balance) EXPECT_EQ(balance, 0) << "flow " << id;
}

TEST(Validate, PlanOfSeveralRanksWithoutMpirunSaysHowToLaunchIt) {
  const std::string path = Write(TwoStagePlanJson(), "loom_validate_four_ranks.json");
  const CommandResult r = Loom({"validate", path, "--backend", "host"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -np 4"), std::string::npos) << r.err;
}

// The cuda backend on a machine without a GPU (CI): exit status 3 and a message that says so,
// on one rank without mpirun; without CUDA, that this loom has no cuda backend.
TEST(Validate, CudaBackendWithoutAGpuExitsThree) {
  const std::string path = OneRankPlan("loom_validate_one_rank_cuda.json");
  const CommandResult r = Loom({"validate", path, "--backend", "cuda"});
  EXPECT_EQ(r.code, 3) << r.err;
#ifdef LOOM_HAVE_CUDA
  EXPECT_NE(r.err.find("--backend host"), std::string::npos) << r.err;
#else
  EXPECT_NE(r.err.find("built without CUDA"), std::string::npos) << r.err;
#endif
}

TEST(Validate, MissingPlanFileIsNamed) {
  const CommandResult r = Loom({"validate", "/nonexistent/plan.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/plan.json"), std::string::npos) << r.err;
}

TEST(Validate, ReportTableShowsErrorsInPercentAndTheOrderCheck) {
  StepComparison c;
  c.steps = 3;
  c.step_time_s = {0.400, 0.440, 10.0};
  c.measured_min_step_s = 0.430;
  c.measured_max_step_s = 0.450;
  c.bubble_fraction = {0.10, 0.12, 20.0};
  c.peak_memory_bytes = {static_cast<double>(int64_t{40} << 30),
                         static_cast<double>(int64_t{38} << 30), -5.0};
  c.classes.push_back({"compute", 64, {1.5, 1.65, 10.0}});
  c.order.pairs_checked = 1234;
  std::ostringstream out;
  PrintStepComparison(c, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("step time"), std::string::npos) << text;
  EXPECT_NE(text.find("+10.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("+20.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("-5.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("median of 3 steps"), std::string::npos) << text;
  EXPECT_NE(text.find("compute"), std::string::npos) << text;
  EXPECT_NE(text.find("0 inversions in 1,234 pairs"), std::string::npos) << text;
}

}  // namespace
}  // namespace loom
