#ifndef LOOM_SPEC_GPU_CALIBRATION_H_
#define LOOM_SPEC_GPU_CALIBRATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "core/json_reader.h"

namespace loom {

// Fitted parameters of the compute model of one GPU: the "calibration" object of a GPU file.
// Every value has a source (a profile file or a public table). Absent values fall back to the
// datasheet: efficiency 1, no overhead, the full HBM bandwidth.
struct ComputeCalibration {
  // One output tile for every GEMM, as files from before issue 18 hold it (`loom fit` now removes
  // it): M and N are rounded up to it (tile quantisation) and the tiles run in waves over the SMs
  // (wave quantisation). 0 (absent): the compute model chooses among cuBLAS's tiles per shape
  // (cost/gemm_tiles.h), as every shipped file and every fit does.
  int64_t gemm_tile_m = 0;
  int64_t gemm_tile_n = 0;
  // Asymptotic fraction of the dense peak that GEMMs reach, per dtype; nullopt: not measured.
  std::optional<double> gemm_efficiency_bf16, gemm_efficiency_fp16, gemm_efficiency_fp8,
      gemm_efficiency_tf32, gemm_efficiency_fp32;
  // Bandwidth, summed over the SMs, at which a GEMM's main loop loads its operand tiles without
  // hiding the load under the tensor cores: what makes small tiles less efficient than large ones
  // (cost/gemm_tiles.h). nullopt: not fitted, no such term.
  std::optional<double> gemm_operand_bandwidth_GBps;
  // Time of each wave of GEMM tiles that does not grow with K: pipeline prologue and epilogue
  // (cost/gemm_tiles.h). nullopt: not fitted, none.
  std::optional<double> gemm_wave_latency_us;
  // Whether the GPU's GEMM kernels run one tile's epilogue while another tile's main loop runs
  // (Hopper's warp-specialised persistent kernels), so that an epilogue's memory traffic overlaps
  // the math instead of following it. A fact of the architecture, cited in the file's "sources".
  bool gemm_epilogue_overlap = false;
  // Fixed time of every kernel: launch and setup.
  double kernel_overhead_us = 0;
  // Fraction of the dense peak fused attention reaches.
  std::optional<double> attention_efficiency;
  // Fraction of the datasheet HBM bandwidth that memory-bound kernels reach.
  std::optional<double> memory_bandwidth_fraction;
  // Where the numbers come from.
  std::string source;
  // The reference tables (file names under tests/reference/) or profiles the fitted values were
  // fitted on, e.g. {"gemm_cublaslt.csv", "gemm_shapes.csv"}: what a leave-one-source-out check
  // must drop to judge the calibration on a table it did not see.
  std::vector<std::string> fitted_on;

  // The GEMM efficiency for |dtype|: its own if measured, else the first measured of bf16, fp16
  // and fp8 (the same tensor cores; an estimate until that dtype is profiled), else nullopt.
  std::optional<double> GemmEfficiency(Dtype dtype) const;
  // The field that holds |dtype|'s own GEMM efficiency, to read or set (no borrowing).
  std::optional<double>& GemmEfficiencySlot(Dtype dtype);
  const std::optional<double>& GemmEfficiencySlot(Dtype dtype) const;
};

// The calibration key of |dtype|'s GEMM efficiency: "gemm_efficiency_bf16", ...
std::string GemmEfficiencyKey(Dtype dtype);

// Reads the "calibration" object |object| through |reader| (the GPU file's reader positioned on
// it; |object| is the same JSON, for the list-valued "fitted_on" the reader has no getter for).
ComputeCalibration ReadComputeCalibration(JsonReader& reader, const nlohmann::json& object);

}  // namespace loom

#endif  // LOOM_SPEC_GPU_CALIBRATION_H_
