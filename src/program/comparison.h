#ifndef LOOM_PROGRAM_COMPARISON_H_
#define LOOM_PROGRAM_COMPARISON_H_

#include <cstdint>
#include <string>

namespace loom {

// Predicted against measured, for one quantity.
struct Comparison {
  double predicted = 0;
  double measured = 0;
  // 100 * (measured - predicted) / predicted; 0 when both are 0, and +inf when only predicted is
  // (written as null in JSON).
  double error_pct = 0;
};

// One task class: a task category of the step ("compute", "tp", "pp", "dp", "optimizer", ...),
// summed over the ranks (time each task ran, end - start). Tasks without a category are the
// class "other".
struct ClassComparison {
  std::string name;
  int64_t tasks = 0;
  Comparison seconds;
};

// 100 * (measured - predicted) / predicted, with both values (see Comparison::error_pct).
Comparison CompareValues(double predicted, double measured);

}  // namespace loom

#endif  // LOOM_PROGRAM_COMPARISON_H_
