#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/fit_destination.h"
#include "cli/run_loom.h"
#include "cost/calibration_file.h"
#include "cost/comm_fit.h"
#include "cost/profile.h"
#include "spec/cluster.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// The values tests/cli/data/profile_a100_synthetic.json was generated with: RooflineComputeModel on
// hardware/gpus/a100-sxm4-80gb.json with this calibration (tiles chosen per shape, no operand
// term, gemm_epilogue_overlap false), times rounded to the nanosecond. Its last 6 samples are 3
// weight-gradient pairs, each GEMM accumulating into fp32 and plain.
constexpr double kGemmBf16 = 0.78, kWaveLatencyUs = 4.0, kOverheadUs = 5.5, kAttention = 0.55,
                 kMemory = 0.88;

const std::string kProfile = Shipped("tests/cli/data/profile_a100_synthetic.json");

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh folder for one test.
fs::path TestDir() {
  const fs::path dir = fs::path(::testing::TempDir()) / "loom_fit_test" /
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A copy of a shipped GPU file in |dir| with a known calibration, so that the tests do not depend
// on the calibration shipped today.
std::string GpuCopy(const fs::path& dir,
                    const std::string& shipped = "hardware/gpus/a100-sxm4-80gb.json") {
  nlohmann::ordered_json gpu = nlohmann::ordered_json::parse(ReadText(Shipped(shipped)));
  gpu["calibration"] = {{"gemm_tile_m", 128},
                        {"gemm_tile_n", 256},
                        {"gemm_efficiency_fp16", 0.8},
                        {"gemm_efficiency_tf32", 0.7},
                        {"gemm_epilogue_overlap", true},
                        {"kernel_overhead_us", 7},
                        {"source", "an older fit"}};
  const std::string path = (dir / "gpu.json").string();
  std::ofstream(path) << gpu.dump(2) << "\n";
  return path;
}

// The shipped DGX A100 cluster file and its GPU file, copied into |dir|/hw/ as they lie in
// hardware/.
std::string ClusterCopy(const fs::path& dir) {
  fs::create_directories(dir / "hw" / "clusters");
  fs::create_directories(dir / "hw" / "gpus");
  fs::copy_file(Shipped("hardware/gpus/a100-sxm4-80gb.json"),
                dir / "hw" / "gpus" / "a100-sxm4-80gb.json");
  fs::copy_file(Shipped("hardware/clusters/dgx-a100.json"),
                dir / "hw" / "clusters" / "dgx-a100.json");
  return (dir / "hw" / "clusters" / "dgx-a100.json").string();
}

std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  return keys;
}

