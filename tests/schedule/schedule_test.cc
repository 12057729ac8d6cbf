#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom {
namespace {

// Succeeds when |text| contains |piece|; the failure shows both.
::testing::AssertionResult Contains(const std::string& text, const std::string& piece) {
  if (text.find(piece) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << piece << "\"";
}

PipelineSchedule MustBuild(ScheduleKind kind, int32_t stages, int32_t micro_batches,
                           int32_t chunks) {
  Result<PipelineSchedule> schedule = BuildSchedule(kind, stages, micro_batches, chunks);
  EXPECT_TRUE(schedule.ok()) << schedule.status().ToString();
  return schedule.ok() ? *schedule : PipelineSchedule{};
}

PipelineItem F(int32_t mb, int32_t chunk = 0) { return {Pass::kF, mb, chunk}; }
PipelineItem B(int32_t mb, int32_t chunk = 0) { return {Pass::kB, mb, chunk}; }
PipelineItem W(int32_t mb, int32_t chunk = 0) { return {Pass::kW, mb, chunk}; }
PipelineItem BW(int32_t mb, int32_t chunk = 0) { return {Pass::kBW, mb, chunk}; }

// Returns the error message of BuildSchedule, or "" when it succeeds.
std::string ErrorOf(ScheduleKind kind, int32_t stages, int32_t micro_batches, int32_t chunks) {
  Result<PipelineSchedule> schedule = BuildSchedule(kind, stages, micro_batches, chunks);
  if (schedule.ok()) return "";
  EXPECT_EQ(schedule.status().code(), Status::Code::kInvalidArgument);
  return schedule.status().message();
}

TEST(ScheduleNames, EveryKindRoundTripsThroughTheNameUsersType) {
  const ScheduleKind kinds[] = {ScheduleKind::kGpipe,       ScheduleKind::k1F1B,
                                ScheduleKind::kInterleaved, ScheduleKind::kZbH1,
                                ScheduleKind::kZbV,         ScheduleKind::kDualPipeV};
  for (ScheduleKind kind : kinds) {
    const std::optional<ScheduleKind> parsed = kScheduleNames.Parse(kScheduleNames.Name(kind));
    ASSERT_TRUE(parsed.has_value()) << kScheduleNames.Name(kind);
    EXPECT_EQ(*parsed, kind) << kScheduleNames.Name(kind);
  }
  EXPECT_EQ(kScheduleNames.Choices(), "gpipe|1f1b|interleaved|zb-h1|zb-v|dualpipev");
  EXPECT_FALSE(kScheduleNames.Parse("1F1B").has_value());
}

TEST(VirtualStage, InterleavedPlacesChunkAfterChunkAcrossAllStages) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kInterleaved, 4, 8, 2);
  EXPECT_EQ(s.VirtualStages(), 8);
  EXPECT_EQ(s.VirtualStage(0, 0), 0);
  EXPECT_EQ(s.VirtualStage(3, 0), 3);
  EXPECT_EQ(s.VirtualStage(0, 1), 4);
  EXPECT_EQ(s.VirtualStage(3, 1), 7);
}

TEST(VirtualStage, VShapePutsFirstAndLastPieceOnStageZero) {
  for (ScheduleKind kind : {ScheduleKind::kZbV, ScheduleKind::kDualPipeV}) {
    const PipelineSchedule s = MustBuild(kind, 4, 8, 2);
    EXPECT_EQ(s.VirtualStage(0, 0), 0);
    EXPECT_EQ(s.VirtualStage(0, 1), 7);
    EXPECT_EQ(s.VirtualStage(3, 0), 3);
    EXPECT_EQ(s.VirtualStage(3, 1), 4);
  }
}

TEST(VirtualStage, SingleChunkSchedulesUseTheStageIndex) {
  const PipelineSchedule s = MustBuild(ScheduleKind::k1F1B, 4, 8, 1);
  for (int32_t stage = 0; stage < 4; ++stage) EXPECT_EQ(s.VirtualStage(stage, 0), stage);
}

TEST(VirtualStage, PlaceInvertsVirtualStageForEveryLayout) {
  const PipelineSchedule layouts[] = {MustBuild(ScheduleKind::kGpipe, 3, 3, 1),
                                      MustBuild(ScheduleKind::kInterleaved, 3, 6, 4),
                                      MustBuild(ScheduleKind::kZbV, 5, 4, 2)};
  for (const PipelineSchedule& s : layouts) {
    for (int32_t stage = 0; stage < s.stages; ++stage) {
      for (int32_t chunk = 0; chunk < s.chunks; ++chunk) {
        EXPECT_EQ(s.Place(s.VirtualStage(stage, chunk)), (StageChunk{stage, chunk}));
      }
    }
  }
}

