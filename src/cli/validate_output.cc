#include "cli/validate_output.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <string>

#include "cli/format.h"
#include "core/formatted.h"

namespace loom {
namespace {

constexpr int kLabelWidth = 20;
constexpr int kColumnWidth = 13;

// A duration unit chosen for |seconds|: s from 1 s, ms from 1 ms, us below.
struct TimeUnit {
  double scale;
  const char* name;
};

TimeUnit UnitFor(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1) return {1, "s"};
  if (magnitude >= 1e-3) return {1e3, "ms"};
  return {1e6, "us"};
}

std::string Duration(double seconds, TimeUnit unit) {
  return Fixed(seconds * unit.scale, unit.scale == 1 ? 3 : 1) + " " + unit.name;
}

std::string Duration(double seconds) { return Duration(seconds, UnitFor(seconds)); }

std::string ErrorPct(double error_pct) {
  if (!std::isfinite(error_pct)) return "n/a";
  return (error_pct >= 0 ? "+" : "") + Fixed(error_pct, 1) + "%";
}

void PrintRow(const std::string& label, const std::string& predicted, const std::string& measured,
              double error_pct, const std::string& note, std::ostream& out) {
  out << std::left << std::setw(kLabelWidth) << label << std::right << std::setw(kColumnWidth)
      << predicted << std::setw(kColumnWidth) << measured << std::setw(kColumnWidth)
      << ErrorPct(error_pct);
  if (!note.empty()) out << "   " << note;
  out << "\n";
}

std::string StepRange(const StepComparison& c) {
  const TimeUnit unit = UnitFor(c.step_time_s.measured);
  const std::string steps = std::to_string(c.steps) + (c.steps == 1 ? " step" : " steps");
  return "(median of " + steps + ", " +
         Fixed(c.measured_min_step_s * unit.scale, unit.scale == 1 ? 3 : 1) + " .. " +
         Duration(c.measured_max_step_s, unit) + ")";
}

void PrintOrder(const OrderCheck& o, std::ostream& out) {
  out << "order: " << GroupedDigits(o.dependency_violations) << " dependency violations, "
      << GroupedDigits(o.rendezvous_violations) << " rendezvous violations, "
      << GroupedDigits(o.order_inversions) << " inversions in " << GroupedDigits(o.pairs_checked)
      << " pairs\n";
  for (const std::string& example : o.examples) out << "  " << example << "\n";
}

}  // namespace

void PrintStepComparison(const StepComparison& c, std::ostream& out) {
  const std::ios_base::fmtflags flags = out.flags();
  out << std::setw(kLabelWidth) << "" << std::right << std::setw(kColumnWidth) << "predicted"
      << std::setw(kColumnWidth) << "measured" << std::setw(kColumnWidth) << "error"
      << "\n";
  PrintRow("step time", Duration(c.step_time_s.predicted), Duration(c.step_time_s.measured),
           c.step_time_s.error_pct, StepRange(c), out);
  PrintRow("bubble fraction", Percent(c.bubble_fraction.predicted),
           Percent(c.bubble_fraction.measured), c.bubble_fraction.error_pct, "", out);
  PrintRow("peak memory", HumanBytes(c.peak_memory_bytes.predicted),
           HumanBytes(c.peak_memory_bytes.measured), c.peak_memory_bytes.error_pct, "", out);
  for (size_t i = 0; i < c.classes.size(); ++i) {
    const ClassComparison& k = c.classes[i];
    const std::string note = i == 0 ? "(task classes: seconds summed over ranks)" : "";
    PrintRow(k.name, Duration(k.seconds.predicted), Duration(k.seconds.measured),
             k.seconds.error_pct, note, out);
  }
  for (size_t i = 0; i < c.work_classes.size(); ++i) {
    const ClassComparison& k = c.work_classes[i];
    const std::string note =
        i == 0 ? "(kernels and collectives, timed one by one in an extra step)" : "";
    PrintRow(k.name, Duration(k.seconds.predicted), Duration(k.seconds.measured),
             k.seconds.error_pct, note, out);
  }
  PrintOrder(c.order, out);
  out.flags(flags);
}

}  // namespace loom