TEST(Fit, ProfileCalibratesACopyOfTheGpuFile) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::vector<std::string> keys_before = Keys(nlohmann::ordered_json::parse(ReadText(gpu)));
  CommandResult r = Loom({"fit", kProfile, "--gpu", gpu, "--in-place"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  Result<GpuSpec> fitted = LoadGpuSpec(gpu);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  const ComputeCalibration& c = fitted->calibration;
  EXPECT_EQ(c.gemm_tile_m, 0);  // the older fit's fixed tile is gone: tiles are chosen per shape
  EXPECT_EQ(c.gemm_tile_n, 0);
  EXPECT_EQ(c.gemm_efficiency_bf16, kGemmBf16);
  EXPECT_EQ(c.gemm_efficiency_fp16,
            kGemmBf16);  // the same tensor cores: one efficiency, as FitComputeJointly fits
  EXPECT_EQ(c.gemm_wave_latency_us, kWaveLatencyUs);
  EXPECT_FALSE(c.gemm_operand_bandwidth_GBps.has_value());
  EXPECT_FALSE(
      c.gemm_epilogue_overlap);  // the accumulating pairs say the epilogue follows the main loop
  EXPECT_EQ(c.kernel_overhead_us, kOverheadUs);
  EXPECT_EQ(c.attention_efficiency, kAttention);
  EXPECT_EQ(c.memory_bandwidth_fraction, kMemory);
  EXPECT_EQ(c.gemm_efficiency_tf32, 0.7);  // not in the profile: kept
  EXPECT_EQ(c.fitted_on, (std::vector<std::string>{"profile_a100_synthetic.json"}));
  EXPECT_NE(c.source.find(
                "profile_a100_synthetic.json (NVIDIA A100-SXM4-80GB, 2025-03-01T10:00:00Z, driver "
                "550.54.15, CUDA 12.4, cublaslt 12.4.5.8, nccl 2.21.5): 34 samples"),
            std::string::npos)
      << c.source;
  EXPECT_NE(c.source.find("Kept from the earlier calibration (gemm_efficiency_tf32): an older fit"),
            std::string::npos)
      << c.source;
  EXPECT_EQ(Keys(nlohmann::ordered_json::parse(ReadText(gpu))), keys_before);
  EXPECT_FALSE(fs::exists(gpu + ".loom.tmp"));
  EXPECT_NE(r.out.find("gemm bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory_bandwidth_fraction"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept as they were (nothing measured for them): gemm_efficiency_tf32\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(
                "GEMM tile and split-K chosen per shape (ChooseGemmTile): gemm_wave_latency_us 4,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(
                "gemm_epilogue_overlap false: mean |err| over the 3 GEMMs accumulating into fp32 "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" after the main loop\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibration written to " + gpu), std::string::npos) << r.out;
}

TEST(Fit, DryRunWritesNothingAndJsonHasResidualsPerSample) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::string before = ReadText(gpu);
  CommandResult r = Loom({"fit", kProfile, "--gpu", gpu, "--dry-run", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ReadText(gpu), before);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "loom.fit/1");
  EXPECT_EQ(j["model"], "compute");
  EXPECT_TRUE(j["written"].is_null());
  EXPECT_FALSE(j["calibration"].contains("gemm_tile_m"));
  EXPECT_FALSE(j["calibration"].contains("gemm_tile_n"));
  EXPECT_EQ(j["calibration"]["gemm_wave_latency_us"], kWaveLatencyUs);
  EXPECT_EQ(j["calibration"]["gemm_epilogue_overlap"], false);
  EXPECT_EQ(j["kept_keys"], nlohmann::json::array({"gemm_efficiency_tf32"}));
  EXPECT_EQ(j["removed_keys"],
            nlohmann::json::array({"gemm_tile_m", "gemm_tile_n", "gemm_operand_bandwidth_GBps"}));
  EXPECT_EQ(j["gemm_tile"], "chosen per shape");
  EXPECT_EQ(
      j["fitted_keys"],
      nlohmann::json::array({"gemm_wave_latency_us", "gemm_epilogue_overlap",
                             "gemm_efficiency_bf16", "gemm_efficiency_fp16", "kernel_overhead_us",
                             "attention_efficiency", "memory_bandwidth_fraction"}));
  // Both settings' errors over the accumulating samples; the one kept fits them.
  const nlohmann::json& overlap = j["epilogue_overlap"];
  EXPECT_EQ(overlap["overlap"], false);
  EXPECT_EQ(overlap["samples"], 3);
  EXPECT_LT(overlap["serial_mean_abs_error"].get<double>(), 1e-4);
  EXPECT_GT(overlap["overlapped_mean_abs_error"].get<double>(), 0.05);
  ASSERT_EQ(j["classes"].size(), 3u);
  EXPECT_EQ(j["classes"][0]["class"], "gemm bf16");
  EXPECT_EQ(j["classes"][0]["residuals"].size(), 24u);
  EXPECT_EQ(j["classes"][2]["residuals"][0]["where"], kProfile + ": samples[24]");
  EXPECT_LT(j["mean_abs_error"].get<double>(), 1e-4);
}

TEST(Fit, OutputWritesElsewhereAndLeavesTheGpuFile) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::string before = ReadText(gpu);
  const std::string output = (dir / "calibrated.json").string();
  CommandResult r = Loom({"fit", kProfile, "--gpu", gpu, "--output", output});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ReadText(gpu), before);
  Result<GpuSpec> fitted = LoadGpuSpec(output);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  EXPECT_EQ(fitted->calibration.attention_efficiency, kAttention);
}

