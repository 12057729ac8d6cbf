#ifndef LOOM_TESTS_REFERENCE_REFERENCE_CSV_H_
#define LOOM_TESTS_REFERENCE_REFERENCE_CSV_H_

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/status.h"

namespace loom {

// A reference table: '#' comment lines (its provenance), one header line of column names, then
// comma-separated rows; blank lines are skipped. Cells are kept as text ("" for an empty cell).
struct CsvTable {
  std::string file;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// Reads |path|. Errors: NotFound for a missing file; InvalidArgument naming the file and line
// for a table without a header or a row whose cell count differs from the header's.
Result<CsvTable> ReadReferenceCsv(const std::string& path);

// Typed access to one row of a CsvTable. Like JsonReader, a bad cell is recorded (naming the
// file, the row and the column) and a placeholder returned; Finish() reports the first problem.
class RowReader {
 public:
  RowReader(const CsvTable& table, size_t row) : table_(table), row_(row) {}

  std::string Text(std::string_view column) {
    const std::string* cell = Cell(column);
    return cell == nullptr ? std::string() : *cell;
  }
  bool IsEmpty(std::string_view column) {
    const std::string* cell = Cell(column);
    return cell != nullptr && cell->empty();
  }
  int64_t Int(std::string_view column) {
    int64_t value = 0;
    Parse(column, value, "a positive integer");
    if (error_.empty() && value < 1)
      Fail(column, "is " + std::to_string(value) + "; expected a positive integer");
    return value;
  }
  double Number(std::string_view column) {
    double value = 0;
    Parse(column, value, "a number");
    return value;
  }
  Status Finish() const { return error_.empty() ? Status::Ok() : Status::InvalidArgument(error_); }

 private:
  const std::string* Cell(std::string_view column) {
    for (size_t i = 0; i < table_.columns.size(); ++i) {
      if (table_.columns[i] == column) return &table_.rows[row_][i];
    }
    Fail(column, "is not a column of the table; restore its header line");
    return nullptr;
  }
  template <typename T>
  void Parse(std::string_view column, T& value, const char* what) {
    const std::string* cell = Cell(column);
    if (cell == nullptr) return;
    const char* end = cell->data() + cell->size();
    auto [ptr, ec] = std::from_chars(cell->data(), end, value);
    if (ec != std::errc() || ptr != end) Fail(column, "is \"" + *cell + "\"; expected " + what);
  }
  void Fail(std::string_view column, const std::string& problem) {
    if (!error_.empty()) return;
    const std::string& first = table_.rows[row_].front();
    error_ = table_.file + ": row " + std::to_string(row_ + 1) + " (" + first + "), column " +
             std::string(column) + " " + problem;
  }

  const CsvTable& table_;
  size_t row_;
  std::string error_;
};

}  // namespace loom

#endif  // LOOM_TESTS_REFERENCE_REFERENCE_CSV_H_
