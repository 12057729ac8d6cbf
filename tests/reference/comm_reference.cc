#include "reference/comm_reference.h"

#include <fstream>
#include <map>
#include <optional>
#include <utility>

#include "cost/comm_fit.h"
#include "cost/comm_model.h"
#include "reference/reference_csv.h"

namespace loom {
namespace {

// The first data line of a table: its '#' lines and the header come before it. Rows are numbered
// from it for messages ("file:line"), blank lines aside.
int FirstDataLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line[0] != '#') return number + 1;  // the header, then the first row
  }
  return number + 1;
}

// An nccl-tests row of |bytes| at |busbw| of |kind| over |ranks| ranks, timed in place.
NcclTestsRow BusbwRow(int64_t bytes, double busbw_GBps, int64_t ranks, std::string where,
                      CollectiveKind kind = CollectiveKind::kAllReduce) {
  const double factor = BusBandwidthFactor(kind, ranks);
  NcclTestsRow row;
  row.size_bytes = bytes;
  const double time_us = static_cast<double>(bytes) * factor / (busbw_GBps * 1e3);
  row.in_place = NcclTestsTiming{time_us, busbw_GBps / factor, busbw_GBps};
  row.where = std::move(where);
  return row;
}

// The clusters of NVLink 4 nodes, whose single-node runs calibrate each other; HGX H200 borrows the
// DGX H100 runs beyond one node too.
bool IsHopper(std::string_view cluster) { return cluster == "dgx-h100" || cluster == "hgx-h200"; }

Status AddSingleNode(const std::string& tables_dir, std::string_view cluster,
                     std::vector<CommReferenceRun>* out) {
  const std::string path = tables_dir + "/" + std::string(kSingleNodeAllReduceTable);
  Result<CsvTable> table = ReadReferenceCsv(path);
  if (!table.ok()) return table.status();
  // The table's columns are per GPU: a100_busbw_GBps, h100_busbw_GBps.
  const std::string column = cluster == "dgx-a100" ? "a100_busbw_GBps"
                             : IsHopper(cluster)   ? "h100_busbw_GBps"
                                                   : "";
  if (column.empty()) return Status::Ok();
  constexpr int64_t kRanks = 8;
  CommReferenceRun run{std::string(kSingleNodeAllReduceTable),
                       "azure_ai_benchmarking_guide",
                       "azure_ai_benchmarking_guide",
                       {}};
  run.run.file = path;
  run.run.test = NcclTest::kAllReduce;
  run.run.ranks = kRanks;
  run.run.nodes = 1;
  const int first = FirstDataLine(path);
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const int64_t bytes = r.Int("size_bytes");
    const double busbw = r.Number(column);
    LOOM_RETURN_IF_ERROR(r.Finish());
    run.run.rows.push_back(
        BusbwRow(bytes, busbw, kRanks, path + ":" + std::to_string(first + static_cast<int>(i))));
  }
  out->push_back(std::move(run));
  return Status::Ok();
}

