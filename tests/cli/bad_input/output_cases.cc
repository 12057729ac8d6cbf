// What other tools and loom itself wrote (nccl-tests output, profiles, plan files; issue 20,
// root cause 3), and where loom writes: symlinks, FIFOs, a full disk, a missing folder (6).

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/bad_input/cases.h"
#include "support/schema_check.h"

namespace loom::bad_input {

using Json = Workdir::Json;

namespace {

// kNcclText with three more sizes from 16 MiB, so that a fit on it succeeds, and |gpu| as the name
// of the GPU its first rank ran on.
std::string FittableNcclText(const Workdir& wd, const std::string& gpu) {
  std::string text = wd.Read(kNcclText);
  const std::string last = "  8589934592", name = "NVIDIA H100 80GB HBM3\n";
  text.insert(text.find(last),
              "    33554432       8388608     float     sum      -1    210.1  159.71  279.49      "
              "0    209.8  159.94"
              "  279.89      0\n"
              "    67108864      16777216     float     sum      -1    380.2  176.51  308.89      "
              "0    379.9  176.65"
              "  309.14      0\n"
              "   134217728      33554432     float     sum      -1    720.5  186.28  325.99      "
              "0    719.8  186.47"
              "  326.32      0\n");
  return text.replace(text.find(name), name.size(), gpu + "\n");
}

// A runs file whose first run takes its step time (and without "strategy", its settings) from the
// Megatron-LM log |log|, written beside it.
Setup RunsWithLog(const std::string& log) {
  return [=](Workdir& wd) {
    wd.Write("tests/cli/data/megatron.log", log);
    wd.Edit(kRuns, "tests/cli/data/bad-runs.json", [&log](Json& j) {
      Json& run = j["runs"][0];
      run.erase("step_time_s");
      if (log.find("---- arguments ----") != std::string::npos) run.erase("strategy");
      run["log"] = "megatron.log";
    });
  };
}

// The JSON a --json run printed must parse (invalid UTF-8 from an input must not leak into it) and
// match its schema.
void PrintsJson(const Workdir&, const Outcome& o) {
  if (o.code != 0) return;
  EXPECT_TRUE(Json::accept(o.out)) << "stdout is not JSON:\n" << o.out.substr(0, 400);
  ExpectMatchesSchemaIfJson(o.out, "a --json run on hostile input");
}

constexpr char kCsvHeader[] = "name,model,step_time_s,micro_batch,global_batch,seq_len\n";

}  // namespace

std::vector<Case> MeasurementCases() {
  const std::string header_from =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw "
      "#wrong";
  return {
      {.name = "NcclTestsTextPermutedHeader",
       .args = {"fit", "all_reduce_perf_permuted.txt", "--cluster", kCluster, "--dry-run"},
       .setup =
           [=](Workdir& wd) {
             std::string text = wd.Read(kNcclText);
             const size_t at = text.find(header_from);
             ASSERT_NE(at, std::string::npos);
             text.replace(
                 at, header_from.size(),
                 "#  count type redop root time algbw busbw #wrong time algbw busbw #wrong size");
             wd.Write("all_reduce_perf_permuted.txt", text);
           },
       .exits = {0, 1},
       .err_has = {"all_reduce_perf_permuted.txt"}},
      {.name = "NcclTestsTextHeaderWiderThanRows",
       .args = {"fit", "all_reduce_perf_wide.txt", "--cluster", kCluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             std::string filler;
             for (int i = 0; i < 20000; ++i) filler += " x" + std::to_string(i);
             wd.Write("all_reduce_perf_wide.txt",
                      "# Collective test starting: all_reduce_perf\n"
                      "#  count type redop root time algbw busbw #wrong" +
                          filler +
                          " time algbw busbw #wrong size\n"
                          "   262144 float sum -1 41.97 24.98 43.72 0 1048576\n");
           },
       .exits = {0, 1},
       .err_has = {"all_reduce_perf_wide.txt"}},
      {.name = "NcclTestsTextShortRow",
       .args = {"fit", "tests/cost/data/malformed_all_reduce_perf_short_row.txt", "--cluster",
                kCluster, "--dry-run"},
       .err_has = {"malformed_all_reduce_perf_short_row.txt"}},
      {.name = "NcclTestsTextNoHeader",
       .args = {"fit", "tests/cost/data/malformed_all_reduce_perf_no_header.txt", "--cluster",
                kCluster, "--dry-run"},
       .err_has = {"malformed_all_reduce_perf_no_header.txt"}},
      {.name = "NcclTestsTextBinaryGarbage",
       .args = {"fit", "all_reduce_perf_garbage.txt", "--cluster", kCluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             std::string garbage = "# size time algbw busbw time algbw busbw\n";
             for (int i = 0; i < 8192; ++i) garbage += static_cast<char>((i * 131 + 7) % 256);
             wd.Write("all_reduce_perf_garbage.txt", garbage);
           },
       .err_has = {"all_reduce_perf_garbage.txt"}},
      {.name = "NcclTestsJsonNanAsString",
       .args = {"fit", "reduce_scatter_perf_bad.json", "--cluster", kA100Cluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kNcclJson, "reduce_scatter_perf_bad.json",
                     [](Json& j) { j["results"][0]["in_place"]["time"] = "nan"; });
           },
       .err_has = {"reduce_scatter_perf_bad.json", "time"}},
      {.name = "NcclTestsJsonEmptyResults",
       .args = {"fit", "reduce_scatter_perf_bad.json", "--cluster", kA100Cluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kNcclJson, "reduce_scatter_perf_bad.json",
                     [](Json& j) { j["results"] = Json::array(); });
           },
       .err_has = {"reduce_scatter_perf_bad.json", "results"}},
      {.name = "NcclTestsGivenToGpuFit",
       .args = {"fit", kNcclText, "--gpu", kH100Gpu, "--dry-run"},
       .err_has = {"all_reduce_perf_h100.txt", "--cluster"}},
      {.name = "ProfileOfAnotherGpu",
       .args = {"fit", kProfile, "--gpu", kH100Gpu, "--dry-run"},
       .err_has = {"profile_a100_synthetic.json", "--force"}},
      {.name = "ProfileGemmShapeHuge",
       .args = {"fit", "bad-profile.json", "--gpu", kA100Gpu, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Edit(kProfile, "bad-profile.json", [](Json& j) {
               for (const char* key : {"m", "n", "k"}) j["samples"][0][key] = int64_t{1} << 40;
             });
           },
       .err_has = {"bad-profile.json", "samples[0]"}},
      {.name = "NcclTestsTextInvalidUtf8GpuName",
       .args = {"fit", "all_reduce_perf_utf8.txt", "--cluster", kCluster, "--dry-run", "--force",
                "--json"},
       .setup =
           [](Workdir& wd) {
             wd.Write("all_reduce_perf_utf8.txt",
                      FittableNcclText(wd, "NVIDIA H100 \xff\xfe\x80 HBM3"));
           },
       .exits = {0, 1},
       .err_has = {"all_reduce_perf_utf8.txt"},
       .check = PrintsJson},
      {.name = "RunsCsvInvalidUtf8Name",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.csv", "--cluster", kCluster, "--dry-run",
                "--json"},
       .setup =
           [](Workdir& wd) {
             wd.Write("tests/cli/data/bad-runs.csv",
                      std::string(kCsvHeader) +
                          "r\xff"
                          "1,../../../models/gpt3-125m.json,0.877149,1,16,2048\n"
                          "r2,../../../models/gpt3-125m.json,0.247292,4,16,2048\n"
                          "r3,../../../models/gpt3-350m.json,0.465259,4,16,2048\n");
           },
       .exits = {0, 1},
       .err_has = {"bad-runs.csv"},
       .check = PrintsJson},
      {.name = "RunsCsvOutOfRangeNumber",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.csv", "--cluster", kCluster, "--dry-run"},
       .setup =
           [](Workdir& wd) {
             wd.Write(
                 "tests/cli/data/bad-runs.csv",
                 std::string(kCsvHeader) + "r1,../../../models/gpt3-125m.json,1e999,1,16,2048\n");
           },
       .err_has = {"bad-runs.csv", "step_time_s"}},
      {.name = "MegatronLogStepTimesNan",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup = RunsWithLog(" iteration 1/ 10 | elapsed time per iteration (ms): nan |\n"
                            " iteration 2/ 10 | elapsed time per iteration (ms): nan |\n"
                            " iteration 3/ 10 | elapsed time per iteration (ms): inf |\n"),
       .err_has = {"megatron.log"}},
      {.name = "MegatronLogArgumentBeyond64Bits",
       .args = {"fit", "--runs", "tests/cli/data/bad-runs.json", "--cluster", kCluster,
                "--dry-run"},
       .setup = RunsWithLog(
           "------------------------ arguments ------------------------\n"
           "  tensor_model_parallel_size ...................... 99999999999999999999999\n"
           "  micro_batch_size ................................ 1\n"
           "  global_batch_size ............................... 16\n"
           "  seq_length ...................................... 2048\n"
           "-------------------- end of arguments ---------------------\n"
           " iteration 1/ 10 | elapsed time per iteration (ms): 900 |\n"
           " iteration 2/ 10 | elapsed time per iteration (ms): 877 |\n"
           " iteration 3/ 10 | elapsed time per iteration (ms): 878 |\n"),
       .err_has = {"megatron.log", "tensor_model_parallel_size"},
       .err_lacks = {"9223372036854775807"}},
  };
}

