// Values no hardware or model has (issue 20, root cause 4), and paths that are not a readable
// file: missing, a directory, a symlink loop (9).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bad_input/cases.h"

namespace loom::bad_input {

using Json = Workdir::Json;

std::vector<Case> SizeCases() {
  return {
      // Root cause 4: narrowing, and sizes no model or machine has.
      {.name = "GlobalBatchBeyond32Bits",
       .args = {"simulate", "--model", kModel, "--cluster", kCluster, "--global-batch",
                "4294967304", "--seq", "512"},
       .err_has = {"--global-batch|global_batch"}},
      {.name = "GlobalBatchBeyond32BitsInScenario",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["strategy"]["global_batch"] = 4294967304LL; });
           },
       .err_has = {"bad-scenario.json", "global_batch"}},
      {.name = "GpuHbmBandwidthTiny",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kH100Gpu, "hardware/gpus/bad-gpu.json", "/hbm_bandwidth_GBps", "1e-300");
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpu"] = "../gpus/bad-gpu.json"; });
           },
       .err_has = {"bad-gpu.json", "hbm_bandwidth_GBps"}},
      // A GPU's memory in the wrong unit (MiB for bytes): below the reserve, no usable memory.
      {.name = "GpuMemoryBelowTheReserve",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kH100Gpu, "hardware/gpus/bad-gpu.json", "/memory_bytes", "81559");
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpu"] = "../gpus/bad-gpu.json"; });
           },
       .err_has = {"bad-gpu.json", "memory_bytes", "--memory-headroom"},
       .err_lacks = {"usable"}},
      {.name = "ClusterLinkBandwidthTiny",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--tp", "2", "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json", "/intra_node/bandwidth_GBps",
                       "1e-300");
           },
       .err_has = {"bad-cluster.json", "bandwidth_GBps"}},
      {.name = "ClusterLatencyHuge",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--tp", "2", "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json", "/intra_node/latency_us",
                       "1e300");
           },
       .err_has = {"bad-cluster.json", "latency_us"}},
      // A restart that would take centuries, and storage of a byte a second: unit errors.
      {.name = "ClusterRestartCenturies",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json", "/reliability/restart_s",
                       "1e300");
           },
       .err_has = {"bad-cluster.json", "reliability.restart_s"}},
      {.name = "ClusterCheckpointStorageTiny",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kCluster, "hardware/clusters/bad-cluster.json",
                       "/reliability/checkpoint_write_GBps", "1e-9");
           },
       .err_has = {"bad-cluster.json", "reliability.checkpoint_write_GBps"}},
      {.name = "BillionLayers",
       .args = {"simulate", "--model", "models/bad-model.json", "--cluster", kCluster,
                "--global-batch", "4", "--seq", "512"},
       .setup = ModelWith("num_hidden_layers", "1000000000"),
       .err_has = {"bad-model.json", "num_hidden_layers"}},
      {.name = "HiddenSize2To40",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("hidden_size", "1099511627776"),
       .err_has = {"bad-model.json", "hidden_size"}},
      {.name = "VocabSizeHuge",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("vocab_size", "1125899906842624"),
       .err_has = {"bad-model.json", "vocab_size"}},
      {.name = "TrillionGpusToPlan",
       .args = {"plan", "--model", kModel, "--cluster", kCluster, "--gpus", "1000000000000",
                "--global-batch", "4", "--seq", "512", "--top", "1"},
       .exits = {1, 2},
       .err_has = {"--gpus"}},
      {.name = "TrillionGpusInCluster",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["nodes"] = 125000000000LL; });
           },
       .err_has = {"bad-cluster.json", "nodes"}},
      {.name = "GpuPeakTiny",
       .args = {"simulate", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json",
                "--global-batch", "4", "--seq", "512"},
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kH100Gpu, "hardware/gpus/bad-gpu.json", "/peak_tflops/bf16", "1e-300");
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpu"] = "../gpus/bad-gpu.json"; });
           },
       .err_has = {"bad-gpu.json", "bf16"}},
      {.name = "FrameworkHostTimeHuge",
       .args = Args({kSimulate, {"--framework", "hardware/frameworks/bad-framework.json"}}),
       .setup =
           [](Workdir& wd) {
             wd.SetRaw(kFramework, "hardware/frameworks/bad-framework.json", "/host/scale",
                       "1e300");
           },
       .err_has = {"bad-framework.json", "scale"}},
      {.name = "MaxPositionsBeyondAnyRun",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("max_position_embeddings", "4611686018427387904"),
       .err_has = {"bad-model.json", "max_position_embeddings"}},
      {.name = "NegativeLayerCount",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("num_hidden_layers", "-12"),
       .err_has = {"bad-model.json", "num_hidden_layers"}},
      {.name = "ZeroVocabSize",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("vocab_size", "0"),
       .err_has = {"bad-model.json", "vocab_size"}},
      {.name = "ZeroGpusPerNode",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpus_per_node"] = 0; });
           },
       .err_has = {"bad-cluster.json", "gpus_per_node"}},
      {.name = "NegativeGpuMemory",
       .args = {"fit", kProfile, "--gpu", "hardware/gpus/bad-gpu.json", "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kA100Gpu, "hardware/gpus/bad-gpu.json",
                     [](Json& j) { j["memory_bytes"] = -1; });
           },
       .err_has = {"bad-gpu.json", "memory_bytes"}},
      {.name = "SizeAsQuotedString",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("hidden_size", "\"768\""),
       .err_has = {"bad-model.json", "hidden_size"}},
      {.name = "HeadCountAsFraction",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("num_attention_heads", "12.5"),
       .err_has = {"bad-model.json", "num_attention_heads"}},
      {.name = "KvHeadsNotDividingHeads",
       .args = {"describe", "--model", "models/bad-model.json"},
       .setup = ModelWith("num_key_value_heads", "5"),
       .err_has = {"bad-model.json", "num_key_value_heads"}},
      {.name = "HeadsNotDivisibleByTp",
       .args = Args({kSimulate, {"--tp", "5"}}),
       .err_has = {"--tp", "num_attention_heads"}},
      {.name = "CalibrationFractionAboveOne",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["calibration"]["intra_node_busbw_fraction"] = 1.5; });
           },
       .err_has = {"bad-cluster.json", "intra_node_busbw_fraction"}},
  };
}

