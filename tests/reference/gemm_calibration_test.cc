// The GEMM calibration shipped in hardware/gpus/ must be what FitComputeJointly derives from the
// public cuBLAS(Lt) measurements (tests/reference/gemm_cublaslt.csv and gemm_shapes.csv), so that
// no number in a GPU file is typed in by hand; and the fitted model must reproduce every table
// within its stated error, in-sample and with the table (or the source) left out of the fit.

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cost/compute_model.h"
#include "cost/gemm_tiles.h"
#include "reference/attention_tables.h"
#include "reference/gemm_reference.h"
#include "spec/cluster.h"

namespace loom {
namespace {

std::string Dir() { return std::string(LOOM_SOURCE_DIR) + "/tests/reference/"; }

std::vector<GemmReferenceRow> AllRows() {
  Result<std::vector<GemmReferenceRow>> rows = LoadGemmReferenceRows(Dir());
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  return rows.ok() ? *rows : std::vector<GemmReferenceRow>();
}

GpuSpec LoadGpu(const std::string& gpu) {
  Result<GpuSpec> spec =
      LoadGpuSpec(std::string(LOOM_SOURCE_DIR) + "/hardware/gpus/" + gpu + ".json");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? *spec : GpuSpec();
}

// The rows |gpu|'s file is fitted on, less those for which |left_out| is true.
template <typename Pred>
std::vector<GemmReferenceRow> RowsFor(const std::vector<GemmReferenceRow>& all,
                                      const std::string& gpu, Pred left_out) {
  std::vector<GemmReferenceRow> rows;
  for (const GemmReferenceRow& r : all) {
    if (GemmFittedGpus(gpu).count(r.gpu) && !left_out(r)) rows.push_back(r);
  }
  return rows;
}

// |gpu|'s GEMM calibration fitted on |rows| (FitReferenceGemmCalibration).
Result<ComputeCalibration> Fit(const std::string& gpu, const std::vector<GemmReferenceRow>& rows) {
  return FitReferenceGemmCalibration(rows, LoadGpu(gpu), gpu);
}

struct TableError {
  double mean_abs = 0, max_abs = 0, bias = 0;
  int count = 0;
};

// Errors of |calibration|'s model on the rows of |gpu| itself that |in| selects.
template <typename Pred>
TableError ErrorOn(const std::vector<GemmReferenceRow>& all, const std::string& gpu,
                   const ComputeCalibration& calibration, Pred in) {
  GpuSpec spec = LoadGpu(gpu);
  spec.calibration = calibration;
  const RooflineComputeModel model(spec);
  TableError e;
  for (const GemmReferenceRow& r : all) {
    if (r.gpu != gpu || !in(r)) continue;
    const double error = model.GemmKernel(r.shape).ToSeconds() / r.time_s - 1.0;
    e.mean_abs += std::fabs(error);
    e.bias += error;
    e.max_abs = std::max(e.max_abs, std::fabs(error));
    ++e.count;
  }
  if (e.count > 0) e.mean_abs /= e.count, e.bias /= e.count;
  return e;
}

void ExpectShippedCalibrationIsTheFit(const std::string& gpu) {
  const std::vector<GemmReferenceRow> all = AllRows();
  const std::vector<GemmReferenceRow> rows =
      RowsFor(all, gpu, [](const GemmReferenceRow&) { return false; });
  Result<ComputeCalibration> fit = Fit(gpu, rows);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const ComputeCalibration& f = *fit;
  const GpuSpec shipped = LoadGpu(gpu);
  const ComputeCalibration& c = shipped.calibration;
  GpuSpec fitted = shipped;
  fitted.calibration = f;
  const RooflineComputeModel model(fitted);
  std::vector<double> errors;
  double mean_abs = 0;
  for (const GemmReferenceRow& r : rows) {
    errors.push_back(model.GemmKernel(r.shape).ToSeconds() / r.time_s - 1.0);
    mean_abs += std::fabs(errors.back()) / static_cast<double>(rows.size());
  }
  std::printf("%s: overhead %.4g us, wave latency %.4g us, operand bandwidth %.4g GB/s",
              gpu.c_str(), f.kernel_overhead_us, f.gemm_wave_latency_us.value_or(0),
              f.gemm_operand_bandwidth_GBps.value_or(0));
  for (const std::string& name : kDtypeNames.Names()) {
    const std::optional<double>& e = f.GemmEfficiencySlot(*kDtypeNames.Parse(name));
    if (e) std::printf(", efficiency %s %.4g", name.c_str(), *e);
  }
  std::printf(", mean |error| %.2f%%\n", 100 * mean_abs);
  for (size_t i = 0; i < rows.size(); ++i) {
    const GemmShape& g = rows[i].shape;
    const GemmTileChoice t = ChooseGemmTile(g, fitted);
    std::printf(
        "  %s %s %s %lldx%lldx%lld: tile %lldx%lld split %lld waves %lld, error %+.1f%%\n",
        rows[i].table.c_str(), rows[i].gpu.c_str(), std::string(kDtypeNames.Name(g.dtype)).c_str(),
        static_cast<long long>(g.m), static_cast<long long>(g.n), static_cast<long long>(g.k),
        static_cast<long long>(t.tile_m), static_cast<long long>(t.tile_n),
        static_cast<long long>(t.split_k), static_cast<long long>(t.waves), 100 * errors[i]);
  }
  EXPECT_EQ(c.gemm_tile_m, 0) << gpu << ": the model chooses the tile per shape";
  EXPECT_EQ(c.gemm_tile_n, 0) << gpu;
  for (const std::string& name : kDtypeNames.Names()) {
    const Dtype d = *kDtypeNames.Parse(name);
    const std::optional<double>& e = f.GemmEfficiencySlot(d);
    if (!e) continue;
    ASSERT_TRUE(c.GemmEfficiencySlot(d).has_value()) << gpu << " " << name;
    EXPECT_NEAR(*c.GemmEfficiencySlot(d), *e, 5e-4 * *e) << gpu << " " << name;
  }
  ASSERT_EQ(c.gemm_operand_bandwidth_GBps.has_value(), f.gemm_operand_bandwidth_GBps.has_value())
      << gpu;
  if (f.gemm_operand_bandwidth_GBps) {
    EXPECT_NEAR(*c.gemm_operand_bandwidth_GBps, *f.gemm_operand_bandwidth_GBps,
                5e-4 * *f.gemm_operand_bandwidth_GBps);
  }
  EXPECT_NEAR(c.kernel_overhead_us, f.kernel_overhead_us, 5e-4 * f.kernel_overhead_us + 1e-3)
      << gpu;
  const double wave_us = f.gemm_wave_latency_us.value_or(0);
  EXPECT_NEAR(c.gemm_wave_latency_us.value_or(0), wave_us, 5e-4 * wave_us + 1e-3) << gpu;
  std::set<std::string> tables;
  for (const GemmReferenceRow& r : rows) tables.insert(r.table);
  // Beside the GEMM tables, the A100's files name the attention table their
  // gemm_memory_bandwidth_fraction is fitted on (reference/attention_tables.h), and every file with
  // a fused-attention family's tiles the FlashAttention-2 paper's figure they are fitted on: its
  // GPU's, and on Hopper also the A100's, whose Triton-to-FlashAttention-2 ratios its Triton tiles
  // carry over (TritonBarsOnH100); no other.
  std::set<std::string> fitted_on(c.fitted_on.begin(), c.fitted_on.end());
  if (c.gemm_memory_bandwidth_fraction) {
    EXPECT_EQ(fitted_on.erase("flashattention1_megatron_a100.csv"), 1u) << gpu << ": fitted_on";
  }
  if (c.flash2_forward_tiles || c.triton_forward_tiles) {
    const bool hopper = gpu != "a100-sxm4-80gb";
    EXPECT_EQ(fitted_on.erase(std::string(kFlashAttentionA100Figure)),
              hopper && !c.triton_forward_tiles ? 0u : 1u)
        << gpu << ": fitted_on";
    EXPECT_EQ(fitted_on.erase(std::string(kFlashAttentionH100Figure)), hopper ? 1u : 0u)
        << gpu << ": fitted_on";
  }
  EXPECT_EQ(fitted_on, tables) << gpu << ": fitted_on";
}

TEST(GemmCalibration, A100IsTheFitOfItsMeasurements) {
  ExpectShippedCalibrationIsTheFit("a100-sxm4-80gb");
}
TEST(GemmCalibration, H100IsTheFitOfItsMeasurements) {
  ExpectShippedCalibrationIsTheFit("h100-sxm5-80gb");
}
TEST(GemmCalibration, H200IsTheFitOfItsMeasurements) {
  ExpectShippedCalibrationIsTheFit("h200-sxm-141gb");
}

// The stated error of each table: the shipped calibration's mean |error| on a GPU's rows of the
// table, and the same with the table's rows left out of the fit (leave-one-table-out) and with each
// source's rows left out (leave-one-source-out). The limits are the errors measured when the
// calibration was fitted (issue 18), with a small margin, so that a change that makes them worse
// fails: in-sample mean 10% and max 20% per table (30% on GH100, whose torch.mm rows at 1024^3
// run 26% slower than the model: a 12 us kernel timed from Python, where eager dispatch may bound
// it); left out, mean 50% (the one mamf row of a dtype left out leaves that dtype to borrow
// another's efficiency, and the mamf rows are maxima over a search; 1024x2145x1024 has an N that
// is not a multiple of 8).
struct Held {
  const char* gpu;
  double in_sample_mean, in_sample_max, held_out_mean;
};

TEST(GemmCalibration, EachTableIsReproducedInSampleAndLeftOut) {
  const std::vector<GemmReferenceRow> all = AllRows();
  for (const Held& h :
       {Held{"a100-sxm4-80gb", 0.10, 0.20, 0.50}, Held{"h100-sxm5-80gb", 0.10, 0.30, 0.50},
        Held{"h200-sxm-141gb", 0.10, 0.30, 0.50}}) {
    const std::string gpu = h.gpu;
    const ComputeCalibration shipped = LoadGpu(gpu).calibration;
    for (const char* table : {"gemm_cublaslt.csv", "gemm_shapes.csv"}) {
      auto in_table = [&](const GemmReferenceRow& r) { return r.table == table; };
      const TableError in = ErrorOn(all, gpu, shipped, in_table);
      if (in.count == 0) continue;
      Result<ComputeCalibration> held = Fit(gpu, RowsFor(all, gpu, in_table));
      std::printf("%s %s (%d rows): in-sample mean %.1f%% max %.1f%% bias %+.1f%%", gpu.c_str(),
                  table, in.count, 100 * in.mean_abs, 100 * in.max_abs, 100 * in.bias);
      EXPECT_LT(in.mean_abs, h.in_sample_mean) << gpu << " " << table;
      EXPECT_LT(in.max_abs, h.in_sample_max) << gpu << " " << table;
      if (!held.ok()) {
        std::printf("; left out: not determined (%s)\n", held.status().message().c_str());
        continue;
      }
      const TableError out = ErrorOn(all, gpu, *held, in_table);
      std::printf("; left out: mean %.1f%% max %.1f%% bias %+.1f%%\n", 100 * out.mean_abs,
                  100 * out.max_abs, 100 * out.bias);
      EXPECT_LT(out.mean_abs, h.held_out_mean) << gpu << " " << table << " left out";
    }
    for (const char* source : {"azure", "mamf", "fastcu", "zzc"}) {
      auto in_source = [&](const GemmReferenceRow& r) { return r.source == source; };
      const TableError in = ErrorOn(all, gpu, shipped, in_source);
      if (in.count == 0) continue;
      Result<ComputeCalibration> held = Fit(gpu, RowsFor(all, gpu, in_source));
      std::printf("%s source %s (%d rows): in-sample mean %.1f%% bias %+.1f%%", gpu.c_str(), source,
                  in.count, 100 * in.mean_abs, 100 * in.bias);
      if (!held.ok()) {
        std::printf("; left out: not determined\n");
        continue;
      }
      const TableError out = ErrorOn(all, gpu, *held, in_source);
      std::printf("; left out: mean %.1f%% max %.1f%% bias %+.1f%%\n", 100 * out.mean_abs,
                  100 * out.max_abs, 100 * out.bias);
      EXPECT_LT(out.mean_abs, h.held_out_mean) << gpu << " source " << source << " left out";
    }
  }
}

// The model's tile choice on the measured shapes: a large square GEMM takes a 256-wide tile, the
// N = 192 GEMM a tile that divides 192, and the small 1024^3 GEMM a tile that fills more SMs.
TEST(GemmCalibration, TileChoiceFollowsTheMeasuredShapes) {
  const GpuSpec a100 = LoadGpu("a100-sxm4-80gb");
  const GemmTileChoice big = ChooseGemmTile({8192, 8192, 8192, 1, Dtype::kFp16}, a100);
  EXPECT_EQ(big.tile_m * big.tile_n, 256 * 128);
  const GemmTileChoice narrow = ChooseGemmTile({802816, 192, 768, 1, Dtype::kFp16}, a100);
  EXPECT_EQ(192 % narrow.tile_n, 0) << narrow.tile_m << "x" << narrow.tile_n;
  const GemmTileChoice small = ChooseGemmTile({1024, 1024, 1024, 1, Dtype::kFp16}, a100);
  EXPECT_LT(small.tile_m * small.tile_n, 256 * 128);
}

}  // namespace
}  // namespace loom
