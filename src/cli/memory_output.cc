#include "cli/memory_output.h"

#include <array>
#include <iomanip>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/search_space.h"

namespace loom {
namespace {

using nlohmann::ordered_json;

constexpr size_t kItems = static_cast<size_t>(MemoryItem::kOther) + 1;

// Column headings of the table, by MemoryItem.
constexpr std::array<const char*, kItems> kHeadings = {"weights",     "grads",     "optimizer",
                                                       "activations", "recompute", "logits",
                                                       "comm buf",    "states",    "other"};

std::string GiB(int64_t bytes) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2)
       << static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30);
  return text.str();
}

ordered_json OrNull(int32_t value) {
  return value >= 0 ? ordered_json(value) : ordered_json(nullptr);
}

ordered_json PeakTaskJson(const PeakTask& t) {
  if (t.task < 0) return nullptr;
  const bool of_pass = t.virtual_stage >= 0;
  return {{"task", t.task},
          {"name", t.name},
          {"stream", t.stream},
          {"kind", kWorkKindNames.Name(t.kind)},
          {"pass", of_pass ? ordered_json(kPassNames.Name(t.pass)) : ordered_json(nullptr)},
          {"virtual_stage", OrNull(t.virtual_stage)},
          {"chunk", OrNull(t.chunk)},
          {"micro_batch", OrNull(t.micro_batch)},
          {"start_s", t.start.ToSeconds()},
          {"end_s", t.end.ToSeconds()},
          {"description", DescribePeakTask(t)}};
}

// Which items any stage holds: the table's columns.
std::array<bool, kItems> Columns(const std::vector<MemoryBreakdown>& stages) {
  std::array<bool, kItems> shown{};
  for (const MemoryBreakdown& b : stages) {
    for (const MemoryItemBytes& i : b.items) shown[static_cast<size_t>(i.item)] = true;
  }
  return shown;
}

void PrintTable(const MemoryView& view, std::ostream& out) {
  const std::array<bool, kItems> shown = Columns(view.stages);
  out << "memory at each stage's peak (GiB; stashed: forward passes whose activations are held)\n";
  out << std::right << std::setw(6) << "stage";
  for (size_t i = 0; i < kItems; ++i) {
    if (shown[i]) out << std::setw(12) << kHeadings[i];
  }
  out << std::setw(9) << "stashed" << std::setw(10) << "peak" << std::setw(11) << "at s"
      << "\n";
  for (const MemoryBreakdown& b : view.stages) {
    out << std::setw(6) << b.stage;
    for (size_t i = 0; i < kItems; ++i) {
      if (shown[i]) out << std::setw(12) << GiB(b.Bytes(static_cast<MemoryItem>(i)));
    }
    std::ostringstream at;
    at << std::fixed << std::setprecision(3) << b.peak_time.ToSeconds();
    out << std::setw(9) << b.stashed_micro_batches << std::setw(10) << GiB(b.peak_bytes)
        << std::setw(11) << at.str() << "\n";
  }
}

void PrintFits(const MemoryView& view, std::ostream& out) {
  if (view.fits.empty()) {
    out << "no strategy one or two memory levers away fits (recompute, micro-batch, ZeRO, sp, "
           "tp/pp/cp with "
           "dp, offload, chunks); try more GPUs or a search: loom plan\n";
    return;
  }
  out << "to fit, change (the nearest strategies that fit, fewest changes first, then fastest):\n";
  for (const FitSuggestion& f : view.fits) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "step " << f.step_time_s << " s";
    if (view.step_time_s > 0) {
      line << " (" << std::showpos << std::setprecision(1)
           << (f.step_time_s / view.step_time_s - 1) * 100 << std::noshowpos << "%)";
    }
    line << ", peak " << GiB(f.peak_memory_bytes) << " of " << GiB(f.memory_limit_bytes) << " GiB";
    out << "  " << std::left << std::setw(40) << f.changes << std::right << " " << line.str()
        << "\n";
  }
}

}  // namespace

