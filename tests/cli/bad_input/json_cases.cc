// Inputs that are not the JSON loom reads: not JSON at all, numbers beyond a double, nesting
// 100,000 deep (issue 20, root causes 1 and 2), and keys given twice, misspelt or unknown (8).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bad_input/cases.h"

namespace loom::bad_input {

using Json = Workdir::Json;

std::vector<Case> MalformedJsonCases() {
  const std::string inf = "1e999";
  return {
      // Root cause 1: numbers out of range (nlohmann throws out_of_range, not parse_error).
      {.name = "OutOfRangeNumberInModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("hidden_size", inf),
       .err_has = {"bad-model.json"}},
      {.name = "OutOfRangeNumberInGpu",
       .args = {"fit", kProfile, "--gpu", "hardware/gpus/bad-gpu.json", "--dry-run"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kA100Gpu, "hardware/gpus/bad-gpu.json", "/hbm_bandwidth_GBps", inf);
           },
       .err_has = {"bad-gpu.json"}},
      {.name = "OutOfRangeNumberInCluster",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json", "/intra_node/latency_us",
                       inf);
           },
       .err_has = {"bad-cluster.json"}},
      {.name = "OutOfRangeNumberInScenario",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kScenario, "scenarios/bad-scenario.json", "/strategy/global_batch", inf);
           },
       .err_has = {"bad-scenario.json"}},
      {.name = "OutOfRangeNumberInProfile",
       .args = {"fit", "bad-profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kProfile, "bad-profile.json", "/samples/0/median_us", inf);
           },
       .err_has = {"bad-profile.json"}},
      {.name = "OutOfRangeNumberInNcclTestsJson",
       .args = {"fit", "reduce_scatter_perf_bad.json", "--cluster", kA100Cluster, "--dry-run"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kNcclJson, "reduce_scatter_perf_bad.json", "/results/0/in_place/time",
                       "-" + inf);
           },
       .err_has = {"reduce_scatter_perf_bad.json"}},
      {.name = "OutOfRangeNumberInRuns",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kRuns, "tests/cli/data/bad-runs.json", "/runs/0/step_time_s", inf);
           },
       .err_has = {"bad-runs.json"}},
      {.name = "OutOfRangeNumberInPlanFile",
       .args = {"validate", "bad-plan.json"},
       .setup =
           [=](Workdir& wd) {
             WritePlan(wd);
             wd.SetRaw(kPlan, "bad-plan.json", "/prediction/step_time_s", inf);
           },
       .err_has = {"bad-plan.json"}},
      {.name = "OutOfRangeNumberInFramework",
       .args = Args({kSimulate, {"--framework", "hardware/frameworks/bad-framework.json"}}),
       .setup =
           [=](Workdir& wd) {
             wd.SetRaw(kFramework, "hardware/frameworks/bad-framework.json",
                       "/host/forward_us_per_op", inf);
           },
       .err_has = {"bad-framework.json"}},
      {.name = "IntegerBeyond64BitsInModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("num_hidden_layers", "123456789012345678901234567890"),
       .err_has = {"bad-model.json", "num_hidden_layers"}},
      // Root cause 2: deep nesting (the parser copes; an error's dump() of the value must not
      // recurse).
      {.name = "DeeplyNestedArrayInModelValue",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("hidden_size", Nested(100000, false)),
       .err_has = {"bad-model.json", "hidden_size"}},
      {.name = "DeeplyNestedObjectInClusterValue",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json", "/gpus_per_node",
                       Nested(100000, true));
           },
       .err_has = {"bad-cluster.json", "gpus_per_node"}},
      {.name = "DeeplyNestedArrayInScenarioStrategy",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kScenario, "scenarios/bad-scenario.json", "/strategy/tp",
                       Nested(100000, false));
           },
       .err_has = {"bad-scenario.json", "tp"}},
      {.name = "DeeplyNestedArrayInNcclTestsJson",
       .args = {"fit", "reduce_scatter_perf_bad.json", "--cluster", kA100Cluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kNcclJson, "reduce_scatter_perf_bad.json", "/results/0",
                       Nested(100000, false));
           },
       .err_has = {"reduce_scatter_perf_bad.json"}},
      {.name = "DeeplyNestedArrayInPlanFile",
       .args = {"validate", "bad-plan.json"},
       .setup =
           [](Workdir& wd) {
             WritePlan(wd);
             wd.SetRaw(kPlan, "bad-plan.json", "/step/tasks/0", Nested(100000, false));
           },
       .err_has = {"bad-plan.json", "tasks"}},
      {.name = "DeeplyNestedArrayInProfile",
       .args = {"fit", "bad-profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kProfile, "bad-profile.json", "/samples/0/m", Nested(100000, false));
           },
       .err_has = {"bad-profile.json"}},
      // Files that are not JSON objects at all.
      {.name = "EmptyModelFile",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = [](Workdir& wd) { wd.Write("models/bad-model.json", ""); },
       .err_has = {"bad-model.json"}},
      {.name = "BinaryGarbageCluster",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             std::string garbage;
             for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 7919 + 13) % 256);
             wd.Write("hardware/clusters/bad-cluster.json", garbage);
           },
       .err_has = {"bad-cluster.json"}},
      {.name = "Utf8BomBeforeModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup =
           [](Workdir& wd) { wd.Write("models/bad-model.json", "\xEF\xBB\xBF" + wd.Read(kModel)); },
       .exits = {0, 1},
       .err_has = {"bad-model.json"}},
      {.name = "TruncatedClusterFile",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             const std::string text = wd.Read(kCluster);
             wd.Write("hardware/clusters/bad-cluster.json", text.substr(0, text.size() / 2));
           },
       .err_has = {"bad-cluster.json"}},
      {.name = "TopLevelArrayModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = [](Workdir& wd) { wd.Write("models/bad-model.json", "[" + wd.Read(kModel) + "]"); },
       .err_has = {"bad-model.json"}},
      {.name = "TopLevelStringScenario",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup = [](Workdir& wd) { wd.Write("scenarios/bad-scenario.json", "\"loom.scenario/1\""); },
       .err_has = {"bad-scenario.json"}},
  };
}

