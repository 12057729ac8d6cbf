#include "cost/nccl_tests_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace loom {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(LOOM_SOURCE_DIR) + "/tests/cost/data/" + name;
}

::testing::AssertionResult OutputContains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

void ExpectTiming(const std::optional<NcclTestsTiming>& t, double time_us, double algbw,
                  double busbw) {
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->time_us, time_us);
  EXPECT_DOUBLE_EQ(t->algbw_GBps, algbw);
  EXPECT_DOUBLE_EQ(t->busbw_GBps, busbw);
}

TEST(NcclTestsParser, ReadsAnAllReduceTextRunWithExactNumbers) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("all_reduce_perf_h100.txt"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kAllReduce);
  EXPECT_EQ(run->ranks, 8);
  EXPECT_EQ(run->nodes, 1);
  EXPECT_EQ(run->gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(run->avg_busbw_GBps, 221.177);
  ASSERT_EQ(run->rows.size(), 4u);  // the NCCL INFO line between the rows is skipped
  const NcclTestsRow& first = run->rows[0];
  EXPECT_EQ(first.size_bytes, 1048576);
  EXPECT_EQ(first.count, 262144);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  ExpectTiming(first.out_of_place, 42.10, 24.91, 43.59);
  ExpectTiming(first.in_place, 41.97, 24.98, 43.72);
  EXPECT_EQ(run->rows[3].size_bytes, 8589934592);
  ExpectTiming(run->rows[3].in_place, 31390, 273.65, 478.89);
  EXPECT_EQ(run->rows[2].where, Fixture("all_reduce_perf_h100.txt") + ":21");
}

// NCCL_DEBUG=INFO prints the NVLS setting among NCCL's log lines: a run made with
// NCCL_NVLS_ENABLE=0 is marked, so that the fit costs it without NVLS; any other value is not.
TEST(NcclTestsParser, NcclsLogLineOfNvlsEnableZeroMarksTheRun) {
  const std::string table =
      "# nThread 1 nGpus 8 minBytes 8589934592 maxBytes 8589934592 step: 2(factor) warmup iters: 5 "
      "iters: 20\n"
      "#\n"
      "#                                                              out-of-place                 "
      "      in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)\n"
      "  8589934592    2147483648     float     sum      -1    41100  208.99  365.73      0    "
      "41090  209.05  365.84      0\n";
  const std::string disabled =
      "h200-node:1234:1234 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n";
  Result<NcclTestsRun> off = ParseNcclTestsText(disabled + table, "all_reduce_perf.txt");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_TRUE(off->nvls_disabled);
  ASSERT_EQ(off->rows.size(), 1u);
  Result<NcclTestsRun> on = ParseNcclTestsText(
      "h200-node:1234:1234 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 1.\n" + table,
      "all_reduce_perf.txt");
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_FALSE(on->nvls_disabled);
  Result<NcclTestsRun> plain = ParseNcclTestsText(table, "all_reduce_perf.txt");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_FALSE(plain->nvls_disabled);
}

TEST(NcclTestsParser, ReadsAnOlderFormatWithoutRootAcrossTwoHosts) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("all_gather_perf_2nodes_v2.6.txt"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kAllGather);  // from the file name: the output does not say
  EXPECT_EQ(run->ranks, 16);                   // 16 "Rank" lines, not nThread * nGpus = 8
  EXPECT_EQ(run->nodes, 2);
  EXPECT_EQ(run->gpu_name, "A100-SXM4-80GB");
  ASSERT_EQ(run->rows.size(), 3u);
  EXPECT_EQ(run->rows[0].redop, "none");
  ExpectTiming(run->rows[0].in_place, 1488.7, 22.54, 21.13);
  ExpectTiming(run->rows[2].out_of_place, 1.5e5, 0.89, 0.84);
}