std::vector<Case> OutputCases() {
  return {
      // Root cause 6: a symlink or FIFO at an output path stays what it is; errors name the path.
      {.name = "PlanOutSymlinkToDevNull",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "null.json"}}),
       .setup = [](Workdir& wd) { wd.Symlink("/dev/null", "null.json"); },
       .exits = {0, 1},
       .err_has = {"null.json"},
       .check = StillSymlink("null.json", "/dev/null")},
      {.name = "PlanOutSymlinkToDevFull",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "full.json"}}),
       .setup = [](Workdir& wd) { wd.Symlink("/dev/full", "full.json"); },
       .err_has = {"full.json"},
       .check = StillSymlink("full.json", "/dev/full")},
      {.name = "PlanOutFifo",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "fifo.json"}}),
       .setup = [](Workdir& wd) { wd.Fifo("fifo.json"); },
       .exits = {0, 1},
       .err_has = {"fifo.json"},
       .check = StillFifo("fifo.json")},
      {.name = "PlanOutInMissingFolder",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "no-such-folder/plan.json"}}),
       .err_has = {"no-such-folder/plan.json"}},
      {.name = "PlanOutInReadOnlyFolder",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "/proc/loom-bad-input-plan.json"}}),
       .err_has = {"/proc/loom-bad-input-plan.json"}},
      {.name = "PlanOutUnderARegularFile",
       .args = Args({kPlanSmall, {"--emit", "plan", "--out", "models/gpt3-125m.json/plan.json"}}),
       .err_has = {"models/gpt3-125m.json/plan.json"}},
      {.name = "FitOutputSymlinkToDevFull",
       .args = {"fit", kProfile, "--gpu", kA100Gpu, "--output", "full.json"},
       .setup = [](Workdir& wd) { wd.Symlink("/dev/full", "full.json"); },
       .err_has = {"full.json"},
       .check = StillSymlink("full.json", "/dev/full")},
      {.name = "FitOutputFifo",
       .args = {"fit", kProfile, "--gpu", kA100Gpu, "--output", "fifo.json"},
       .setup = [](Workdir& wd) { wd.Fifo("fifo.json"); },
       .exits = {0, 1},
       .err_has = {"fifo.json"},
       .check = StillFifo("fifo.json")},
      {.name = "FitInPlaceThroughSymlink",
       .args = {"fit", kProfile, "--gpu", "hardware/gpus/linked-a100.json"},
       .setup =
           [](Workdir& wd) { wd.Symlink("a100-sxm4-80gb.json", "hardware/gpus/linked-a100.json"); },
       .exits = {0, 1},
       .err_has = {"linked-a100.json"},
       .check = StillSymlink("hardware/gpus/linked-a100.json", "a100-sxm4-80gb.json")},
      {.name = "FitOutputInMissingFolder",
       .args = {"fit", kProfile, "--gpu", kA100Gpu, "--output", "no-such-folder/a100.json"},
       .err_has = {"no-such-folder/a100.json"}},
      {.name = "FitOutputInReadOnlyFolder",
       .args = {"fit", kProfile, "--gpu", kA100Gpu, "--output", "/proc/loom-bad-input-a100.json"},
       .err_has = {"/proc/loom-bad-input-a100.json"}},
      {.name = "SimulateTraceToDevFull",
       .args = Args({kSimulate, {"--trace", "full-trace.json"}}),
       .setup = [](Workdir& wd) { wd.Symlink("/dev/full", "full-trace.json"); },
       .err_has = {"full-trace.json"},
       .check = StillSymlink("full-trace.json", "/dev/full")},
      {.name = "SimulateTraceInMissingFolder",
       .args = Args({kSimulate, {"--trace", "no-such-folder/trace.json"}}),
       .err_has = {"no-such-folder/trace.json"}},
      {.name = "ValidateTraceToDevFull",
       .args = Args({kValidate, {"--trace", "full-trace.json"}}),
       .setup =
           [](Workdir& wd) {
             WritePlan(wd);
             wd.Symlink("/dev/full", "full-trace.json");
           },
       .err_has = {"full-trace.json"},
       .check = StillSymlink("full-trace.json", "/dev/full")},
  };
}