ordered_json MemoryBreakdownJson(const MemoryBreakdown& b) {
  ordered_json items = ordered_json::object();
  for (const MemoryItemBytes& i : b.items)
    items[std::string(kMemoryItemNames.Name(i.item))] = i.bytes;
  return {{"stage", b.stage},
          {"rank", b.rank},
          {"peak_bytes", b.peak_bytes},
          {"peak_time_s", b.peak_time.ToSeconds()},
          {"items", items},
          {"stashed_micro_batches", b.stashed_micro_batches},
          {"peak_task", PeakTaskJson(b.peak_task)}};
}

ordered_json ReserveJson(const MemoryReserve& reserve) {
  ordered_json parts = ordered_json::array();
  for (const ReservePart& p : reserve.parts) {
    parts.push_back({{"name", p.name}, {"bytes", p.bytes}, {"basis", p.basis}});
  }
  return {{"parts", parts},
          {"headroom", reserve.headroom},
          {"headroom_bytes", reserve.headroom_bytes},
          {"headroom_basis", reserve.headroom_basis}};
}

ordered_json MemoryJson(const MemoryView& view) {
  ordered_json stages = ordered_json::array();
  for (const MemoryBreakdown& b : view.stages) stages.push_back(MemoryBreakdownJson(b));
  ordered_json fits = ordered_json::array();
  for (const FitSuggestion& f : view.fits) {
    fits.push_back({{"changes", f.changes},
                    {"levers", f.levers},
                    {"fix", ConstraintText(f.strategy)},
                    {"step_time_s", f.step_time_s},
                    {"peak_memory_bytes", f.peak_memory_bytes},
                    {"memory_limit_bytes", f.memory_limit_bytes}});
  }
  return {{"limit_bytes", view.limit_bytes},
          {"reserved_bytes", view.reserve.ReservedBytes()},
          {"reserve", ReserveJson(view.reserve)},
          {"peak_stage", view.peak_stage},
          {"stages", stages},
          {"fit_suggestions", fits}};
}

void PrintMemory(const MemoryView& view, std::ostream& out) {
  if (view.stages.empty()) return;
  PrintTable(view, out);
  const MemoryBreakdown& peak = view.stages[static_cast<size_t>(view.peak_stage)];
  std::ostringstream at;
  at << std::fixed << std::setprecision(3) << peak.peak_time.ToSeconds();
  out << "peak: stage " << peak.stage << ", " << GiB(peak.peak_bytes) << " of "
      << GiB(view.limit_bytes) << " GiB usable, at " << at.str() << " s, when "
      << DescribePeakTask(peak.peak_task) << " allocates\n";
  const MemoryReserve& reserve = view.reserve;
  const int64_t gpu = view.limit_bytes + reserve.ReservedBytes();
  out << "outside every peak, " << GiB(reserve.ReservedBytes()) << " of the GPU's " << GiB(gpu)
      << " GiB:\n";
  for (const ReservePart& p : reserve.parts) {
    out << "  " << std::left << std::setw(18) << p.name << std::right << std::setw(6)
        << GiB(p.bytes) << " GiB  " << p.basis << "\n";
  }
  out << "  " << std::left << std::setw(18) << "headroom" << std::right << std::setw(6)
      << GiB(reserve.headroom_bytes) << " GiB  " << HeadroomText(reserve)
      << " of the GPU for the allocator's fragmentation (" << reserve.headroom_basis << ")\n";
  if (peak.peak_bytes > view.limit_bytes && peak.peak_bytes <= gpu - reserve.parts_bytes) {
    out << "the peak fits only inside the headroom: it runs if the allocator fragments less than "
        << HeadroomText(reserve) << " of the GPU (--memory-headroom)\n";
  }
  if (peak.peak_bytes > view.limit_bytes) PrintFits(view, out);
}

}  // namespace loom