TEST(BuildSchedule, RecordsItsArguments) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kInterleaved, 4, 12, 3);
  EXPECT_EQ(s.kind, ScheduleKind::kInterleaved);
  EXPECT_EQ(s.stages, 4);
  EXPECT_EQ(s.micro_batches, 12);
  EXPECT_EQ(s.chunks, 3);
  EXPECT_EQ(s.order.size(), 4u);
}

TEST(Gpipe, RunsEveryForwardThenEveryBackward) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kGpipe, 2, 3, 1);
  const std::vector<PipelineItem> expected = {F(0), F(1), F(2), BW(0), BW(1), BW(2)};
  EXPECT_EQ(s.order[0], expected);
  EXPECT_EQ(s.order[1], expected);
}

TEST(OneFOneB, WarmsUpWithOneForwardPerStageBelow) {
  const PipelineSchedule s = MustBuild(ScheduleKind::k1F1B, 4, 5, 1);
  EXPECT_EQ(s.order[1], (std::vector<PipelineItem>{F(0), F(1), F(2), BW(0), F(3), BW(1), F(4),
                                                   BW(2), BW(3), BW(4)}));
  EXPECT_EQ(s.order[3], (std::vector<PipelineItem>{F(0), BW(0), F(1), BW(1), F(2), BW(2), F(3),
                                                   BW(3), F(4), BW(4)}));
}

TEST(OneFOneB, WithFewerMicroBatchesThanStagesWarmsUpWithAllOfThem) {
  const PipelineSchedule s = MustBuild(ScheduleKind::k1F1B, 4, 2, 1);
  EXPECT_EQ(s.order[0], (std::vector<PipelineItem>{F(0), F(1), BW(0), BW(1)}));
}

// Megatron-LM's order for pp = 2, vpp = 2, 4 micro-batches on stage 0: a warm-up of
// (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards, micro-batches in groups of 2 per chunk.
TEST(Interleaved, FollowsMegatronOrderOnFirstStage) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kInterleaved, 2, 4, 2);
  EXPECT_EQ(s.order[0],
            (std::vector<PipelineItem>{F(0, 0), F(1, 0), F(0, 1), F(1, 1),         // warm-up
                                       F(2, 0), BW(0, 1), F(3, 0), BW(1, 1),       // steady
                                       F(2, 1), BW(0, 0), F(3, 1), BW(1, 0),       //
                                       BW(2, 1), BW(3, 1), BW(2, 0), BW(3, 0)}));  // cool-down
}

TEST(ZbH1, LastStageDefersItsWeightGradientsByOneMicroBatchPerStageAbove) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kZbH1, 2, 3, 1);
  EXPECT_EQ(s.order[0],
            (std::vector<PipelineItem>{F(0), F(1), B(0), W(0), F(2), B(1), W(1), B(2), W(2)}));
  EXPECT_EQ(s.order[1],
            (std::vector<PipelineItem>{F(0), B(0), F(1), B(1), W(0), F(2), B(2), W(1), W(2)}));
}

TEST(DualPipeV, MarksOnlyForwardsFollowedByABackwardOfTheOtherChunkAsOverlapped) {
  const int32_t p = 4;
  const int32_t m = 10;
  const PipelineSchedule s = MustBuild(ScheduleKind::kDualPipeV, p, m, 2);
  for (int32_t stage = 0; stage < p; ++stage) {
    const std::vector<PipelineItem>& list = s.order[stage];
    int32_t pairs = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].overlaps_next) continue;
      ++pairs;
      ASSERT_LT(i + 1, list.size());
      EXPECT_EQ(list[i].pass, Pass::kF);
      EXPECT_EQ(list[i + 1].pass, Pass::kBW);
      EXPECT_NE(list[i].chunk, list[i + 1].chunk);
    }
    // Two pairs per steady-state step, one per drain step; the last stage's first pair is apart.
    const int32_t below = p - stage - 1;
    const int32_t expected = 2 * (m - 2 * p + stage + 1) + below - (stage == p - 1 ? 1 : 0);
    EXPECT_EQ(pairs, expected) << "stage " << stage;
  }
}

TEST(DualPipeV, SplitsOffAsManyWeightGradientsAsThereAreStagesDownToIt) {
  const PipelineSchedule s = MustBuild(ScheduleKind::kDualPipeV, 4, 8, 2);
  for (int32_t stage = 0; stage < 4; ++stage) {
    int32_t weights = 0;
    for (const PipelineItem& item : s.order[stage]) weights += item.pass == Pass::kW;
    EXPECT_EQ(weights, 2 * 4 - stage - 1) << "stage " << stage;
  }
}

