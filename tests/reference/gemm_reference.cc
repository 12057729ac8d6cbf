#include "reference/gemm_reference.h"

#include <optional>
#include <utility>

#include "reference/reference_csv.h"

namespace loom {
namespace {

// A row of |table| by |source| on |gpu|: the GEMM and its time at the measured TFLOP/s.
GemmReferenceRow MakeRow(std::string_view table, std::string source, std::string gpu, Dtype dtype,
                         int64_t m, int64_t n, int64_t k, double tflops) {
  const GemmShape g{m, n, k, 1, dtype};
  return {std::string(table), std::move(source), std::move(gpu), g,
          static_cast<double>(GemmFlops(g)) / (tflops * 1e12)};
}

// gemm_cublaslt.csv: one column per GPU and dtype (Azure AI-benchmarking-guide).
Status ReadCublasLt(const std::string& tables_dir, std::vector<GemmReferenceRow>* rows) {
  Result<CsvTable> table = ReadReferenceCsv(tables_dir + "/" + std::string(kCublasLtTable));
  if (!table.ok()) return table.status();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const int64_t m = r.Int("m"), n = r.Int("n"), k = r.Int("k");
    const double a100 = r.Number("a100_fp16_tflops"), h100 = r.Number("h100_fp8_tflops");
    LOOM_RETURN_IF_ERROR(r.Finish());
    rows->push_back(
        MakeRow(kCublasLtTable, "azure", "a100-sxm4-80gb", Dtype::kFp16, m, n, k, a100));
    rows->push_back(MakeRow(kCublasLtTable, "azure", "h100-sxm5-80gb", Dtype::kFp8, m, n, k, h100));
  }
  return Status::Ok();
}

// gemm_shapes.csv: one measurement per row.
Status ReadShapes(const std::string& tables_dir, std::vector<GemmReferenceRow>* rows) {
  const std::string path = tables_dir + "/" + std::string(kGemmShapesTable);
  Result<CsvTable> table = ReadReferenceCsv(path);
  if (!table.ok()) return table.status();
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string dtype_name = r.Text("dtype");
    r.Text("layout");
    const std::string source = r.Text("source"), gpu = r.Text("gpu");
    const int64_t m = r.Int("m"), n = r.Int("n"), k = r.Int("k");
    const double tflops = r.Number("tflops");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const std::optional<Dtype> dtype = kDtypeNames.Parse(dtype_name);
    if (!dtype) {
      return Status::InvalidArgument(path + ": row " + std::to_string(i + 1) + ": dtype '" +
                                     dtype_name + "' is not one of bf16, fp16, fp8, tf32, fp32");
    }
    rows->push_back(MakeRow(kGemmShapesTable, source, gpu, *dtype, m, n, k, tflops));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<GemmReferenceRow>> LoadGemmReferenceRows(const std::string& tables_dir) {
  std::vector<GemmReferenceRow> rows;
  LOOM_RETURN_IF_ERROR(ReadCublasLt(tables_dir, &rows));
  LOOM_RETURN_IF_ERROR(ReadShapes(tables_dir, &rows));
  return rows;
}

std::set<std::string> GemmFittedGpus(const std::string& gpu) {
  if (gpu == "h100-sxm5-80gb" || gpu == "h200-sxm-141gb")
    return {"h100-sxm5-80gb", "h200-sxm-141gb"};
  return {gpu};
}

Result<ComputeCalibration> FitReferenceGemmCalibration(const std::vector<GemmReferenceRow>& rows,
                                                       const GpuSpec& gpu,
                                                       const std::string& gpu_name,
                                                       std::string_view excluded_table,
                                                       std::string_view excluded_source) {
  GpuSpec spec = gpu;
  for (const std::string& name : kDtypeNames.Names())
    spec.calibration.GemmEfficiencySlot(*kDtypeNames.Parse(name)).reset();
  const std::set<std::string> gpus = GemmFittedGpus(gpu_name);
  std::vector<KernelSample> samples;
  for (const GemmReferenceRow& r : rows) {
    if (gpus.count(r.gpu) == 0) continue;
    if (!excluded_table.empty() && r.table == excluded_table) continue;
    if (!excluded_source.empty() && r.source == excluded_source) continue;
    samples.push_back({r.shape, r.time_s});
  }
  Result<JointComputeFit> fit = FitComputeJointly(samples, spec);
  if (!fit.ok()) return fit.status();
  return fit->calibration;
}

}  // namespace loom
