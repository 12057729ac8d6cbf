#include "cli/probe_output.h"

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/formatted.h"
#include "probe/nccl_table.h"

namespace loom {
namespace {

// The best rate of one class of samples.
struct ClassBest {
  int64_t measured = 0;
  double best = 0;
  std::string unit;
  std::string point;
};

// Class name, rate and unit of one kernel sample: higher is better, except the launch in us.
std::string ClassOf(const ProfileSample& s, double* rate, std::string* unit) {
  if (const GemmShape* g = std::get_if<GemmShape>(&s.shape)) {
    *rate = static_cast<double>(GemmFlops(*g)) / (s.median_us * 1e-6) / 1e12;
    *unit = "TFLOP/s";
    return "gemm " + std::string(kDtypeNames.Name(g->dtype));
  }
  if (const AttentionShape* a = std::get_if<AttentionShape>(&s.shape)) {
    *rate = AttentionKernelFlops(*a) / (s.median_us * 1e-6) / 1e12;
    *unit = "TFLOP/s";
    return std::string("attention ") + (a->backward ? "bwd " : "fwd ") +
           std::string(kDtypeNames.Name(a->dtype));
  }
  const MemoryShape& m = std::get<MemoryShape>(s.shape);
  *rate = static_cast<double>(m.bytes_read + m.bytes_written) / (s.median_us * 1e-6) / 1e9;
  *unit = "GB/s";
  return "memory " + s.label;
}

std::map<std::string, ClassBest> BestByClass(const Profile& p) {
  std::map<std::string, ClassBest> classes;
  auto add = [&](const std::string& name, double rate, const std::string& unit,
                 const std::string& point, bool lower) {
    ClassBest& c = classes[name];
    if (c.measured == 0 || (lower ? rate < c.best : rate > c.best)) c.best = rate, c.point = point;
    c.unit = unit;
    ++c.measured;
  };
  for (const ProfileSample& s : p.samples) {
    double rate = 0;
    std::string unit;
    const std::string name = ClassOf(s, &rate, &unit);
    add(name, rate, unit, DescribeShape(s.shape), false);
  }
  for (const HostSample& h : p.host_samples) {
    const bool launch = h.measure == HostMeasure::kLaunch;
    const double rate =
        launch ? h.median_us : static_cast<double>(h.bytes) / (h.median_us * 1e-6) / 1e9;
    add(std::string(kHostMeasureNames.Name(h.measure)), rate, launch ? "us" : "GB/s",
        ProbePointKey(h.measure, h.bytes), launch);
  }
  return classes;
}

constexpr const char* kKindNames[] = {"gemm", "attention", "memory", "host", "collectives"};

// "~3.4 s" below ten seconds, "~41 s" above.
std::string ApproxSeconds(double s) {
  return s < 10 ? Formatted("~%.1f s", s) : Formatted("~%.0f s", s);
}

// What every estimate assumes, after the GPU file.
std::string Assumes(const SweepEstimate& e) {
  return "an estimate from " + e.gpu_file +
         "'s calibrated model and the set-up time per point measured on one "
         "H100, 2026-11-27";
}

}  // namespace

void PrintSweepPlan(const std::vector<ProbePoint>& points, const std::vector<ProbeGroup>& groups,
                    const std::optional<SweepEstimate>& estimate, std::ostream& out) {
  static const char* kNames[] = {"gemm", "attention", "memory", "host", "collectives"};
  auto ranks = [](ProbeGroup) { return int64_t{0}; };
  for (size_t kind = 0; kind < 5; ++kind) {
    std::vector<const ProbePoint*> of_kind;
    for (const ProbePoint& p : points) {
      if (p.index() == kind) of_kind.push_back(&p);
    }
    out << Formatted("%-12s %6zu points", kNames[kind], of_kind.size());
    if (!of_kind.empty()) {
      out << "  " << PointKey(*of_kind.front(), ranks);
      if (of_kind.size() > 1) out << "  ..  " << PointKey(*of_kind.back(), ranks);
    }
    out << "\n";
  }
  if (groups.empty()) {
    out << "collectives: none on one rank; launch with mpirun -np N (one rank per GPU) to measure "
           "NCCL\n";
  }
  out << "total        " << points.size() << " points\n";
  if (!estimate) {
    out << "estimated duration: give --cluster FILE (hardware/clusters/) for an estimate from its "
           "GPU's calibrated "
           "model\n";
    return;
  }
  for (size_t kind = 0; kind < 5; ++kind) {
    if (estimate->duration.kind_points[kind] == 0) continue;
    out << Formatted("%-12s %s\n", kKindNames[kind],
                     ApproxSeconds(estimate->duration.kind_s[kind]).c_str());
  }
  out << "estimated duration: " << ApproxSeconds(estimate->duration.total_s) << " ("
      << Assumes(*estimate) << ")\n";
}

nlohmann::ordered_json SweepPlanJson(const std::vector<ProbePoint>& points,
                                     const std::vector<ProbeGroup>& groups,
                                     const std::optional<SweepEstimate>& estimate) {
  static const char* kNames[] = {"gemm", "attention", "memory", "host", "collectives"};
  auto ranks = [](ProbeGroup) { return int64_t{0}; };
  nlohmann::ordered_json j;
  j["schema"] = "loom.probe-plan/1";
  j["total_points"] = points.size();
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (size_t kind = 0; kind < 5; ++kind) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const ProbePoint& p : points) {
      if (p.index() == kind) keys.push_back(PointKey(p, ranks));
    }
    kinds[kNames[kind]] = {{"points", keys.size()}, {"keys", keys}};
  }
  j["kinds"] = kinds;
  j["collectives_measured"] = !groups.empty();
  j["estimate"] = nullptr;
  if (estimate) {
    nlohmann::ordered_json kind_s = nlohmann::ordered_json::object();
    for (size_t kind = 0; kind < 5; ++kind)
      kind_s[kKindNames[kind]] = estimate->duration.kind_s[kind];
    j["estimate"] = {{"kind_s", kind_s},
                     {"total_s", estimate->duration.total_s},
                     {"gpu", estimate->gpu_file},
                     {"assumes", Assumes(*estimate)}};
  }
  return j;
}