TEST(BuildSchedule, NoScheduleOtherThanDualPipeVMarksOverlappedPairs) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    for (const auto& list : MustBuild(kind, 4, 8, 1).order) {
      for (const PipelineItem& item : list) EXPECT_FALSE(item.overlaps_next);
    }
  }
  for (const auto& list : MustBuild(ScheduleKind::kZbV, 4, 8, 2).order) {
    for (const PipelineItem& item : list) EXPECT_FALSE(item.overlaps_next);
  }
}

TEST(BuildScheduleErrors, ZeroStagesNamesPpAndTheFix) {
  const std::string message = ErrorOf(ScheduleKind::k1F1B, 0, 8, 1);
  EXPECT_TRUE(Contains(message, "--pp 0"));
  EXPECT_TRUE(Contains(message, "use --pp 1 or more"));
}

TEST(BuildScheduleErrors, ZeroMicroBatchesNamesTheBatchFlagsAndTheFix) {
  const std::string message = ErrorOf(ScheduleKind::kGpipe, 4, 0, 1);
  EXPECT_TRUE(Contains(message, "micro-batches (0)"));
  EXPECT_TRUE(Contains(message, "use 1 or more micro-batches"));
  EXPECT_TRUE(Contains(message, "--global-batch"));
}

TEST(BuildScheduleErrors, SeveralChunksWithSingleChunkScheduleNamesVpp) {
  for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::k1F1B, ScheduleKind::kZbH1}) {
    const std::string message = ErrorOf(kind, 4, 8, 2);
    EXPECT_TRUE(
        Contains(message, "--vpp 2 with --schedule " + std::string(kScheduleNames.Name(kind))));
    EXPECT_TRUE(Contains(message, "use --vpp 1"));
  }
  EXPECT_TRUE(Contains(ErrorOf(ScheduleKind::k1F1B, 4, 8, 0), "--vpp 0"));
}

TEST(BuildScheduleErrors, InterleavedWithOneChunkAsksForVppTwo) {
  const std::string message = ErrorOf(ScheduleKind::kInterleaved, 4, 8, 1);
  EXPECT_TRUE(Contains(message, "--vpp 1 with --schedule interleaved"));
  EXPECT_TRUE(Contains(message, "use --vpp 2 or more, or --schedule 1f1b"));
}

TEST(BuildScheduleErrors, InterleavedWithMicroBatchesMegatronCannotGroupNamesTheGroupFlag) {
  const std::string message = ErrorOf(ScheduleKind::kInterleaved, 4, 6, 2);
  EXPECT_TRUE(Contains(message, "--schedule interleaved with --pp 4"));
  EXPECT_TRUE(Contains(message, "6 micro-batches in groups of 4"));
  EXPECT_TRUE(Contains(message, "--microbatch-group"));
  EXPECT_TRUE(
      Contains(ErrorOf(ScheduleKind::kInterleaved, 4, 3, 2), "3 micro-batches in groups of 4"));
}

TEST(BuildScheduleErrors, VShapedWithOtherThanTwoChunksAsksForVppTwo) {
  for (ScheduleKind kind : {ScheduleKind::kZbV, ScheduleKind::kDualPipeV}) {
    for (int32_t chunks : {1, 3}) {
      const std::string message = ErrorOf(kind, 4, 8, chunks);
      EXPECT_TRUE(Contains(message, "--vpp " + std::to_string(chunks) + " with --schedule " +
                                        std::string(kScheduleNames.Name(kind))));
      EXPECT_TRUE(Contains(message, "use --vpp 2"));
    }
  }
}

TEST(BuildScheduleErrors, DualPipeVWithFewerThanTwoMicroBatchesPerStageNamesBothFixes) {
  const std::string message = ErrorOf(ScheduleKind::kDualPipeV, 4, 7, 2);
  EXPECT_TRUE(Contains(message, "--schedule dualpipev with --pp 4"));
  EXPECT_TRUE(Contains(message, "use at least 8 micro-batches"));
  EXPECT_TRUE(Contains(message, "or --pp 3 or less"));
  EXPECT_EQ(ErrorOf(ScheduleKind::kDualPipeV, 4, 8, 2), "");
}

TEST(BuildScheduleErrors, HugeStepIsRefusedInsteadOfAllocated) {
  const std::string message = ErrorOf(ScheduleKind::k1F1B, 1 << 20, 1 << 20, 1);
  EXPECT_TRUE(Contains(message, "use fewer micro-batches or a smaller --pp"));
}

}  // namespace
}  // namespace loom
