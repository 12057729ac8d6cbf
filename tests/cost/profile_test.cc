#include "cost/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace loom {
namespace {

::testing::AssertionResult MessageContains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

// A valid profile with one sample of each kernel class; tests break one thing at a time.
nlohmann::json ValidProfile() {
  return nlohmann::json::parse(R"({
    "schema": "loom.profile/1",
    "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132},
    "driver_version": "550.54.15",
    "cuda_version": "12.4",
    "library_versions": {"cublaslt": "12.4.5", "nccl": "2.21.5"},
    "date": "2025-03-01",
    "samples": [
      {"kernel": "gemm", "m": 4096, "n": 4096, "k": 8192, "batch": 1, "dtype": "bf16",
       "median_us": 410.5, "p10_us": 408.0, "p90_us": 415.25, "repeats": 50, "label": "cublasLt"},
      {"kernel": "attention", "batch": 2, "heads": 32, "kv_heads": 8, "seq_q": 4096, "seq_kv": 4096,
       "head_dim_qk": 128, "head_dim_v": 128, "causal": true, "backward": false, "dtype": "bf16",
       "median_us": 900, "repeats": 20},
      {"kernel": "memory", "bytes_read": 268435456, "bytes_written": 0, "median_us": 120.5, "repeats": 100}
    ]
  })");
}

std::string ErrorOf(const nlohmann::json& j) {
  Result<Profile> p = ParseProfile(j, "p.json");
  return p.ok() ? "(parsed)" : p.status().message();
}