// --check reports the file's calibration as it is (the fitted copy on its own profile: errors near
// the fit's own), writes nothing, and --check without --gpu or with --output is refused.
TEST(Fit, CheckReportsTheCalibrationsErrorsAndWritesNothing) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::string fitted = (dir / "fitted.json").string();
  ASSERT_EQ(Loom({"fit", kProfile, "--gpu", gpu, "--output", fitted}).code, kExitOk);
  const std::string before = ReadText(fitted);
  CommandResult r = Loom({"fit", kProfile, "--gpu", fitted, "--check", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ReadText(fitted), before);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["check"], true);
  ASSERT_FALSE(j["classes"].empty());
  for (const auto& c : j["classes"]) {
    EXPECT_LE(c["median_abs_error"].get<double>(), c["p90_abs_error"].get<double>()) << c["class"];
    EXPECT_LE(c["p90_abs_error"].get<double>(), c["max_abs_error"].get<double>()) << c["class"];
  }
  r = Loom({"fit", kProfile, "--gpu", fitted, "--check"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("nothing fitted); GEMM tiles chosen per shape (ChooseGemmTile)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("p90 |err|"), std::string::npos) << r.out;
  EXPECT_EQ(Loom({"fit", kProfile, "--gpu", fitted, "--check", "--output", gpu}).code, kExitUsage);
  r = Loom({"fit", kProfile, "--cluster", ClusterCopy(dir), "--check"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--gpu"), std::string::npos) << r.err;
}

TEST(Fit, UnwritableOutputIsABadInputError) {
  const fs::path dir = TestDir();
  const std::string output = (dir / "no" / "such" / "folder.json").string();
  CommandResult r = Loom({"fit", kProfile, "--gpu", GpuCopy(dir), "--output", output});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find(output + ": cannot write (creating " + output + ".loom.tmp beside it"),
            std::string::npos)
      << r.err;
}

TEST(Fit, ProfileOfAnotherGpuIsRefusedUnlessForced) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir, "hardware/gpus/h100-sxm5-80gb.json");
  const std::string before = ReadText(gpu);
  CommandResult r = Loom({"fit", kProfile, "--gpu", gpu});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("loom: error: " + kProfile +
                       ": device.name \"NVIDIA A100-SXM4-80GB\" is not the GPU of " + gpu),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("or pass --force"), std::string::npos) << r.err;
  EXPECT_EQ(ReadText(gpu), before);
  r = Loom({"fit", kProfile, "--gpu", gpu, "--force"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
}

TEST(Fit, MalformedProfileNamesTheFileTheSampleAndTheKey) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::string malformed = Shipped("tests/cli/data/malformed_profile.json");
  CommandResult r = Loom({"fit", malformed, "--gpu", gpu});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(
      r.err.find(malformed + ": samples[1].kernel: is \"atention\"; did you mean \"attention\"?"),
      std::string::npos)
      << r.err;
  EXPECT_NE(
      r.err.find(malformed +
                 ": samples[2].bytes_writen: is not a known key; did you mean \"bytes_written\"?"),
      std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Fit, NcclTestsOutputGivenWithGpuPointsAtCluster) {
  const fs::path dir = TestDir();
  const std::string log = Shipped("tests/cost/data/all_reduce_perf_h100.txt");
  CommandResult r = Loom({"fit", log, "--gpu", GpuCopy(dir)});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(
      r.err.find(
          log +
          ": is not a profile (JSON, schema loom.profile/2); to fit nccl-tests output, pass the "
          "cluster file with --cluster"),
      std::string::npos)
      << r.err;
}

TEST(Fit, ProfileWithTooFewShapesIsRefused) {
  const fs::path dir = TestDir();
  nlohmann::json profile = nlohmann::json::parse(ReadText(kProfile));
  profile["samples"].erase(profile["samples"].end() - 6,
                           profile["samples"].end());  // the accumulating pairs
  profile["samples"].erase(profile["samples"].begin() + 24,
                           profile["samples"].begin() + 26);  // 4 attention left
  profile["samples"].erase(profile["samples"].begin() + 2,
                           profile["samples"].begin() + 24);  // 2 GEMMs left
  const std::string path = (dir / "few.json").string();
  std::ofstream(path) << profile.dump();
  CommandResult r = Loom({"fit", path, "--gpu", GpuCopy(dir)});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(
      r.err.find(path + ": the gemm bf16 samples: 2 distinct shape(s); at least 3 are needed"),
      std::string::npos)
      << r.err;
}

TEST(Fit, NcclTestsOutputCalibratesACopyOfTheClusterFile) {
  const fs::path dir = TestDir();
  const std::string cluster = ClusterCopy(dir);
  const std::string log = Shipped("tests/cost/data/all_gather_perf_2nodes_v2.6.txt");
  CommandResult r = Loom({"fit", log, "--cluster", cluster, "--in-place"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  // What the library fits from the same run, rounded as files hold it.
  Result<ClusterSpec> before = LoadClusterSpec(Shipped("hardware/clusters/dgx-a100.json"));
  Result<NcclTestsRun> run = ReadNcclTestsFile(log);
  ASSERT_TRUE(before.ok() && run.ok());
  Result<CommFit> want = FitCommCalibration({*run}, *before);
  ASSERT_TRUE(want.ok()) << want.status().message();
  Result<ClusterSpec> fitted = LoadClusterSpec(cluster);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  EXPECT_EQ(fitted->calibration.inter_node_busbw_fraction,
            RoundSignificant(*want->calibration.inter_node_busbw_fraction, 4));
  // The fixture's 21.8 GB/s over 2 nodes x 8 ranks: a group that crosses nodes on its 8 members'
  // NICs of 25 GB/s each (issue 18), so a fraction near 21.8 / 200.
  EXPECT_GT(*fitted->calibration.inter_node_busbw_fraction, 0.10);
  EXPECT_LT(*fitted->calibration.inter_node_busbw_fraction, 0.12);
  EXPECT_EQ(fitted->calibration.intra_node_busbw_fraction,
            before->calibration.intra_node_busbw_fraction);
  EXPECT_NE(fitted->calibration.source.find(
                "all_gather_perf_2nodes_v2.6.txt (all_gather_perf, 16 ranks on 2 node(s)"),
            std::string::npos)
      << fitted->calibration.source;
  EXPECT_NE(r.out.find("Ring/Simple"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all_gather_perf_2nodes_v2.6.txt:24"), std::string::npos) << r.out;
}

// A loom probe profile holding the rows of an nccl-tests run, as probe records them.
std::string ProfileOfRun(const fs::path& dir, const NcclTestsRun& run) {
  Profile p;
  p.device.name = run.gpu_name;
  p.driver_version = "535.104.05";
  p.cuda_version = "12.2";
  p.date = "2026-11-22";
  for (const NcclTestsRow& row : run.rows) {
    CollectiveSample s;
    s.collective = ProfiledCollective::kAllGather;
    s.group = ProbeGroup::kWorld;
    s.ranks = *run.ranks;
    s.nodes = *run.nodes;
    s.size_bytes = row.size_bytes;
    s.count = row.count;
    s.redop = row.redop;
    s.out_of_place = {row.out_of_place->time_us, row.out_of_place->algbw_GBps,
                      row.out_of_place->busbw_GBps};
    s.in_place = {row.in_place->time_us, row.in_place->algbw_GBps, row.in_place->busbw_GBps};
    p.collectives.push_back(s);
  }
  const std::string path = (dir / "probe.json").string();
  ProfileWriter writer;
  EXPECT_TRUE(writer.Open(path, p).ok());
  return path;
}

TEST(Fit, ProbeProfileCollectivesFitLikeTheNcclTestsOutputTheyHold) {
  const fs::path dir = TestDir();
  const std::string cluster = ClusterCopy(dir);
  Result<NcclTestsRun> run =
      ReadNcclTestsFile(Shipped("tests/cost/data/all_gather_perf_2nodes_v2.6.txt"));
  ASSERT_TRUE(run.ok());
  const std::string profile = ProfileOfRun(dir, *run);
  CommandResult r = Loom({"fit", profile, "--cluster", cluster, "--json", "--dry-run"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  Result<ClusterSpec> before = LoadClusterSpec(Shipped("hardware/clusters/dgx-a100.json"));
  ASSERT_TRUE(before.ok());
  Result<CommFit> want = FitCommCalibration({*run}, *before);
  ASSERT_TRUE(want.ok());
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["calibration"]["inter_node_busbw_fraction"],
            RoundSignificant(*want->calibration.inter_node_busbw_fraction, 4));
  EXPECT_EQ(j["rows"].size(), run->rows.size());
  EXPECT_EQ(j["rows"][0]["where"], profile + ": collectives[0]");
}

TEST(Fit, ProbeProfileWithoutCollectivesIsRefusedForACluster) {
  const fs::path dir = TestDir();
  CommandResult r = Loom({"fit", kProfile, "--cluster", ClusterCopy(dir)});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("holds no collectives loom fits"), std::string::npos) << r.err;
}

TEST(Fit, ClusterWrittenElsewhereStillFindsItsGpuFile) {
  const fs::path dir = TestDir();
  const std::string cluster = ClusterCopy(dir);
  fs::create_directories(dir / "out");
  const std::string output = (dir / "out" / "cluster.json").string();
  CommandResult r = Loom({"fit", Shipped("tests/cost/data/all_gather_perf_2nodes_v2.6.txt"),
                          "--cluster", cluster, "--output", output, "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(ReadText(output))["gpu"], "../hw/gpus/a100-sxm4-80gb.json");
  EXPECT_TRUE(LoadClusterSpec(output).ok());
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "loom.fit/1");
  EXPECT_EQ(j["model"], "communication");
  EXPECT_EQ(j["written"], output);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["nccl_choice"], "Ring/Simple");
}

TEST(Fit, NcclTestsRunWithTooFewSizesIsRefusedNamingTheFile) {
  const std::string log = Shipped("tests/cost/data/all_reduce_perf_h100.txt");
  CommandResult r =
      Loom({"fit", log, "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--dry-run"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find(log + ": 2 distinct size(s) of at least 16777216 bytes NVLS"),
            std::string::npos)
      << r.err;
}

TEST(Fit, MalformedNcclTestsOutputNamesTheFile) {
  const std::string log = Shipped("tests/cost/data/malformed_all_reduce_perf_short_row.txt");
  CommandResult r =
      Loom({"fit", log, "--cluster", Shipped("hardware/clusters/dgx-a100.json"), "--dry-run"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("loom: error: " + log + ":"), std::string::npos) << r.err;
}

TEST(Fit, NcclTestsOfAnotherGpuIsRefused) {
  const std::string log = Shipped("tests/cost/data/all_reduce_perf_h100.txt");
  CommandResult r =
      Loom({"fit", log, "--cluster", Shipped("hardware/clusters/dgx-a100.json"), "--dry-run"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find(log + ": ran on \"NVIDIA H100 80GB HBM3\" but the GPU of"),
            std::string::npos)
      << r.err;
}

TEST(Fit, NeedsExactlyOneOfGpuAndCluster) {
  EXPECT_EQ(Loom({"fit", kProfile}).code, kExitUsage);
  EXPECT_EQ(Loom({"fit", kProfile, "--gpu", "a.json", "--cluster", "b.json"}).code, kExitUsage);
  EXPECT_EQ(Loom({"fit", "--gpu", "a.json"}).code, kExitUsage);
  EXPECT_EQ(Loom({"fit", kProfile, "--gpu", "a.json", "--dry-run", "--output", "b.json"}).code,
            kExitUsage);
}

TEST(Fit, HelpHasExamples) {
  CommandResult r = Loom({"fit", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("loom fit tests/reference/nccl-tests/all_reduce_perf_2x8_h100_issue309.txt"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--in-place"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--cluster"), std::string::npos);
}

// fit --runs on runs that loom made with megatron-core's host times x 1.5: the host multiplier
// comes back, with the leave-one-out error, and is written into the framework file it came from.
TEST(FitRuns, RecoversTheHostScaleOfSyntheticRunsAndWritesItIntoTheFramework) {
  const fs::path dir = fs::path(::testing::TempDir()) / "fit_runs";
  fs::create_directories(dir);
  nlohmann::json framework =
      nlohmann::json::parse(ReadText(Shipped("hardware/frameworks/megatron-core.json")));
  framework["host"]["scale"] = 1.5;
  const fs::path truth = dir / "truth.json";
  std::ofstream(truth) << framework.dump(2);
  nlohmann::json runs = {{"schema", "loom.runs/1"}, {"runs", nlohmann::json::array()}};
  for (const char* model : {"gpt3-125m", "gpt3-350m"}) {
    for (const char* mb : {"1", "4", "16"}) {
      CommandResult r =
          Loom({"simulate", "--model", Shipped(std::string("models/") + model + ".json"),
                "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--micro-batch", mb,
                "--global-batch", "16", "--seq", "2048", "--framework", truth.string(), "--json"});
      ASSERT_EQ(r.code, kExitOk) << r.err;
      runs["runs"].push_back(
          {{"name", std::string(model) + " mb" + mb},
           {"model", Shipped(std::string("models/") + model + ".json")},
           {"strategy", {{"micro_batch", std::stoi(mb)}, {"global_batch", 16}, {"seq_len", 2048}}},
           {"step_time_s", nlohmann::json::parse(r.out)["step_time_s"]}});
    }
  }
  const fs::path runs_file = dir / "runs.json";
  std::ofstream(runs_file) << runs.dump(2);
  const fs::path mine = dir / "mine.json";
  fs::copy_file(Shipped("hardware/frameworks/megatron-core.json"), mine,
                fs::copy_options::overwrite_existing);
  CommandResult dry = Loom({"fit", "--runs", runs_file.string(), "--cluster",
                            Shipped("hardware/clusters/dgx-h100.json"), "--framework",
                            mine.string(), "--params", "host", "--dry-run"});
  ASSERT_EQ(dry.code, kExitOk) << dry.err;
  EXPECT_NE(dry.out.find("fitted   host x 1.5"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("leave-one-out 0.0%"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("wrote nothing"), std::string::npos) << dry.out;
  CommandResult wrote = Loom({"fit", "--runs", runs_file.string(), "--cluster",
                              Shipped("hardware/clusters/dgx-h100.json"), "--framework",
                              mine.string(), "--params", "host", "--in-place", "--json"});
  ASSERT_EQ(wrote.code, kExitOk) << wrote.err;
  const nlohmann::json j = nlohmann::json::parse(wrote.out);
  EXPECT_EQ(j["schema"], "loom.fit-runs/2");
  EXPECT_NEAR(j["params"][0]["multiplier"].get<double>(), 1.5, 0.01);
  EXPECT_EQ(j["runs"].size(), 6u);
  EXPECT_TRUE(j["runs"][0]["left_out_s"].is_number());
  const nlohmann::json written = nlohmann::json::parse(ReadText(mine));
  EXPECT_NEAR(written["host"]["scale"].get<double>(), 1.5, 0.01);
  EXPECT_EQ(written["host"]["fitted_on"][0], runs_file.string());
}

// The README's example, as written there.
TEST(FitRuns, TheReadmeExampleGivesTheHostScaleBack) {
  CommandResult r = Loom({"fit", "--runs", Shipped("tests/cli/data/runs_synthetic.json"),
                          "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--dry-run"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("fitted   host x 1.5\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fitted   compute x 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not fitted  inter_node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote nothing (--dry-run)"), std::string::npos) << r.out;
}

TEST(FitRuns, RefusesARunsFileThatCannotIdentifyTheParameter) {
  const fs::path dir = fs::path(::testing::TempDir()) / "fit_runs_none";
  fs::create_directories(dir);
  const fs::path runs_file = dir / "runs.csv";
  std::ofstream(runs_file) << "name,model,micro_batch,global_batch,seq_len,step_time_s\n"
                           << "a," << Shipped("models/gpt3-125m.json") << ",1,8,1024,0.5\n"
                           << "b," << Shipped("models/gpt3-125m.json") << ",8,8,1024,0.1\n";
  CommandResult r = Loom({"fit", "--runs", runs_file.string(), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--framework", "none",
                          "--params", "host", "--dry-run"});
  EXPECT_NE(r.code, kExitOk);
  EXPECT_NE(r.err.find("host: no run depends on it"), std::string::npos) << r.err;
  CommandResult unknown =
      Loom({"fit", "--runs", runs_file.string(), "--cluster",
            Shipped("hardware/clusters/dgx-h100.json"), "--params", "hosts", "--dry-run"});
  EXPECT_NE(unknown.code, kExitOk);
  EXPECT_NE(unknown.err.find("inter_node"), std::string::npos) << unknown.err;
}

// issue 23: the shipped files stay as they are; a fit writes a new file beside its input, named in
// the message, refuses to replace it without --force, and rewrites the input only with --in-place.
TEST(Fit, WritesAFittedCopyBesideTheInputAndRewritesItOnlyInPlace) {
  const fs::path dir = TestDir();
  const std::string gpu = GpuCopy(dir);
  const std::string before = ReadText(gpu);
  const std::string fitted = (dir / "gpu.fitted.json").string();
  CommandResult r = Loom({"fit", kProfile, "--gpu", gpu});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(ReadText(gpu), before);
  EXPECT_NE(r.out.find("calibration written to " + fitted), std::string::npos) << r.out;
  EXPECT_TRUE(LoadGpuSpec(fitted).ok());
  CommandResult again = Loom({"fit", kProfile, "--gpu", gpu});
  EXPECT_EQ(again.code, kExitBadInput);
  EXPECT_NE(again.err.find(fitted + " exists (an earlier fit of " + gpu + "); pass --force"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(Loom({"fit", kProfile, "--gpu", gpu, "--force"}).code, kExitOk);
  EXPECT_EQ(ReadText(gpu), before);
  CommandResult in_place = Loom({"fit", kProfile, "--gpu", gpu, "--in-place", "--json"});
  ASSERT_EQ(in_place.code, kExitOk) << in_place.err;
  EXPECT_EQ(nlohmann::json::parse(in_place.out)["written"], gpu);
  EXPECT_NE(ReadText(gpu), before);
  EXPECT_EQ(Loom({"fit", kProfile, "--gpu", gpu, "--in-place", "--output", fitted}).code,
            kExitUsage);
}

TEST(FitDestination, FittedPathIsBesideTheInput) {
  EXPECT_EQ(FittedPath("hardware/gpus/x.json"), "hardware/gpus/x.fitted.json");
  EXPECT_EQ(FittedPath("profile"), "profile.fitted.json");
}

// The published 2 x 8 H100 all_reduce_perf log (NVIDIA/nccl-tests issue 309) fits as shipped.
TEST(Fit, ShippedNcclTestsLogFitsTheDgxH100) {
  CommandResult r =
      Loom({"fit", Shipped("tests/reference/nccl-tests/all_reduce_perf_2x8_h100_issue309.txt"),
            "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--dry-run", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["written"].is_null());
  EXPECT_NE(
      std::find(j["fitted_keys"].begin(), j["fitted_keys"].end(), "inter_node_extra_latency_us"),
      j["fitted_keys"].end())
      << r.out;
}

// The text table keeps its columns apart where NCCL's choice is long ("NVLSTree/Simple" ran into
// the fitted column as "NVLSTree/Simpleyes"; issue 45, section 3).
TEST(Fit, TheNcclChoiceColumnIsAsWideAsItsLongestChoice) {
  CommandResult r =
      Loom({"fit", Shipped("tests/reference/nccl-tests/all_reduce_perf_2x8_h100_issue309.txt"),
            "--cluster", Shipped("hardware/clusters/dgx-h100.json"), "--dry-run"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("NVLSTree/Simple  yes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Simpleyes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Simpleno"), std::string::npos) << r.out;
}

// A log with enough sizes in its header but fewer in its rows is said to be cut, not to need -e.
TEST(Fit, TooFewSizesNamesTheCauseFromTheHeader) {
  CommandResult r = Loom({"fit", Shipped("tests/cost/data/all_reduce_perf_h100.txt"), "--cluster",
                          Shipped("hardware/clusters/dgx-h100.json"), "--dry-run"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(
      r.err.find(
          "-b 1048576 -e 8589934592 -f 4, which has enough sizes, but the output holds fewer"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("-e 8G"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace loom
