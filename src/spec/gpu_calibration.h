#ifndef LOOM_SPEC_GPU_CALIBRATION_H_
#define LOOM_SPEC_GPU_CALIBRATION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/json_reader.h"

namespace loom {

// Fitted parameters of the compute model of one GPU: the "calibration" object of a GPU file.
// Every value has a source (a profile file or a public table). Absent values fall back to the
// datasheet: efficiency 1, no overhead, the full HBM bandwidth.
struct ComputeCalibration {
  // Output tile of one thread block in large GEMMs: M and N are rounded up to it (tile
  // quantisation) and the tiles run in waves over the SMs (wave quantisation).
  int64_t gemm_tile_m = 128;
  int64_t gemm_tile_n = 128;
  // Asymptotic fraction of the dense peak that GEMMs reach, per dtype; nullopt: not measured.
  std::optional<double> gemm_efficiency_bf16, gemm_efficiency_fp16, gemm_efficiency_fp8, gemm_efficiency_tf32,
      gemm_efficiency_fp32;
  // Fixed time of every kernel: launch and setup.
  double kernel_overhead_us = 0;
  // Fraction of the dense peak fused attention reaches.
  std::optional<double> attention_efficiency;
  // Fraction of the datasheet HBM bandwidth that memory-bound kernels reach.
  std::optional<double> memory_bandwidth_fraction;
  // Where the numbers come from.
  std::string source;

  // The GEMM efficiency for |dtype|: its own if measured, else the first measured of bf16, fp16
  // and fp8 (the same tensor cores; an estimate until that dtype is profiled), else nullopt.
  std::optional<double> GemmEfficiency(Dtype dtype) const;
  // The field that holds |dtype|'s own GEMM efficiency, to read or set (no borrowing).
  std::optional<double>& GemmEfficiencySlot(Dtype dtype);
  const std::optional<double>& GemmEfficiencySlot(Dtype dtype) const;
};

// The calibration key of |dtype|'s GEMM efficiency: "gemm_efficiency_bf16", ...
std::string GemmEfficiencyKey(Dtype dtype);

// Reads the "calibration" object through |reader| (the GPU file's reader positioned on it).
ComputeCalibration ReadComputeCalibration(JsonReader& reader);

}  // namespace loom

#endif  // LOOM_SPEC_GPU_CALIBRATION_H_
