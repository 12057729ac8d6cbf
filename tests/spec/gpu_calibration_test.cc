#include "spec/gpu_calibration.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom {
namespace {

using nlohmann::json;

TEST(ComputeCalibration, ReadsEveryKey) {
  json j = {{"gemm_tile_m", 128},
            {"gemm_tile_n", 256},
            {"gemm_efficiency_bf16", 0.8},
            {"gemm_efficiency_fp8", 0.7},
            {"kernel_overhead_us", 4.5},
            {"attention_efficiency", 0.4},
            {"memory_bandwidth_fraction", 0.9},
            {"memory_bandwidth_fraction_row_reduction", 0.65},
            {"source", "profile x"}};
  JsonReader r(j, "gpu.json", "calibration");
  ComputeCalibration c = ReadComputeCalibration(r, j);
  ASSERT_TRUE(r.Finish(UnknownKeys::kError).ok());
  EXPECT_EQ(c.gemm_tile_m, 128);
  EXPECT_EQ(c.gemm_tile_n, 256);
  EXPECT_EQ(c.GemmEfficiency(Dtype::kBf16), 0.8);
  EXPECT_EQ(c.GemmEfficiency(Dtype::kFp8), 0.7);
  EXPECT_EQ(c.GemmEfficiency(Dtype::kFp16), 0.8);  // borrowed from bf16
  EXPECT_EQ(c.kernel_overhead_us, 4.5);
  EXPECT_EQ(c.attention_efficiency, 0.4);
  EXPECT_EQ(c.memory_bandwidth_fraction, 0.9);
  EXPECT_EQ(c.memory_bandwidth_fraction_row_reduction, 0.65);
  EXPECT_EQ(c.MemoryBandwidthFraction(MemoryAccess::kStreaming), 0.9);
  EXPECT_EQ(c.MemoryBandwidthFraction(MemoryAccess::kRowReduction), 0.65);
  EXPECT_EQ(c.source, "profile x");
}

TEST(ComputeCalibration, ReadsAttentionTilesPerPassAndWantsEveryField) {
  const json pass = {{"matmul_efficiency", 0.75}, {"score_ps", 61.5}, {"masked_score_ps", 95},
                     {"element_ps", 5.9},         {"wave_us", 3.6},   {"latency_us", 24.7}};
  json j = {{"attention_tiles", {{"backward", pass}}}, {"source", "grid.json"}};
  JsonReader r(j, "gpu.json", "calibration");
  ComputeCalibration c = ReadComputeCalibration(r, j);
  ASSERT_TRUE(r.Finish(UnknownKeys::kError).ok());
  EXPECT_FALSE(c.attention_forward_tiles.has_value());
  ASSERT_TRUE(c.attention_backward_tiles.has_value());
  EXPECT_EQ(c.attention_backward_tiles->matmul_efficiency, 0.75);
  EXPECT_EQ(c.attention_backward_tiles->score_ps, 61.5);
  EXPECT_EQ(c.attention_backward_tiles->masked_score_ps, 95);
  EXPECT_EQ(c.attention_backward_tiles->element_ps, 5.9);
  EXPECT_EQ(c.attention_backward_tiles->wave_us, 3.6);
  EXPECT_EQ(c.attention_backward_tiles->latency_us, 24.7);

  json partial = {
      {"attention_tiles",
       {{"forward", {{"matmul_efficiency", 1.2}, {"score_ps", 35}}}, {"sideways", pass}}},
      {"source", "x"}};
  JsonReader bad(partial, "gpu.json", "calibration");
  ReadComputeCalibration(bad, partial);
  const Status s = bad.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("calibration.attention_tiles.forward.matmul_efficiency: is 1.2"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("attention_tiles.forward.wave_us: is missing"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("sideways"), std::string::npos) << s.message();
}

TEST(ComputeCalibration, EfficiencyAboveOneAndMissingSourceAreErrors) {
  json j = {{"gemm_efficiency_bf16", 1.3}, {"kernel_overhead_us", -1}, {"gemm_tile_m", 8}};
  JsonReader r(j, "gpu.json", "calibration");
  ReadComputeCalibration(r, j);
  Status s = r.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("gpu.json: calibration.gemm_efficiency_bf16: is 1.3"), std::string::npos) << m;
  EXPECT_NE(m.find("must be at most 1"), std::string::npos) << m;
  EXPECT_NE(m.find("calibration.kernel_overhead_us: is -1"), std::string::npos) << m;
  EXPECT_NE(m.find("calibration.gemm_tile_m: is 8; it must be between 16 and 1024"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("calibration.source: is missing"), std::string::npos) << m;
}

TEST(ComputeCalibration, ReadsTheGemmModelKeysAndFittedOn) {
  json j = {{"gemm_operand_bandwidth_GBps", 9000},
            {"gemm_epilogue_overlap", true},
            {"fitted_on", {"gemm_cublaslt.csv", "gemm_shapes.csv"}},
            {"source", "tables"}};
  JsonReader r(j, "gpu.json", "calibration");
  ComputeCalibration c = ReadComputeCalibration(r, j);
  ASSERT_TRUE(r.Finish(UnknownKeys::kError).ok());
  EXPECT_EQ(c.gemm_operand_bandwidth_GBps, 9000);
  EXPECT_TRUE(c.gemm_epilogue_overlap);
  EXPECT_EQ(c.fitted_on, (std::vector<std::string>{"gemm_cublaslt.csv", "gemm_shapes.csv"}));
  EXPECT_EQ(c.gemm_tile_m, 0);  // absent: the model chooses the tile per shape
}

TEST(ComputeCalibration, MalformedFittedOnNamesFileAndKey) {
  for (const json& bad :
       {json("gemm_shapes.csv"), json::array(), json({"tests/reference/gemm_shapes.csv"}),
        json({"gemm_shapes"}), json({1})}) {
    json j = {{"fitted_on", bad}, {"source", "tables"}};
    JsonReader r(j, "a100.json", "calibration");
    ReadComputeCalibration(r, j);
    Status s = r.Finish(UnknownKeys::kError);
    ASSERT_FALSE(s.ok()) << bad.dump();
    EXPECT_NE(s.message().find("a100.json: calibration.fitted_on: is "), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("non-empty array of the file names"), std::string::npos)
        << s.message();
  }
}

TEST(ComputeCalibration, NothingMeasuredMeansNoEfficiency) {
  ComputeCalibration c;
  EXPECT_FALSE(c.GemmEfficiency(Dtype::kBf16).has_value());
}

TEST(ComputeCalibration, ReadsSustainedFractionsPerTensorCorePath) {
  json j = {{"sustained_tensor_fraction_bf16", 0.7245}, {"source", "profile.json"}};
  JsonReader r(j, "gpu.json", "calibration");
  ComputeCalibration c = ReadComputeCalibration(r, j);
  ASSERT_TRUE(r.Finish(UnknownKeys::kError).ok());
  EXPECT_EQ(c.SustainedTensorFraction(Dtype::kBf16), 0.7245);
  EXPECT_EQ(c.SustainedTensorFraction(Dtype::kFp16), 0.7245);        // the same tensor-core path
  EXPECT_FALSE(c.SustainedTensorFraction(Dtype::kFp8).has_value());  // another power per FLOP
  EXPECT_FALSE(c.SustainedTensorFraction(Dtype::kTf32).has_value());
  EXPECT_EQ(SustainedTensorFractionKey(Dtype::kFp8), "sustained_tensor_fraction_fp8");

  json bad = {{"sustained_tensor_fraction_fp16", 717}, {"source", "x"}};
  JsonReader rb(bad, "gpu.json", "calibration");
  ReadComputeCalibration(rb, bad);
  const Status s = rb.Finish(UnknownKeys::kError);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu.json: calibration.sustained_tensor_fraction_fp16: is 717"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace loom
