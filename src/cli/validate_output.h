#ifndef LOOM_CLI_VALIDATE_OUTPUT_H_
#define LOOM_CLI_VALIDATE_OUTPUT_H_

#include <ostream>

#include "sim/step_comparison.h"

namespace loom {

// Writes |c| as `loom validate` shows it: a table of predicted, measured and error for the step
// time (the median step, with the range of all steps), bubble fraction, peak memory and one row
// per task class (seconds summed over ranks), then the order check with its examples, e.g.
//                          predicted     measured        error
//   step time                412.3 ms     430.1 ms       +4.3 %   (median of 5 steps, 425.0 ..
//   441.2 ms) bubble fraction            12.1 %       13.0 %       +7.4 % peak
//   memory             61.20 GiB    60.80 GiB       -0.7 % compute                  20.500
//   s     21.100 s       +2.9 %   (task classes: seconds summed over ranks) tp 3.5 ms       4.1 ms
//   +17.1 % order: 0 dependency violations, 0 rendezvous violations, 0 inversions in 1,234 pairs
//     <one line per OrderCheck example>
// An infinite error (nothing predicted, something measured) shows as "n/a".
void PrintStepComparison(const StepComparison& c, std::ostream& out);

}  // namespace loom

#endif  // LOOM_CLI_VALIDATE_OUTPUT_H_
