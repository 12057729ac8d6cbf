#include "cli/goodput_output.h"

#include <iomanip>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "core/formatted.h"

namespace loom {
namespace {

nlohmann::ordered_json OrNull(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// "2.83 s", or what is missing for it.
std::string Seconds(const std::optional<double>& value, const char* missing_key) {
  if (value) return Fixed(*value, *value < 100 ? 2 : 0) + " s";
  return std::string("unknown (no reliability.") + missing_key + ")";
}

}  // namespace

void PrintGoodput(const GoodputEstimate& e, double tokens_per_s, const ClusterSpec& cluster,
                  std::ostream& out) {
  const auto row = [&out](const char* name) -> std::ostream& {
    return out << std::left << std::setw(22) << name;
  };
  out << "\ngoodput (failures, checkpoints and restarts; " << ClusterRef(cluster)
      << " reliability)\n";
  const JobFailures& f = e.failures;
  row("failures") << Counted(f.gpus, "GPU") << ", " << Counted(f.nodes, "node") << ", "
                  << Counted(f.nics, "NIC") << ": " << Fixed(f.failures_per_day, 2)
                  << " per day, MTBF " << Fixed(e.mtbf_s / 3600, 2) << " h\n";
  row("checkpoint") << HumanBytes(static_cast<double>(e.checkpoint_bytes))
                    << " (weights and optimizer states): write "
                    << Seconds(e.checkpoint_write_s, "checkpoint_write_GBps") << ", read "
                    << Seconds(e.checkpoint_read_s, "checkpoint_read_GBps") << "\n";
  if (e.daly_interval_s) {
    row("checkpoint every") << Fixed(*e.daly_interval_s / 60, 1) << " min of training (Daly; Young "
                            << Fixed(*e.young_interval_s / 60, 1) << " min)\n";
  }
  if (e.goodput) {
    row("goodput") << Percent(*e.goodput)
                   << " of wall time trains: " << HumanCount(tokens_per_s * *e.goodput)
                   << " effective tokens/s (recovery " << Fixed(*e.recovery_s, 0)
                   << " s per failure)\n";
    return;
  }
  row("goodput") << "unknown: " << MissingReliabilityKeyMessage(cluster, e.missing.front()) << "\n";
}

nlohmann::ordered_json GoodputJson(const GoodputEstimate& e, double tokens_per_s,
                                   const ClusterSpec& cluster) {
  nlohmann::ordered_json missing = nlohmann::ordered_json::array();
  for (const std::string& key : e.missing) missing.push_back("reliability." + key);
  nlohmann::ordered_json j;
  j["gpus"] = e.failures.gpus;
  j["nodes"] = e.failures.nodes;
  j["nics"] = e.failures.nics;
  j["failures_per_day"] = e.failures.failures_per_day;
  j["mtbf_s"] = e.mtbf_s;
  j["checkpoint_bytes"] = e.checkpoint_bytes;
  j["checkpoint_write_s"] = OrNull(e.checkpoint_write_s);
  j["checkpoint_read_s"] = OrNull(e.checkpoint_read_s);
  j["young_interval_s"] = OrNull(e.young_interval_s);
  j["daly_interval_s"] = OrNull(e.daly_interval_s);
  j["recovery_s"] = OrNull(e.recovery_s);
  j["goodput"] = OrNull(e.goodput);
  j["effective_tokens_per_s"] =
      e.goodput ? nlohmann::ordered_json(tokens_per_s * *e.goodput) : nullptr;
  j["missing_keys"] = missing;
  j["source"] = cluster.reliability ? cluster.reliability->source : std::string();
  return j;
}

Status ApplyRestartTime(std::optional<double> restart_s, ClusterSpec& cluster) {
  if (!restart_s) return Status::Ok();
  if (!cluster.reliability) {
    return Status::InvalidArgument(
        "--restart-s: " + ClusterRef(cluster) +
        " has no \"reliability\" object (failure rates, checkpoint bandwidths) for a restart time "
        "to complete; add one (hardware/README.md, Reliability), or drop --restart-s");
  }
  cluster.reliability->restart_s = *restart_s;
  return Status::Ok();
}

}  // namespace loom