TEST(NcclTestsParser, RankCountFallsBackToThreadsTimesGpus) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("alltoall_perf_timestamps.txt"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kAllToAll);
  EXPECT_EQ(run->ranks, 4);
  EXPECT_EQ(run->nodes, std::nullopt);
  EXPECT_EQ(run->gpu_name, "");
}

TEST(NcclTestsParser, TrailingTimestampColumnsAreIgnored) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("alltoall_perf_timestamps.txt"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->rows.size(), 2u);
  ExpectTiming(run->rows[1].out_of_place, 18.75, 0.22, 0.16);
  ExpectTiming(run->rows[1].in_place, 18.40, 0.22, 0.17);
}

TEST(NcclTestsParser, RowWithBlankOutOfPlaceHasOnlyInPlace) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("sendrecv_perf_inplace_only.txt"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kSendRecv);
  EXPECT_EQ(CollectiveOf(run->test), std::nullopt);
  ASSERT_EQ(run->rows.size(), 2u);
  EXPECT_FALSE(run->rows[0].out_of_place.has_value());
  ExpectTiming(run->rows[0].in_place, 10.50, 99.86, 99.86);
  ExpectTiming(run->rows[1].out_of_place, 16.40, 127.88, 127.88);
}

TEST(NcclTestsParser, ReadsNcclTestsJsonWithExactNumbers) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("reduce_scatter_perf_a100.json"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kReduceScatter);
  EXPECT_EQ(run->ranks, 8);  // one process listing its first device, driving 8 GPUs
  EXPECT_EQ(run->nodes, 1);
  EXPECT_EQ(run->gpu_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(run->avg_busbw_GBps, 98.714833);
  ASSERT_EQ(run->rows.size(), 2u);
  EXPECT_EQ(run->rows[0].size_bytes, 16777216);
  EXPECT_EQ(run->rows[0].count, 524288);
  EXPECT_EQ(run->rows[0].redop, "sum");
  ExpectTiming(run->rows[0].out_of_place, 175.5, 95.596535, 83.646968);
  ExpectTiming(run->rows[1].in_place, 259.875, 129.117557, 112.977862);  // "cpu_time"
  EXPECT_EQ(run->rows[1].where, Fixture("reduce_scatter_perf_a100.json") + ": results[1]");
}

TEST(NcclTestsParser, ReadsABareJsonArrayWithCamelCaseKeys) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("all_reduce_perf_bare_array.json"));
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->test, NcclTest::kAllReduce);
  EXPECT_EQ(run->ranks, std::nullopt);
  ASSERT_EQ(run->rows.size(), 2u);
  ExpectTiming(run->rows[0].out_of_place, 41.5, 25.27, 44.22);
  EXPECT_FALSE(run->rows[0].in_place.has_value());
  ExpectTiming(run->rows[1].in_place, 50.25, 41.73, 73.03);
}

TEST(NcclTestsParser, NonNumberNamesFileLineColumnAndToken) {
  const std::string path = Fixture("malformed_all_reduce_perf_bad_value.txt");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             path + ":19: expected a time in us in column 10, found '12.3x'"));
}

TEST(NcclTestsParser, ShortRowSaysHowManyColumnsWereExpected) {
  const std::string path = Fixture("malformed_all_reduce_perf_short_row.txt");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             path + ":19: expected a data row of 13 columns (size count type "
                                    "redop root time algbw busbw #wrong time algbw busbw "
                                    "#wrong), found 7"));
}

TEST(NcclTestsParser, MissingColumnHeaderIsAnError) {
  const std::string path = Fixture("malformed_all_reduce_perf_no_header.txt");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(), path + ": no column header line"));
  EXPECT_TRUE(OutputContains(run.status().message(), "is this nccl-tests output?"));
}

TEST(NcclTestsParser, UnknownTestAsksForTheBinaryName) {
  const std::string path = Fixture("unnamed_run.txt");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             path + ": cannot tell which nccl-tests binary wrote this"));
  Result<NcclTestsRun> told = ReadNcclTestsFile(path, NcclTest::kAllReduce);
  ASSERT_TRUE(told.ok()) << told.status().message();
  EXPECT_EQ(told->rows.size(), 4u);
}

