#include "program/comparison.h"

#include <limits>

namespace loom {

Comparison CompareValues(double predicted, double measured) {
  Comparison c;
  c.predicted = predicted;
  c.measured = measured;
  if (predicted != 0) {
    c.error_pct = 100.0 * (measured - predicted) / predicted;
  } else if (measured != 0) {
    c.error_pct = std::numeric_limits<double>::infinity();
  }
  return c;
}

}  // namespace loom
