#include "reference/gemm_tables.h"

#include <map>
#include <string>
#include <utility>

#include "cost/compute_model.h"
#include "cost/profile.h"
#include "reference/gemm_reference.h"

namespace loom {
namespace {

// The committed H100 run whose grid the shipped H100 file is judged on (hardware/validation/).
constexpr const char* kH100Run = "2026-11-27";

// A GEMM's time as the tables compare it: microseconds, the unit the fit's relative residuals and
// loom fit --check's errors are taken in (the public tables publish TFLOP/s, converted per row).
double KernelUs(SimTime t) { return t.ToSeconds() * 1e6; }

// The calibrations a table's rows are predicted with: shipped, and refitted without a file or a
// source, per GPU file, each computed once.
class GemmCalibrations {
 public:
  GemmCalibrations(const ReferencePaths& paths, const std::vector<GemmReferenceRow>& rows)
      : paths_(paths), rows_(rows) {}

  Result<GpuSpec> Shipped(const std::string& gpu) {
    auto it = shipped_.find(gpu);
    if (it != shipped_.end()) return it->second;
    Result<GpuSpec> spec = LoadGpuSpec(paths_.gpus_dir + "/" + gpu + ".json");
    if (!spec.ok()) return spec.status();
    return shipped_.emplace(gpu, *spec).first->second;
  }

  // |gpu|'s file with its GEMM calibration refitted without |table| or |source|; where the rows
  // left do not determine a fit, the file without any GEMM calibration (the datasheet model loom
  // gives a GPU that was never measured), and |*undetermined| set.
  Result<GpuSpec> Without(const std::string& gpu, const std::string& table,
                          const std::string& source, bool* undetermined) {
    const std::string key = gpu + "|" + table + "|" + source;
    auto it = refitted_.find(key);
    if (it == refitted_.end()) {
      Result<GpuSpec> spec = Shipped(gpu);
      if (!spec.ok()) return spec.status();
      GpuSpec out = *spec;
      Result<ComputeCalibration> fit =
          FitReferenceGemmCalibration(rows_, *spec, gpu, table, source);
      const bool failed = !fit.ok();
      if (fit.ok()) {
        out.calibration = *fit;
      } else {
        ComputeCalibration& c = out.calibration;
        for (const std::string& name : kDtypeNames.Names())
          c.GemmEfficiencySlot(*kDtypeNames.Parse(name)).reset();
        c.gemm_wave_latency_us.reset();
        c.gemm_operand_bandwidth_GBps.reset();
        c.kernel_overhead_us = 0;
      }
      it = refitted_.emplace(key, std::make_pair(out, failed)).first;
    }
    *undetermined = it->second.second;
    return it->second.first;
  }

 private:
  const ReferencePaths& paths_;
  const std::vector<GemmReferenceRow>& rows_;
  std::map<std::string, GpuSpec> shipped_;
  std::map<std::string, std::pair<GpuSpec, bool>> refitted_;
};

std::string RowName(const GemmReferenceRow& r) {
  const GemmShape& g = r.shape;
  return r.gpu + " " + std::string(kDtypeNames.Name(g.dtype)) + " " + std::to_string(g.m) + "x" +
         std::to_string(g.n) + "x" + std::to_string(g.k) + " (" + r.source + ")";
}

Result<FidelityTable> PredictGemmTable(std::string_view file, const std::string& title,
                                       const std::vector<GemmReferenceRow>& rows,
                                       GemmCalibrations& calibrations) {
  FidelityTable table;
  table.name = std::string(file.substr(0, file.find('.')));
  table.title = title;
  table.unit = "us";
  table.source_file = std::string(file);
  table.refitted = true;
  table.site_refitted = true;
  for (const GemmReferenceRow& r : rows) {
    if (r.table != file) continue;
    Result<GpuSpec> shipped = calibrations.Shipped(r.gpu);
    if (!shipped.ok()) return shipped.status();
    bool table_left = false, source_left = false;
    Result<GpuSpec> without_table = calibrations.Without(r.gpu, r.table, "", &table_left);
    if (!without_table.ok()) return without_table.status();
    Result<GpuSpec> without_source = calibrations.Without(r.gpu, "", r.source, &source_left);
    if (!without_source.ok()) return without_source.status();
    FidelityRow row;
    row.name = RowName(r);
    if (table_left || source_left) row.name += " [left out: datasheet, the rest do not fit]";
    row.measured = r.time_s * 1e6;
    row.predicted = KernelUs(RooflineComputeModel(*shipped).GemmKernel(r.shape));
    row.loso_predicted = KernelUs(RooflineComputeModel(*without_table).GemmKernel(r.shape));
    row.site = r.source;
    row.site_loso_predicted = KernelUs(RooflineComputeModel(*without_source).GemmKernel(r.shape));
    table.rows.push_back(std::move(row));
  }
  return table;
}

// The grid of the committed H100 run: every GEMM, at the sustained ceiling of the shipped file.
Result<FidelityTable> PredictH100Grid(const ReferencePaths& paths, GemmCalibrations& calibrations) {
  const std::string grid_path = paths.validation_dir + "/" + kH100Run + "/grid.json";
  Result<Profile> grid = ReadProfile(grid_path);
  if (!grid.ok()) return grid.status();
  Result<GpuSpec> h100 = calibrations.Shipped("h100-sxm5-80gb");
  if (!h100.ok()) return h100.status();
  const RooflineComputeModel model(*h100, ClockRegime::kSustained);
  FidelityTable table;
  table.name = "gemm_h100_run_grid";
  table.title = std::string("GEMM kernels of the committed H100 run's grid (hardware/validation/") +
                kH100Run +
                "/grid.json, measured back to back): hardware/gpus/h100-sxm5-80gb.json at its "
                "sustained ceiling, kernel time (us)";
  table.unit = "us";
  table.source_file = "validation/" + std::string(kH100Run) + "/grid.json";
  for (const ProfileSample& s : grid->samples) {
    const GemmShape* g = std::get_if<GemmShape>(&s.shape);
    if (g == nullptr) continue;
    FidelityRow row;
    row.name = DescribeShape(s.shape);
    row.measured = s.median_us;
    row.predicted = KernelUs(model.GemmKernel(*g));
    row.loso_predicted = row.predicted;
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace

Result<std::vector<FidelityTable>> PredictGemmTables(const ReferencePaths& paths) {
  Result<std::vector<GemmReferenceRow>> rows = LoadGemmReferenceRows(paths.tables_dir);
  if (!rows.ok()) return rows.status();
  GemmCalibrations calibrations(paths, *rows);
  const std::pair<std::string_view, const char*> files[] = {
      {kCublasLtTable,
       "GEMM kernels, gemm_cublaslt.csv (Azure AI benchmarking guide): cuBLASLt on A100 fp16 and "
       "H100 fp8, kernel time (us) from the published TFLOP/s"},
      {kGemmShapesTable,
       "GEMM kernels, gemm_shapes.csv (Azure, mamf-finder, fast.cu, torch-performance-test-data): "
       "A100, H100 and H200, kernel time (us) from the published TFLOP/s"}};
  std::vector<FidelityTable> tables;
  for (const auto& [file, title] : files) {
    Result<FidelityTable> table = PredictGemmTable(file, title, *rows, calibrations);
    if (!table.ok()) return table.status();
    tables.push_back(std::move(*table));
  }
  Result<FidelityTable> grid = PredictH100Grid(paths, calibrations);
  if (!grid.ok()) return grid.status();
  tables.push_back(std::move(*grid));
  return tables;
}

}  // namespace loom