TEST(NcclTestsParser, StatedTestThatContradictsTheOutputIsAnError) {
  Result<NcclTestsRun> run =
      ReadNcclTestsFile(Fixture("all_reduce_perf_h100.txt"), NcclTest::kAllGather);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             "the output comes from all_reduce_perf, not all_gather_perf"));
}

TEST(NcclTestsParser, JsonResultWithoutSizeNamesItsIndex) {
  const std::string path = Fixture("malformed_reduce_scatter_perf_missing_size.json");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             path + ": results[1].size: expected the size in bytes"));
}

TEST(NcclTestsParser, JsonNanTimeIsRejected) {
  const std::string path = Fixture("malformed_reduce_scatter_perf_nan.json");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(
      OutputContains(run.status().message(),
                     path + ": results[0].in_place.time: expected a finite number, found \"nan\""));
}

TEST(NcclTestsParser, TruncatedJsonReportsTheParserPosition) {
  const std::string path = Fixture("malformed_reduce_scatter_perf_truncated.json");
  Result<NcclTestsRun> run = ReadNcclTestsFile(path);
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(), path + ": not valid JSON: "));
  EXPECT_TRUE(OutputContains(run.status().message(), "line 1, column"));
}

TEST(NcclTestsParser, MissingFileIsNotFound) {
  Result<NcclTestsRun> run = ReadNcclTestsFile(Fixture("nope.txt"));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kNotFound);
  EXPECT_TRUE(OutputContains(run.status().message(), "nope.txt: no such file"));
}

TEST(NcclTestsParser, EmptyTextHasNoHeader) {
  Result<NcclTestsRun> run = ParseNcclTestsText("", "all_reduce_perf.txt");
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(), "all_reduce_perf.txt: no column header line"));
}

TEST(NcclTestsParser, JsonOfTheWrongShapeSaysWhatWasExpected) {
  Result<NcclTestsRun> run = ParseNcclTestsJson("{\"version\": 2}", "all_reduce_perf.json");
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(run.status().message(),
                             "all_reduce_perf.json: expected an object with a \"results\" array"));
}

// The rows' fields are found by the header's positions: a header in another order than
// nccl-tests' own once sent the in-place-only row reader past the row's end.
TEST(NcclTestsParser, AHeaderInAnotherOrderIsRefusedNamingTheLine) {
  const std::string table =
      "#       size         count      type   redop    root   #wrong  busbw   algbw    time  "
      "#wrong  busbw   algbw    time\n"
      "  1048576    262144     float     sum      -1    42.10  24.91  43.59      0    41.97  24.98 "
      " 43.72      0\n"
      "  1048576    262144     float     sum      -1    41.97  24.98  43.72      0\n";
  Result<NcclTestsRun> run = ParseNcclTestsText(table, "all_reduce_perf.txt");
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(OutputContains(
      run.status().message(),
      "all_reduce_perf.txt:1: the column header (size count type redop root "
      "#wrong busbw algbw time #wrong busbw algbw time) is not in nccl-tests' order"));
}

TEST(NcclTestsParser, NumbersOutOfRangeAndDeepNestingInJsonAreErrors) {
  Result<NcclTestsRun> huge =
      ParseNcclTestsJson("{\"results\": [{\"size\": 1e999}]}", "r.json", NcclTest::kAllReduce);
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(
      OutputContains(huge.status().message(), "r.json: not valid JSON for loom: number overflow"));
  Result<NcclTestsRun> deep = ParseNcclTestsJson(
      std::string(100000, '[') + std::string(100000, ']'), "d.json", NcclTest::kAllReduce);
  ASSERT_FALSE(deep.ok());
  EXPECT_TRUE(OutputContains(deep.status().message(),
                             "d.json: arrays and objects nest deeper than 64 levels"));
}

}  // namespace
}  // namespace loom