// Plan files (validate): other versions, edits that break the ids, and a collective cut short.
std::vector<Case> PlanFileCases() {
  const auto plan_with = [](std::function<void(Json&)> edit, bool two_ranks = false) {
    return [=](Workdir& wd) {
      WritePlan(wd, kPlan, two_ranks);
      wd.Edit(kPlan, "bad-plan.json", edit);
    };
  };
  const std::vector<std::string> validate_bad = {
      "validate", "bad-plan.json", "--steps", "1", "--warmup", "0", "--speedup", "100"};
  return {
      {.name = "PlanFileFromANewerLoom",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["schema"] = "loom.plan-file/4"; }),
       .err_has = {"bad-plan.json", "schema"}},
      {.name = "PlanFileFromBeforeItsGpusWereUnfolded",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["schema"] = "loom.plan-file/2"; }),
       .err_has = {"bad-plan.json", "loom.plan-file/3", "write the plan again"}},
      {.name = "PlanFileWithoutItsGpuLayout",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j.erase("gpus"); }),
       .err_has = {"bad-plan.json", "gpus"}},
      {.name = "PlanFileWhoseExpertGroupsDoNotTileTheGpus",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["gpus"]["ep"] = 3; }),
       .err_has = {"bad-plan.json: gpus: the expert groups do not tile", "ep x etp = 3"}},
      {.name = "PlanFileFromAnOlderLoom",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["schema"] = "loom.plan-file/1"; }),
       .err_has = {"bad-plan.json", "schema"}},
      {.name = "PlanFileTruncated",
       .args = validate_bad,
       .setup =
           [](Workdir& wd) {
             const std::string text = MadePlan(false);
             wd.Write("bad-plan.json", text.substr(0, text.size() * 2 / 3));
           },
       .err_has = {"bad-plan.json"}},
      {.name = "PlanFileWithoutStep",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j.erase("step"); }),
       .err_has = {"bad-plan.json", "step"}},
      {.name = "PlanFileTaskOnUnknownStream",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["step"]["tasks"][0][0] = 999; }),
       .err_has = {"bad-plan.json", "tasks[0]"}},
      {.name = "PlanFileNegativeDuration",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["step"]["tasks"][0][1] = -5; }),
       .err_has = {"bad-plan.json", "tasks[0]"}},
      {.name = "PlanFileDependencyOnUnknownTask",
       .args = validate_bad,
       .setup = plan_with([](Json& j) {
         j["step"]["dependencies"][0] = Json::array({0, 99999});
       }),
       .err_has = {"bad-plan.json", "dependencies[0]"}},
      {.name = "PlanFileDependencyCycle",
       .args = validate_bad,
       .setup = plan_with([](Json& j) {
         j["step"]["dependencies"].push_back(Json::array({1, 0}));
       }),
       .err_has = {"bad-plan.json", "cycle|deadlock"}},
      {.name = "PlanFileStagesZero",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["step"]["stages"] = 0; }),
       .err_has = {"bad-plan.json", "stages"}},
      {.name = "PlanFileCollectiveMemberMissing",
       .args = validate_bad,
       .setup = plan_with(
           [](Json& j) {
             j["step"]["collectives"][0] = Json::array({j["step"]["collectives"][0][0]});
           },
           true),
       .err_has = {"bad-plan.json", "collectives[0]|collective"}},
      {.name = "PlanFileTaskDurationHuge",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["step"]["tasks"][0][1] = 9000000000000000000LL; }),
       .err_has = {"bad-plan.json", "tasks[0]|duration"}},
      {.name = "PlanFilePredictionNegative",
       .args = validate_bad,
       .setup = plan_with([](Json& j) { j["prediction"]["step_time_s"] = -1; }),
       .err_has = {"bad-plan.json", "step_time_s"}},
      {.name = "ModelFileGivenAsPlan",
       .args = {"validate", kModel},
       .err_has = {"gpt3-125m.json", "schema"}},
  };
}

}  // namespace loom::bad_input
