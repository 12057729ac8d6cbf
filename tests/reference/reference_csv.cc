#include "reference/reference_csv.h"

#include <fstream>
#include <sstream>
#include <utility>

namespace loom {
namespace {

std::vector<std::string> SplitCells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace

Result<CsvTable> ReadReferenceCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the reference table");
  CsvTable table;
  table.file = path;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> cells = SplitCells(line);
    if (table.columns.empty()) {
      table.columns = std::move(cells);
      continue;
    }
    if (cells.size() != table.columns.size()) {
      return Status::InvalidArgument(path + ":" + std::to_string(number) + ": " +
                                     std::to_string(cells.size()) + " cells, but the header has " +
                                     std::to_string(table.columns.size()) + " columns");
    }
    table.rows.push_back(std::move(cells));
  }
  if (table.columns.empty()) return Status::InvalidArgument(path + ": no header line");
  return table;
}

}  // namespace loom
