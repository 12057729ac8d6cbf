#include "cli/format.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/formatted.h"

namespace loom {

AttentionKernel AttentionKernelOf(const std::string& attention) {
  return attention == "unfused" ? AttentionKernel::kUnfused : AttentionKernel::kFused;
}

void SetAttention(const std::string& attention, SimulationOptions& options) {
  options.kernels.attention = AttentionKernelOf(attention);
  options.fused_attention = kAttentionFamilyNames.Parse(attention);
}

namespace {

// Scales |value| down by |base| until it is below |base| and formats it with the unit reached.
std::string Scaled(double value, double base, const char* const* units, int unit_count,
                   const char* sep) {
  int unit = 0;
  while (std::fabs(value) >= base && unit + 1 < unit_count) {
    value /= base;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f%s%s", value, sep, units[unit]);
  return buffer;
}

}  // namespace

std::string HumanCount(double count) {
  static const char* const kUnits[] = {"", "K", "M", "B", "T"};
  return Scaled(count, 1000.0, kUnits, 5, " ");
}

std::string HumanBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return Scaled(bytes, 1024.0, kUnits, 6, " ");
}

std::string HumanFlops(double flops) {
  static const char* const kUnits[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  return Scaled(flops, 1000.0, kUnits, 6, " ");
}

std::string GroupedDigits(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string Counted(int64_t count, std::string_view noun) {
  return GroupedDigits(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

nlohmann::ordered_json BreakdownJson(const StepBreakdown& b) {
  return {{"compute_s", b.compute_s}, {"exposed_comm_s", b.exposed_comm_s},
          {"bubble_s", b.bubble_s},   {"optimizer_s", b.optimizer_s},
          {"host_s", b.host_s},       {"compute_slowed_s", b.compute_slowed_s}};
}

std::string IntervalText(const std::optional<StepInterval>& interval) {
  if (!interval) return "-";
  const int digits = interval->high_s < 10 ? 2 : 1;
  return Fixed(interval->low_s, digits) + "-" + Fixed(interval->high_s, digits);
}

void AddIntervalJson(const std::optional<StepInterval>& interval, nlohmann::ordered_json& j) {
  j["step_time_interval_s"] =
      interval ? nlohmann::ordered_json::array({interval->low_s, interval->high_s})
               : nlohmann::ordered_json();
  j["interval_basis"] =
      interval ? interval->basis : std::string("no step-time interval: the shipped fit is empty");
}

std::string JoinedList(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : std::string(separator)) + item;
  return out;
}

}  // namespace loom
