#include "spec/gpu_calibration.h"

#include <utility>

#include <nlohmann/json.hpp>

namespace loom {

const std::optional<double>& ComputeCalibration::GemmEfficiencySlot(Dtype dtype) const {
  switch (dtype) {
    case Dtype::kBf16:
      return gemm_efficiency_bf16;
    case Dtype::kFp16:
      return gemm_efficiency_fp16;
    case Dtype::kFp8:
      return gemm_efficiency_fp8;
    case Dtype::kTf32:
      return gemm_efficiency_tf32;
    case Dtype::kFp32:
      break;
  }
  return gemm_efficiency_fp32;
}

std::optional<double>& ComputeCalibration::GemmEfficiencySlot(Dtype dtype) {
  return const_cast<std::optional<double>&>(std::as_const(*this).GemmEfficiencySlot(dtype));
}

std::optional<double> ComputeCalibration::GemmEfficiency(Dtype dtype) const {
  if (const std::optional<double>& own = GemmEfficiencySlot(dtype)) return own;
  for (const std::optional<double>& other :
       {gemm_efficiency_bf16, gemm_efficiency_fp16, gemm_efficiency_fp8}) {
    if (other) return other;
  }
  return std::nullopt;
}

const std::optional<double>& ComputeCalibration::SustainedTensorFractionSlot(Dtype dtype) const {
  return sustained_tensor_fraction[static_cast<size_t>(dtype)];
}

std::optional<double>& ComputeCalibration::SustainedTensorFractionSlot(Dtype dtype) {
  return const_cast<std::optional<double>&>(
      std::as_const(*this).SustainedTensorFractionSlot(dtype));
}

double ComputeCalibration::MemoryBandwidthFraction(MemoryAccess access) const {
  if (access == MemoryAccess::kRowReduction && memory_bandwidth_fraction_row_reduction)
    return *memory_bandwidth_fraction_row_reduction;
  return memory_bandwidth_fraction.value_or(1.0);
}

const std::optional<AttentionTileParams>& ComputeCalibration::AttentionTiles(AttentionFamily family,
                                                                             bool backward) const {
  switch (family) {
    case AttentionFamily::kCudnn:
      return backward ? attention_backward_tiles : attention_forward_tiles;
    case AttentionFamily::kFlashAttention2:
      return backward ? flash2_backward_tiles : flash2_forward_tiles;
    case AttentionFamily::kTriton:
      return backward ? triton_backward_tiles : triton_forward_tiles;
  }
  return attention_forward_tiles;
}

std::optional<AttentionTileParams>& ComputeCalibration::AttentionTilesSlot(AttentionFamily family,
                                                                           bool backward) {
  return const_cast<std::optional<AttentionTileParams>&>(
      std::as_const(*this).AttentionTiles(family, backward));
}

std::string ComputeCalibration::AttentionTilesKey(AttentionFamily family) {
  return family == AttentionFamily::kCudnn
             ? "attention_tiles"
             : "attention_tiles_" + std::string(kAttentionFamilyNames.Name(family));
}

std::optional<double> ComputeCalibration::SustainedTensorFraction(Dtype dtype) const {
  if (const std::optional<double>& own = SustainedTensorFractionSlot(dtype)) return own;
  if (dtype == Dtype::kFp16) return SustainedTensorFractionSlot(Dtype::kBf16);
  if (dtype == Dtype::kBf16) return SustainedTensorFractionSlot(Dtype::kFp16);
  return std::nullopt;
}

namespace {

// A fraction in (0, 1], or nullopt when absent; out-of-range values are recorded as errors.
std::optional<double> Fraction(JsonReader& r, std::string_view key) {
  // Below a thousandth of the peak no kernel runs: such a value is a typing error (and would turn
  // into times of centuries).
  std::optional<double> v = r.OptionalPositiveNumber(key, {1e-3, 1e15});
  if (v && *v > 1.0) {
    r.AddError(key,
               "is " + std::to_string(*v) + "; a fraction of the datasheet peak must be at most 1");
    return std::nullopt;
  }
  return v;
}

// "fitted_on": a non-empty array of file names (no folders), each a .csv table or a .json profile.
std::vector<std::string> FittedOn(JsonReader& r, const nlohmann::json& object) {
  r.Allow("fitted_on");
  auto it = object.find("fitted_on");
  if (it == object.end() || it->is_null()) return {};
  std::vector<std::string> names;
  bool ok = it->is_array() && !it->empty();
  for (const nlohmann::json& item : ok ? *it : nlohmann::json::array()) {
    const std::string name = item.is_string() ? item.get<std::string>() : "";
    const bool table = name.size() > 4 && (name.ends_with(".csv") || name.ends_with(".json"));
    ok = ok && table && name.find('/') == std::string::npos;
    names.push_back(name);
  }
  if (!ok) {
    r.AddError(
        "fitted_on",
        "is " + it->dump() +
            "; it must be a non-empty array of the file names (without folders) of the reference "
            "tables or profiles the calibration was fitted on, e.g. [\"gemm_cublaslt.csv\"]");
    return {};
  }
  return names;
}

// One pass's object of "attention_tiles": every field required.
AttentionTileParams ReadAttentionTileParams(JsonReader& r) {
  AttentionTileParams p;
  p.matmul_efficiency = Fraction(r, "matmul_efficiency").value_or(0.0);
  if (!r.Has("matmul_efficiency"))
    r.AddError("matmul_efficiency",
               "is missing; give the fraction of the tensor peak the block loop reaches");
  p.score_ps = r.OptionalNonNegativeNumber("score_ps", {0, 1e6}).value_or(0.0);
  p.masked_score_ps = r.OptionalNonNegativeNumber("masked_score_ps", {0, 1e6}).value_or(0.0);
  p.element_ps = r.OptionalNonNegativeNumber("element_ps", {0, 1e6}).value_or(0.0);
  p.wave_us = r.OptionalNonNegativeNumber("wave_us", {0, 1e6}).value_or(0.0);
  p.latency_us = r.OptionalNonNegativeNumber("latency_us", {0, 1e6}).value_or(0.0);
  for (std::string_view key :
       {"score_ps", "masked_score_ps", "element_ps", "wave_us", "latency_us"}) {
    if (!r.Has(key))
      r.AddError(key,
                 "is missing; every field of an attention_tiles pass is fitted together (loom fit "
                 "writes them all; 0 where the fit found none)");
  }
  return p;
}

}  // namespace

std::string GemmEfficiencyKey(Dtype dtype) {
  return "gemm_efficiency_" + std::string(kDtypeNames.Name(dtype));
}

std::string SustainedTensorFractionKey(Dtype dtype) {
  return "sustained_tensor_fraction_" + std::string(kDtypeNames.Name(dtype));
}

ComputeCalibration ReadComputeCalibration(JsonReader& r, const nlohmann::json& object) {
  ComputeCalibration c;
  c.gemm_tile_m = r.OptionalInt("gemm_tile_m", {16, 1024}).value_or(c.gemm_tile_m);
  c.gemm_tile_n = r.OptionalInt("gemm_tile_n", {16, 1024}).value_or(c.gemm_tile_n);
  if ((c.gemm_tile_m > 0) != (c.gemm_tile_n > 0)) {
    r.AddError(c.gemm_tile_m > 0 ? "gemm_tile_n" : "gemm_tile_m",
               "is missing; a fixed GEMM tile needs both gemm_tile_m and gemm_tile_n (or neither, "
               "to let the model "
               "choose among cuBLAS's tiles)");
  }
  c.gemm_operand_bandwidth_GBps =
      r.OptionalPositiveNumber("gemm_operand_bandwidth_GBps", {1e-2, 1e6});
  c.gemm_wave_latency_us = r.OptionalNonNegativeNumber("gemm_wave_latency_us", {0, 1e6});
  c.gemm_epilogue_overlap = r.OptionalBool("gemm_epilogue_overlap").value_or(false);
  for (const std::string& dtype : kDtypeNames.Names()) {
    const Dtype d = *kDtypeNames.Parse(dtype);
    c.GemmEfficiencySlot(d) = Fraction(r, GemmEfficiencyKey(d));
  }
  c.kernel_overhead_us = r.OptionalNonNegativeNumber("kernel_overhead_us", {0, 1e6}).value_or(0.0);
  c.attention_efficiency = Fraction(r, "attention_efficiency");
  for (AttentionFamily family :
       {AttentionFamily::kCudnn, AttentionFamily::kFlashAttention2, AttentionFamily::kTriton}) {
    const std::string key = ComputeCalibration::AttentionTilesKey(family);
    if (!r.Has(key)) continue;
    JsonReader& tiles = r.Object(key);
    for (const bool backward : {false, true}) {
      const char* pass = backward ? "backward" : "forward";
      if (tiles.Has(pass))
        c.AttentionTilesSlot(family, backward) = ReadAttentionTileParams(tiles.Object(pass));
    }
  }
  c.memory_bandwidth_fraction = Fraction(r, "memory_bandwidth_fraction");
  c.memory_bandwidth_fraction_row_reduction =
      Fraction(r, "memory_bandwidth_fraction_row_reduction");
  c.gemm_memory_bandwidth_fraction = Fraction(r, "gemm_memory_bandwidth_fraction");
  for (const std::string& dtype : kDtypeNames.Names()) {
    const Dtype d = *kDtypeNames.Parse(dtype);
    c.SustainedTensorFractionSlot(d) = Fraction(r, SustainedTensorFractionKey(d));
  }
  c.source = r.String("source");
  c.fitted_on = FittedOn(r, object);
  return c;
}

}  // namespace loom
