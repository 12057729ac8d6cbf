#include "spec/gpu_calibration.h"

namespace loom {

std::optional<double> ComputeCalibration::GemmEfficiency(Dtype dtype) const {
  std::optional<double> own;
  switch (dtype) {
    case Dtype::kBf16:
      own = gemm_efficiency_bf16;
      break;
    case Dtype::kFp16:
      own = gemm_efficiency_fp16;
      break;
    case Dtype::kFp8:
      own = gemm_efficiency_fp8;
      break;
    case Dtype::kTf32:
      own = gemm_efficiency_tf32;
      break;
    case Dtype::kFp32:
      own = gemm_efficiency_fp32;
      break;
  }
  if (own) return own;
  for (const std::optional<double>& other : {gemm_efficiency_bf16, gemm_efficiency_fp16, gemm_efficiency_fp8}) {
    if (other) return other;
  }
  return std::nullopt;
}

namespace {

// A fraction in (0, 1], or nullopt when absent; out-of-range values are recorded as errors.
std::optional<double> Fraction(JsonReader& r, std::string_view key) {
  std::optional<double> v = r.OptionalPositiveNumber(key);
  if (v && *v > 1.0) {
    r.AddError(key, "is " + std::to_string(*v) + "; a fraction of the datasheet peak must be at most 1");
    return std::nullopt;
  }
  return v;
}

}  // namespace

ComputeCalibration ReadComputeCalibration(JsonReader& r) {
  ComputeCalibration c;
  c.gemm_tile_m = r.OptionalInt("gemm_tile_m", {16, 1024}).value_or(c.gemm_tile_m);
  c.gemm_tile_n = r.OptionalInt("gemm_tile_n", {16, 1024}).value_or(c.gemm_tile_n);
  c.gemm_efficiency_bf16 = Fraction(r, "gemm_efficiency_bf16");
  c.gemm_efficiency_fp16 = Fraction(r, "gemm_efficiency_fp16");
  c.gemm_efficiency_fp8 = Fraction(r, "gemm_efficiency_fp8");
  c.gemm_efficiency_tf32 = Fraction(r, "gemm_efficiency_tf32");
  c.gemm_efficiency_fp32 = Fraction(r, "gemm_efficiency_fp32");
  c.kernel_overhead_us = r.OptionalNonNegativeNumber("kernel_overhead_us").value_or(0.0);
  c.attention_efficiency = Fraction(r, "attention_efficiency");
  c.memory_bandwidth_fraction = Fraction(r, "memory_bandwidth_fraction");
  c.source = r.String("source");
  return c;
}

}  // namespace loom