void PrintProbeReport(const ProbeSummary& summary, std::ostream& out) {
  const Profile& p = summary.profile;
  out << "loom probe: " << p.device.name << ", driver " << p.driver_version << ", CUDA "
      << p.cuda_version;
  for (const auto& [name, version] : p.library_versions) out << ", " << name << " " << version;
  out << "\n"
      << summary.measured << " points measured, " << summary.failed << " failed, "
      << summary.resumed << " already in the profile";
  if (summary.abandoned > 0) out << ", " << summary.abandoned << " abandoned after a hang";
  out << "\n\n";
  const std::map<std::string, ClassBest> classes = BestByClass(p);
  if (!classes.empty()) {
    out << Formatted("%-22s %6s %12s  %s\n", "class", "points", "best", "at");
    for (const auto& [name, c] : classes) {
      out << Formatted("%-22s %6lld %8.1f %-7s %s\n", name.c_str(),
                       static_cast<long long>(c.measured), c.best, c.unit.c_str(), c.point.c_str());
    }
    out << "\n";
  }
  std::map<std::pair<int, int>, std::vector<CollectiveSample>> tables;
  for (const CollectiveSample& c : p.collectives) {
    tables[{static_cast<int>(c.group), static_cast<int>(c.collective)}].push_back(c);
  }
  for (const auto& [key, rows] : tables)
    out << NcclTestsTable(rows, p.hosts, p.device.name) << "\n";
  if (!p.failures.empty()) {
    out << p.failures.size() << " points could not be measured:\n";
    for (const ProbeFailure& f : p.failures) out << "  " << f.point << ": " << f.error << "\n";
  }
}

nlohmann::ordered_json ProbeReportJson(const ProbeSummary& summary,
                                       const std::string& profile_path) {
  nlohmann::ordered_json j;
  j["schema"] = "loom.probe/1";
  j["profile"] = profile_path;
  j["planned"] = summary.planned;
  j["resumed"] = summary.resumed;
  j["measured"] = summary.measured;
  j["failed"] = summary.failed;
  j["abandoned"] = summary.abandoned;
  j["hangs"] = summary.hangs;
  j["classes"] = nlohmann::ordered_json::array();
  for (const auto& [name, c] : BestByClass(summary.profile)) {
    j["classes"].push_back({{"class", name},
                            {"measured", c.measured},
                            {"best", c.best},
                            {"unit", c.unit},
                            {"best_point", c.point}});
  }
  return j;
}

}  // namespace loom