Status AddHopperNode(const std::string& tables_dir, std::string_view cluster,
                     std::vector<CommReferenceRun>* out) {
  if (!IsHopper(cluster)) return Status::Ok();
  const std::string path = tables_dir + "/" + std::string(kHopperNodeTable);
  Result<CsvTable> table = ReadReferenceCsv(path);
  if (!table.ok()) return table.status();
  const int first = FirstDataLine(path);
  std::map<std::string, size_t> index;  // "source ranks collective settings" -> position in |out|
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string source = r.Text("source");
    const int64_t ranks = r.Int("ranks");
    const std::string collective = r.Text("collective");
    const std::string settings = r.Text("settings");
    const int64_t bytes = r.Int("size_bytes");
    const double busbw = r.Number("busbw_GBps");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const std::string where = path + ":" + std::to_string(first + static_cast<int>(i));
    const std::optional<NcclTest> test = kNcclTestNames.Parse(collective + "_perf");
    const std::optional<CollectiveKind> kind = test ? CollectiveOf(*test) : std::nullopt;
    if (!kind || *kind == CollectiveKind::kAllToAll) {
      return Status::InvalidArgument(where + ": collective is \"" + collective +
                                     "\"; use all_reduce, all_gather or reduce_scatter");
    }
    if (settings != "default" && settings != "nvls_disabled") {
      return Status::InvalidArgument(where + ": settings is \"" + settings +
                                     "\"; use default or nvls_disabled");
    }
    if (ranks < 2 || ranks > 8) {
      return Status::InvalidArgument(where + ": ranks is " + std::to_string(ranks) +
                                     "; the table is of one 8-GPU node");
    }
    const std::string key =
        source + " " + std::to_string(ranks) + " " + collective + " " + settings;
    auto [it, added] = index.try_emplace(key, out->size());
    if (added) {
      CommReferenceRun run{std::string(kHopperNodeTable), source, source, {}};
      run.run.file = path;
      run.run.test = *test;
      run.run.ranks = ranks;
      run.run.nodes = 1;
      run.run.nvls_disabled = settings == "nvls_disabled";
      out->push_back(std::move(run));
    }
    (*out)[it->second].run.rows.push_back(BusbwRow(bytes, busbw, ranks, where, *kind));
  }
  return Status::Ok();
}