TEST(ParseProfile, ReadsHeaderAndEveryKernelClass) {
  Result<Profile> p = ParseProfile(ValidProfile(), "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p->device.sm_count, 132);
  EXPECT_EQ(p->library_versions.size(), 2u);
  EXPECT_EQ(p->library_versions[0].first, "cublaslt");
  ASSERT_EQ(p->samples.size(), 3u);
  const GemmShape& g = std::get<GemmShape>(p->samples[0].shape);
  EXPECT_EQ(g.k, 8192);
  EXPECT_EQ(p->samples[0].p90_us, 415.25);
  EXPECT_EQ(p->samples[0].label, "cublasLt");
  EXPECT_EQ(p->samples[0].where, "p.json: samples[0]");
  const AttentionShape& a = std::get<AttentionShape>(p->samples[1].shape);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_TRUE(a.causal);
  EXPECT_FALSE(p->samples[1].p10_us.has_value());
  EXPECT_EQ(p->samples[2].Kind(), OpKind::kMemoryBound);
  EXPECT_EQ(std::get<MemoryShape>(p->samples[2].shape).bytes_read, 268435456);
}

// A memory-bound sample says how it walks its bytes; one without "access" streams, except the
// probe's RMSNorm in profiles written before the key (the committed 2026-11-27 run), which its
// label names. The key is written back only for row reductions, and an unknown access is refused.
TEST(ParseProfile, MemorySamplesCarryTheirAccess) {
  nlohmann::json j = ValidProfile();
  const nlohmann::json memory = j["samples"][2];
  j["samples"].push_back(memory);
  j["samples"][3]["label"] = "rmsnorm";
  j["samples"].push_back(memory);
  j["samples"][4]["access"] = "row_reduction";
  j["samples"].push_back(memory);
  j["samples"][5]["label"] = "rmsnorm";
  j["samples"][5]["access"] = "streaming";
  Result<Profile> p = ParseProfile(j, "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto access = [&](size_t i) { return std::get<MemoryShape>(p->samples[i].shape).access; };
  EXPECT_EQ(access(2), MemoryAccess::kStreaming);
  EXPECT_EQ(access(3), MemoryAccess::kRowReduction);
  EXPECT_EQ(access(4), MemoryAccess::kRowReduction);
  EXPECT_EQ(access(5), MemoryAccess::kStreaming);
  EXPECT_FALSE(ProfileSampleJson(p->samples[2]).contains("access"));
  EXPECT_EQ(ProfileSampleJson(p->samples[4])["access"], "row_reduction");
  j["samples"][4]["access"] = "rows";
  EXPECT_TRUE(MessageContains(ErrorOf(j), "samples[4]"));
  EXPECT_TRUE(MessageContains(ErrorOf(j), "row_reduction"));
}

// Every attention sample loom probe writes is cuDNN's fused attention: a sample without "family"
// (every profile before the key) is cuDNN's, one that names FlashAttention-2 is its, the key is
// written back, and an unknown family is refused.
TEST(ParseProfile, AttentionSamplesCarryTheirFamily) {
  nlohmann::json j = ValidProfile();
  j["samples"].push_back(j["samples"][1]);
  j["samples"][3]["family"] = "flash2";
  Result<Profile> p = ParseProfile(j, "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(std::get<AttentionShape>(p->samples[1].shape).family, AttentionFamily::kCudnn);
  EXPECT_EQ(std::get<AttentionShape>(p->samples[3].shape).family,
            AttentionFamily::kFlashAttention2);
  EXPECT_EQ(ProfileSampleJson(p->samples[1])["family"], "cudnn");
  j["samples"][3]["family"] = "flash3";
  EXPECT_TRUE(MessageContains(ErrorOf(j), "samples[3]"));
  EXPECT_TRUE(MessageContains(ErrorOf(j), "flash2"));
}

TEST(ParseProfile, MissingKeyNamesTheSampleAndTheFix) {
  nlohmann::json j = ValidProfile();
  j["samples"][1].erase("seq_kv");
  EXPECT_TRUE(MessageContains(ErrorOf(j),
                              "p.json: samples[1].seq_kv: is missing; add \"seq_kv\": <integer>"));
}

TEST(ParseProfile, WrongTypeNamesTheKey) {
  nlohmann::json j = ValidProfile();
  j["samples"][0]["m"] = "4096";
  j["samples"][2]["median_us"] = -3;
  const std::string m = ErrorOf(j);
  EXPECT_TRUE(MessageContains(m, "p.json: samples[0].m: must be an integer, got string \"4096\""));
  EXPECT_TRUE(
      MessageContains(m, "p.json: samples[2].median_us: is -3; it must be a finite number >= 0"));
}

TEST(ParseProfile, UnknownKernelClassSuggestsTheClosest) {
  nlohmann::json j = ValidProfile();
  j["samples"][1]["kernel"] = "atention";
  EXPECT_TRUE(MessageContains(
      ErrorOf(j),
      "p.json: samples[1].kernel: is \"atention\"; did you mean \"attention\"? it must "
      "be one of \"gemm\", \"attention\", \"memory\""));
  j["samples"][1]["kernel"] = "collective";
  EXPECT_TRUE(
      MessageContains(ErrorOf(j), "samples[1].kernel: is \"collective\"; it must be one of"));
}

TEST(ParseProfile, MisspelledKeyGetsADidYouMean) {
  nlohmann::json j = ValidProfile();
  j["samples"][0].erase("repeats");
  j["samples"][0]["repeat"] = 50;
  j["drivr_version"] = "1";
  const std::string m = ErrorOf(j);
  EXPECT_TRUE(MessageContains(
      m, "p.json: samples[0].repeat: is not a known key; did you mean \"repeats\"?"));
  EXPECT_TRUE(MessageContains(
      m, "p.json: drivr_version: is not a known key; did you mean \"driver_version\"?"));
}

TEST(ParseProfile, AKeyOfAnotherKernelClassIsUnknown) {
  nlohmann::json j = ValidProfile();
  j["samples"][2]["dtype"] = "bf16";
  EXPECT_TRUE(
      MessageContains(ErrorOf(j), "p.json: samples[2].dtype: is not a known key; remove it"));
}

TEST(ParseProfile, ReportsEveryBrokenSampleAtOnce) {
  nlohmann::json j = ValidProfile();
  j["samples"][0]["dtype"] = "bf61";
  j["samples"][1]["heads"] = 30;
  const std::string m = ErrorOf(j);
  EXPECT_TRUE(MessageContains(m, "samples[0].dtype: is \"bf61\"; did you mean \"bf16\"?"));
  EXPECT_TRUE(MessageContains(m, "samples[1].heads: (30) is not a multiple of kv_heads (8)"));
}

TEST(ParseProfile, PercentilesComeInPairsAroundTheMedian) {
  nlohmann::json j = ValidProfile();
  j["samples"][0].erase("p90_us");
  EXPECT_TRUE(MessageContains(ErrorOf(j),
                              "samples[0].p90_us: is missing; give p10_us and p90_us together"));
  j = ValidProfile();
  j["samples"][0]["p10_us"] = 411;
  EXPECT_TRUE(
      MessageContains(ErrorOf(j), "samples[0].median_us: is not between p10_us and p90_us"));
}

TEST(ParseProfile, HeaderErrors) {
  nlohmann::json j = ValidProfile();
  j["schema"] = "loom.gpu/1";
  j["date"] = "March 2025";
  j["library_versions"]["nccl"] = 22105;
  j["samples"] = nlohmann::json::object();
  j["device"].erase("name");
  const std::string m = ErrorOf(j);
  EXPECT_TRUE(
      MessageContains(m, "p.json: schema: is \"loom.gpu/1\" but this file is read as a profile"));
  EXPECT_TRUE(MessageContains(m, "p.json: date: is \"March 2025\"; write an ISO 8601 date"));
  EXPECT_TRUE(
      MessageContains(m, "p.json: library_versions.nccl: must be a version string, got number"));
  EXPECT_TRUE(
      MessageContains(m, "p.json: samples: must be an array of sample objects, got object"));
  EXPECT_TRUE(MessageContains(m, "p.json: device.name: is missing"));
}

TEST(ParseProfile, DateMayCarryATime) {
  nlohmann::json j = ValidProfile();
  j["date"] = "2025-03-01T10:00:00Z";
  EXPECT_EQ(ErrorOf(j), "(parsed)");
  j["date"] = "2025-13-01";
  EXPECT_TRUE(MessageContains(ErrorOf(j), "date: is \"2025-13-01\""));
}

TEST(ReadProfile, MissingFileNamesIt) {
  Result<Profile> p = ReadProfile("no/such/profile.json");
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(MessageContains(p.status().message(), "no/such/profile.json: no such file"));
}

TEST(ProfileWriter, FileIsAValidProfileAfterEveryAppend) {
  const std::string path = ::testing::TempDir() + "profile_writer_test.json";
  Result<Profile> original = ParseProfile(ValidProfile(), path);
  ASSERT_TRUE(original.ok());
  Profile header = *original;
  header.samples.clear();
  ProfileWriter writer;
  ASSERT_TRUE(writer.Open(path, header).ok());
  for (size_t n = 0; n <= original->samples.size(); ++n) {
    Result<Profile> read = ReadProfile(path);
    ASSERT_TRUE(read.ok()) << "after " << n << " samples: " << read.status().message();
    ASSERT_EQ(read->samples.size(), n);
    if (n < original->samples.size()) {
      ASSERT_TRUE(writer.Append(original->samples[n]).ok());
    }
  }
  Result<Profile> back = ReadProfile(path);
  ASSERT_TRUE(back.ok());
  for (size_t i = 0; i < back->samples.size(); ++i) {
    EXPECT_EQ(ProfileSampleJson(back->samples[i]), ProfileSampleJson(original->samples[i])) << i;
  }
  EXPECT_EQ(ProfileJson(*back), ProfileJson(*original));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(
      MessageContains(text.str(), "  \"samples\": [\n    {\"kernel\":\"gemm\",\"m\":4096,"));
  EXPECT_TRUE(MessageContains(text.str(), "\"repeats\":100}\n  ],\n  \"host_samples\": [],\n"));
}

TEST(ProfileWriter, UnwritableFolderIsAnError) {
  ProfileWriter writer;
  Status s = writer.Open("/no/such/folder/p.json", Profile{});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(MessageContains(s.message(), "/no/such/folder/p.json: cannot write"));
}

TEST(DeviceMatchesGpu, IgnoresVendorPrefixFileNoteAndCase) {
  EXPECT_TRUE(DeviceMatchesGpu("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3 (SXM5)"));
  EXPECT_TRUE(DeviceMatchesGpu("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"));
  EXPECT_TRUE(DeviceMatchesGpu("NVIDIA H200", "NVIDIA H200 (SXM, 141GB HBM3e)"));
  EXPECT_FALSE(DeviceMatchesGpu("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"));
  EXPECT_FALSE(DeviceMatchesGpu("NVIDIA H100 80GB HBM3 (SXM5)", "NVIDIA H100 80GB HBM3"));
}

TEST(CheckProfiledGpu, NamesBothFilesOnAMismatch) {
  Result<Profile> p = ParseProfile(ValidProfile(), "p.json");
  ASSERT_TRUE(p.ok());
  GpuSpec gpu;
  gpu.name = "NVIDIA H100 80GB HBM3 (SXM5)";
  gpu.file = "h100.json";
  gpu.sm_count = 132;
  EXPECT_TRUE(CheckProfiledGpu(*p, gpu).ok());
  gpu.sm_count = 114;
  EXPECT_TRUE(MessageContains(CheckProfiledGpu(*p, gpu).message(),
                              "p.json: device.sm_count is 132 but h100.json has "
                              "sm_count 114"));
  gpu.name = "NVIDIA A100-SXM4-80GB";
  EXPECT_TRUE(
      MessageContains(CheckProfiledGpu(*p, gpu).message(),
                      "p.json: device.name \"NVIDIA H100 80GB HBM3\" is not the GPU of h100.json "
                      "(\"NVIDIA A100-SXM4-80GB\")"));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// The entries schema 2 adds: hosts, host samples, collectives and failures.
nlohmann::json ProfileV2() {
  nlohmann::json j = ValidProfile();
  j["schema"] = "loom.profile/2";
  j["device"]["l2_bytes"] = 52428800;
  j["device"]["sm_clock_mhz"] = 1980;
  j["hosts"] = {"n0", "n0"};
  j["host_samples"] = nlohmann::json::parse(R"([
    {"measure": "launch", "bytes": 0, "median_us": 2.4, "repeats": 20},
    {"measure": "h2d", "bytes": 67108864, "median_us": 1310, "p10_us": 1300, "p90_us": 1330, "repeats": 20}])");
  j["collectives"] = nlohmann::json::parse(R"([
    {"collective": "all_reduce", "group": "world", "ranks": 2, "nodes": 1, "size_bytes": 1048576, "count": 262144,
     "type": "float", "redop": "sum", "out_of_place": {"time_us": 20.5, "algbw_GBps": 51.15, "busbw_GBps": 51.15},
     "in_place": {"time_us": 20.1, "algbw_GBps": 52.17, "busbw_GBps": 52.17}, "repeats": 20}])");
  j["failures"] = nlohmann::json::parse(
      R"([{"point": "gemm 16x16x16 fp8 [cublasLt]", "error": "unimplemented: x"}])");
  return j;
}

TEST(ParseProfile, SchemaTwoReadsHostSamplesCollectivesAndFailures) {
  Result<Profile> p = ParseProfile(ProfileV2(), "p.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->device.l2_bytes, 52428800);
  EXPECT_EQ(p->hosts.size(), 2u);
  ASSERT_EQ(p->host_samples.size(), 2u);
  EXPECT_EQ(p->host_samples[1].measure, HostMeasure::kHostToDevice);
  EXPECT_EQ(p->host_samples[1].p90_us, 1330);
  ASSERT_EQ(p->collectives.size(), 1u);
  EXPECT_EQ(p->collectives[0].in_place.busbw_GBps, 52.17);
  EXPECT_EQ(p->collectives[0].where, "p.json: collectives[0]");
  EXPECT_EQ(p->failures[0].point, "gemm 16x16x16 fp8 [cublasLt]");
  // Written and read back unchanged.
  Result<Profile> back = ParseProfile(nlohmann::json::parse(ProfileText(*p)), "p.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ProfileJson(*back), ProfileJson(*p));
}

TEST(ParseProfile, SchemaTwoEntriesNameTheirErrors) {
  nlohmann::json j = ProfileV2();
  j["collectives"][0]["collective"] = "allreduce";
  j["collectives"][0]["nodes"] = 3;
  j["host_samples"][0]["bytes"] = 5;
  j["collectives"][0]["in_place"].erase("busbw_GBps");
  const std::string e = ErrorOf(j);
  EXPECT_TRUE(MessageContains(
      e, "p.json: collectives[0].collective: is \"allreduce\"; did you mean \"all_reduce\"?"));
  EXPECT_TRUE(MessageContains(e, "collectives[0].nodes: is more than ranks"));
  EXPECT_TRUE(MessageContains(e, "host_samples[0].bytes: must be 0 for a launch"));
  EXPECT_TRUE(MessageContains(e, "collectives[0].in_place.busbw_GBps: is missing"));
  j = ProfileV2();
  j["schema"] = "loom.profile/3";
  EXPECT_TRUE(MessageContains(ErrorOf(j), "schema: is \"loom.profile/3\""));
}

TEST(RecordedPointKeys, NameEveryEntryAsTheProbePlansIt) {
  Result<Profile> p = ParseProfile(ProfileV2(), "p.json");
  ASSERT_TRUE(p.ok());
  const std::vector<std::string> keys = RecordedPointKeys(*p);
  ASSERT_EQ(keys.size(), 7u);
  EXPECT_EQ(keys[0], "gemm 4096x4096x8192 bf16 [cublasLt]");
  EXPECT_EQ(keys[2], "memory 256 MiB read, 0 B written");
  EXPECT_EQ(keys[3], "launch");
  EXPECT_EQ(keys[4], "h2d 64 MiB");
  EXPECT_EQ(keys[5], "all_reduce world 2 ranks 1 MiB");
  EXPECT_EQ(keys[6], "gemm 16x16x16 fp8 [cublasLt]");
}

TEST(ProfileWriter, AKilledWriterLeavesTheLastCompleteFile) {
  const std::string path = ::testing::TempDir() + "profile_writer_atomic.json";
  Result<Profile> p = ParseProfile(ProfileV2(), "p.json");
  ASSERT_TRUE(p.ok());
  ProfileWriter writer;
  ASSERT_TRUE(writer.Open(path, *p).ok());
  ASSERT_TRUE(writer.Append(ProbeFailure{"launch", "internal: x"}).ok());
  // A stale temporary from a process killed mid-write does not disturb the next write or the file.
  std::ofstream(path + ".loom.tmp") << "{\"schema\": \"loom.pro";
  Result<Profile> read = ReadProfile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->failures.size(), 2u);
  ASSERT_TRUE(writer.Append(p->collectives[0]).ok());
  read = ReadProfile(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->collectives.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(path + ".loom.tmp"));
}

}  // namespace
}  // namespace loom