std::vector<Case> KeyCases() {
  return {
      // Root cause 8: duplicate keys (JSON leaves them to the reader; taking the last hides a
      // mistake).
      {.name = "DuplicateKeyInModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kModel, "models/bad-model.json", "", "hidden_size", "1024");
           },
       .err_has = {"bad-model.json", "hidden_size"}},
      {.name = "DuplicateKeyInCluster",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kCluster, "hardware/clusters/bad-cluster.json", "/intra_node",
                             "bandwidth_GBps", "100");
           },
       .err_has = {"bad-cluster.json", "bandwidth_GBps"}},
      {.name = "DuplicateKeyInGpu",
       .args = {"fit", kProfile, "--gpu", "hardware/gpus/bad-gpu.json", "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kA100Gpu, "hardware/gpus/bad-gpu.json", "", "sm_count", "132");
           },
       .err_has = {"bad-gpu.json", "sm_count"}},
      {.name = "DuplicateKeyInScenarioStrategy",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kScenario, "scenarios/bad-scenario.json", "/strategy", "micro_batch",
                             "2");
           },
       .err_has = {"bad-scenario.json", "micro_batch"}},
      {.name = "DuplicateKeyInProfile",
       .args = {"fit", "bad-profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kProfile, "bad-profile.json", "", "date", "\"2025-03-02\"");
           },
       .err_has = {"bad-profile.json", "date"}},
      {.name = "DuplicateKeyInRuns",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kRuns, "tests/cli/data/bad-runs.json", "/runs/0", "step_time_s",
                             "2.5");
           },
       .err_has = {"bad-runs.json", "step_time_s"}},
      {.name = "DuplicateKeyInFramework",
       .args = Args({kSimulate, {"--framework", "hardware/frameworks/bad-framework.json"}}),
       .setup =
           [](Workdir& wd) {
             wd.DuplicateKey(kFramework, "hardware/frameworks/bad-framework.json", "/host", "scale",
                             "2");
           },
       .err_has = {"bad-framework.json", "scale"}},
      {.name = "DuplicateKeyInPlanFile",
       .args = {"validate", "bad-plan.json"},
       .setup =
           [](Workdir& wd) {
             WritePlan(wd);
             wd.DuplicateKey(kPlan, "bad-plan.json", "/step", "stages", "1");
           },
       .err_has = {"bad-plan.json", "stages"}},
      {.name = "AliasAndKeyInScenarioStrategy",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json", [](Json& j) {
               j["strategy"]["zero"] = 1;
               j["strategy"]["zero_stage"] = 0;
             });
           },
       .err_has = {"bad-scenario.json", "zero"}},
      // Unknown keys and values, with the nearest known one suggested.
      {.name = "MisspeltKeyInModel",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kModel, "models/bad-model.json", [](Json& j) {
               j["vocab_sise"] = j["vocab_size"];
               j.erase("vocab_size");
             });
           },
       .err_has = {"bad-model.json", "vocab_sise", "vocab_size"}},
      {.name = "MisspeltKeyInCluster",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpus_per_nod"] = 8; });
           },
       .err_has = {"bad-cluster.json", "gpus_per_nod", "did you mean"}},
      {.name = "MisspeltKeyInScenarioStrategy",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["strategy"]["micro_bach"] = 2; });
           },
       .err_has = {"bad-scenario.json", "micro_bach", "micro_batch"}},
      {.name = "MisspeltKeyInRuns",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kRuns, "tests/cli/data/bad-runs.json",
                     [](Json& j) { j["runs"][0]["stepp_time_s"] = 1.0; });
           },
       .err_has = {"bad-runs.json", "stepp_time_s"}},
      {.name = "UnknownFabric",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["intra_node"]["fabric"] = "nvlinx"; });
           },
       .err_has = {"bad-cluster.json", "fabric"}},
      {.name = "UnknownScheduleInScenario",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["strategy"]["schedule"] = "1f2b"; });
           },
       .err_has = {"bad-scenario.json", "schedule"}},
      {.name = "UnknownActivation",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("hidden_act", "\"gelu_fastest\""),
       .err_has = {"bad-model.json", "hidden_act"}},
      {.name = "UnknownKernelInProfile",
       .args = {"fit", "tests/cli/data/malformed_profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .err_has = {"malformed_profile.json", "atention"}},
      {.name = "ScenarioWrongSchema",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["schema"] = "loom.scenario/2"; });
           },
       .err_has = {"bad-scenario.json", "schema"}},
      {.name = "GpuFileGivenAsCluster",
       .args = {"describe", "--model", kModel, "--cluster", kH100Gpu},
       .err_has = {"h100-sxm5-80gb.json", "schema"}},
      {.name = "FrameworkMissingSync",
       .args = Args({kSimulate, {"--framework", "hardware/frameworks/bad-framework.json"}}),
       .setup =
           [](Workdir& wd) {
             wd.Edit(kFramework, "hardware/frameworks/bad-framework.json",
                     [](Json& j) { j.erase("sync"); });
           },
       .err_has = {"bad-framework.json", "sync"}},
      // Root cause 9: an error in a scenario names the scenario file and key, not a flag never
      // given.
      {.name = "ScenarioStrategyRuleNamesFileAndKey",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["strategy"]["tp"] = 5; });
           },
       .err_has = {"bad-scenario.json", "tp"},
       .err_lacks = {"--tp"}},
      {.name = "ProfileWithNoSamples",
       .args = {"fit", "bad-profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kProfile, "bad-profile.json", [](Json& j) { j["samples"].clear(); });
           },
       .err_has = {"bad-profile.json"}},
      {.name = "ProfileWithNoCollectivesForCluster",
       .args = {"fit", "bad-profile.json", "--cluster", kA100Cluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kProfile, "bad-profile.json", [](Json& j) { j["samples"].clear(); });
           },
       .err_has = {"bad-profile.json"}},
  };
}

}  // namespace loom::bad_input