Status AddMultiNode(const std::string& tables_dir, std::string_view cluster,
                    std::vector<CommReferenceRun>* out) {
  const std::string path = tables_dir + "/" + std::string(kMultiNodeAllReduceTable);
  Result<CsvTable> table = ReadReferenceCsv(path);
  if (!table.ok()) return table.status();
  const int first = FirstDataLine(path);
  std::map<std::string, size_t> index;  // source id -> position in |out|
  for (size_t i = 0; i < table->rows.size(); ++i) {
    RowReader r(*table, i);
    const std::string source = r.Text("source");
    const std::string row_cluster = r.Text("cluster");
    const int64_t nodes = r.Int("nodes");
    const int64_t per_node = r.Int("ranks_per_node");
    const int64_t bytes = r.Int("size_bytes");
    const double busbw = r.Number("busbw_GBps");
    const std::string settings = r.Text("settings");
    const std::string site = r.Text("site");
    LOOM_RETURN_IF_ERROR(r.Finish());
    const std::string where = path + ":" + std::to_string(first + static_cast<int>(i));
    if (settings != "default" && settings != "tuned" && settings != "forced_ring") {
      return Status::InvalidArgument(
          where + ": settings is \"" + settings +
          "\"; use default, tuned or forced_ring (the table's header says which is which)");
    }
    // HGX H200 has no multi-node table: its runs are DGX H100's (AddHopperNode).
    const bool same =
        row_cluster == cluster || (cluster == "hgx-h200" && row_cluster == "dgx-h100");
    if (!same || settings != "default") continue;
    auto [it, added] = index.try_emplace(source, out->size());
    if (added) {
      CommReferenceRun run{std::string(kMultiNodeAllReduceTable), source, site, {}};
      run.run.file = path;
      run.run.test = NcclTest::kAllReduce;
      run.run.ranks = nodes * per_node;
      run.run.nodes = nodes;
      out->push_back(std::move(run));
    }
    NcclTestsRun& run = (*out)[it->second].run;
    if ((*out)[it->second].site != site) {
      return Status::InvalidArgument(where + ": source " + source +
                                     " changes its site; one run ran on one site");
    }
    if (*run.ranks != nodes * per_node || *run.nodes != nodes) {
      return Status::InvalidArgument(
          where + ": source " + source +
          " changes its node or rank count; give each run its own source id");
    }
    run.rows.push_back(BusbwRow(bytes, busbw, *run.ranks, where));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<CommReferenceRun>> LoadCommReferenceRuns(const std::string& tables_dir,
                                                            std::string_view cluster) {
  std::vector<CommReferenceRun> runs;
  LOOM_RETURN_IF_ERROR(AddSingleNode(tables_dir, cluster, &runs));
  LOOM_RETURN_IF_ERROR(AddHopperNode(tables_dir, cluster, &runs));
  LOOM_RETURN_IF_ERROR(AddMultiNode(tables_dir, cluster, &runs));
  return runs;
}

Result<std::vector<AllReduceCase>> LoadMultiNodeAllReduceCases(const ReferencePaths& paths,
                                                               std::string_view cluster) {
  Result<std::vector<CommReferenceRun>> runs = LoadCommReferenceRuns(paths.tables_dir, cluster);
  if (!runs.ok()) return runs.status();
  std::vector<AllReduceCase> cases;
  for (const CommReferenceRun& r : *runs) {
    if (r.table != kMultiNodeAllReduceTable) continue;
    const int64_t nodes = *r.run.nodes;
    const int64_t per_node = *r.run.ranks / nodes;
    Result<ClusterSpec> spec =
        LoadClusterSpec(paths.clusters_dir + "/" + std::string(cluster) + ".json", nodes);
    if (!spec.ok()) return spec.status();
    if (per_node > spec->gpus_per_node) {
      return Status::InvalidArgument(r.run.file + ": source " + r.source + " has " +
                                     std::to_string(per_node) + " ranks per node but " +
                                     spec->file + " has " + std::to_string(spec->gpus_per_node) +
                                     " GPUs per node");
    }
    // The nccl-tests size convention of the table starts at 16 MiB, like the single-node table.
    constexpr int64_t kMinBytes = int64_t{16} << 20;
    for (const NcclTestsRow& row : r.run.rows) {
      if (row.size_bytes < kMinBytes) continue;
      cases.push_back({r.source + " " + std::to_string(nodes) + "x" + std::to_string(per_node) +
                           " " + SizeName(row.size_bytes),
                       *spec, row.size_bytes, row.in_place->busbw_GBps,
                       GroupPlacement{*r.run.ranks, per_node}, r.site});
    }
  }
  return cases;
}

Result<std::vector<AllReduceCase>> LoadHopperNodeCases(const ReferencePaths& paths) {
  Result<std::vector<CommReferenceRun>> runs = LoadCommReferenceRuns(paths.tables_dir, "hgx-h200");
  if (!runs.ok()) return runs.status();
  Result<ClusterSpec> spec = LoadClusterSpec(paths.clusters_dir + "/hgx-h200.json", 1);
  if (!spec.ok()) return spec.status();
  std::vector<AllReduceCase> cases;
  for (const CommReferenceRun& r : *runs) {
    if (r.table != kHopperNodeTable) continue;
    const CollectiveKind kind = *CollectiveOf(r.run.test);
    std::string test(kNcclTestNames.Name(r.run.test));
    test = test.substr(0, test.size() - std::string_view("_perf").size());
    for (const NcclTestsRow& row : r.run.rows) {
      AllReduceCase c{test + " " + std::to_string(*r.run.ranks) + " GPUs" +
                          (r.run.nvls_disabled ? " NVLS off " : " ") + SizeName(row.size_bytes),
                      *spec,
                      row.size_bytes,
                      row.in_place->busbw_GBps,
                      PlaceGroup(*r.run.ranks, 1, spec->gpus_per_node),
                      ""};
      c.kind = kind;
      c.nvls_disabled = r.run.nvls_disabled;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

Result<CommCalibration> FitReferenceCommCalibration(const std::vector<CommReferenceRun>& runs,
                                                    const ClusterSpec& cluster,
                                                    std::string_view excluded_table,
                                                    std::string_view excluded_site) {
  std::vector<NcclTestsRun> kept;
  for (const CommReferenceRun& r : runs) {
    const bool excluded =
        r.table == excluded_table && (excluded_site.empty() || r.site == excluded_site);
    if (!excluded) kept.push_back(r.run);
  }
  if (kept.empty()) return CommCalibration{};
  ClusterSpec uncalibrated = cluster;
  uncalibrated.calibration = CommCalibration{};
  uncalibrated.nodes = std::nullopt;  // the runs span as many nodes as they ran on
  Result<CommFit> fit = FitCommCalibration(kept, uncalibrated);
  if (!fit.ok()) return fit.status();
  return fit->calibration;
}

}  // namespace loom