std::vector<Case> FileKindCases() {
  return {
      // Root cause 9: a directory, a symlink loop, a missing file, each said as it is.
      {.name = "ModelIsADirectory",
       .args = {"describe", "--model", "models"},
       .err_has = {"models", "directory"}},
      {.name = "ClusterIsADirectory",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters"},
       .err_has = {"hardware/clusters", "directory"}},
      {.name = "ScenarioIsADirectory",
       .args = {"simulate", "scenarios"},
       .err_has = {"scenarios", "directory"}},
      {.name = "ProfileIsADirectory",
       .args = {"fit", "tests/cli/data", "--gpu", kA100Gpu, "--dry-run"},
       .err_has = {"tests/cli/data", "directory"}},
      {.name = "NcclTestsOutputIsADirectory",
       .args = {"fit", "tests/cost/data", "--cluster", kCluster, "--dry-run"},
       .err_has = {"tests/cost/data", "directory"}},
      {.name = "PlanFileIsADirectory",
       .args = {"validate", "models"},
       .err_has = {"models", "directory"}},
      {.name = "ModelSymlinkLoop",
       .args = {"describe", "--model", "models/loop-a.json"},
       .setup =
           [](Workdir& wd) {
             wd.Symlink("loop-b.json", "models/loop-a.json");
             wd.Symlink("loop-a.json", "models/loop-b.json");
           },
       .err_has = {"loop-a.json", "symbolic link|symlink"}},
      {.name = "ClusterSymlinkLoop",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/loop-a.json"},
       .setup =
           [](Workdir& wd) {
             wd.Symlink("loop-b.json", "hardware/clusters/loop-a.json");
             wd.Symlink("loop-a.json", "hardware/clusters/loop-b.json");
           },
       .err_has = {"loop-a.json", "symbolic link|symlink"}},
      {.name = "MissingModelFile",
       .args = {"describe", "--model", "models/nope.json"},
       .err_has = {"nope.json"}},
      {.name = "MissingClusterFile",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/nope.json"},
       .err_has = {"nope.json"}},
      {.name = "MissingScenarioFile",
       .args = {"simulate", "scenarios/nope.json"},
       .err_has = {"nope.json"}},
      {.name = "MissingPlanFile", .args = {"validate", "nope.json"}, .err_has = {"nope.json"}},
      {.name = "MissingProfile",
       .args = {"fit", "nope.json", "--gpu", kA100Gpu, "--dry-run"},
       .err_has = {"nope.json"}},
      {.name = "MissingRunsFile",
       .args = {"fit", "--runs", "nope.json", "--cluster", kCluster, "--dry-run"},
       .err_has = {"nope.json"}},
      {.name = "ClusterNamesMissingGpuFile",
       .args = {"describe", "--model", kModel, "--cluster", "hardware/clusters/bad-cluster.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kCluster, "hardware/clusters/bad-cluster.json",
                     [](Json& j) { j["gpu"] = "../gpus/nope.json"; });
           },
       .err_has = {"bad-cluster.json", "nope.json"}},
      {.name = "ScenarioNamesMissingModel",
       .args = {"simulate", "scenarios/bad-scenario.json"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kScenario, "scenarios/bad-scenario.json",
                     [](Json& j) { j["model"] = "../models/nope.json"; });
           },
       .err_has = {"nope.json"}},
      {.name = "RunNamesMissingModel",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kRuns, "tests/cli/data/bad-runs.json",
                     [](Json& j) { j["runs"][0]["model"] = "nope.json"; });
           },
       .err_has = {"bad-runs.json|nope.json"}},
  };
}

}  // namespace loom::bad_input
