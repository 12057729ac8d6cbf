#ifndef LOOM_COST_LINEAR_SOLVE_H_
#define LOOM_COST_LINEAR_SOLVE_H_

#include <vector>

namespace loom {

// Solves |a| x = |b| (|a| square, one row per entry of |b|) by Gaussian elimination with partial
// pivoting: the normal equations of the calibration fits' small weighted least squares
// (cost/comm_fit.h, cost/attention_tiles.h). Returns false, leaving |x| unspecified, when |a| is
// singular.
bool SolveLinear(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>* x);

}  // namespace loom

#endif  // LOOM_COST_LINEAR_SOLVE_H_
