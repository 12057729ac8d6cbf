#ifndef LOOM_COST_CALIBRATION_FILE_H_
#define LOOM_COST_CALIBRATION_FILE_H_

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "spec/gpu_calibration.h"

namespace loom {

// |value| rounded to |digits| significant digits. Fitted values are written with 4: a measurement
// repeated on another day moves them in the third digit, so more digits would claim a precision
// they do not have.
double RoundSignificant(double value, int digits);

// |file| (a GPU or cluster file's JSON) with its "calibration" object updated: each key of
// |values| (an object) replaced where it stands or added after the existing keys, each key of
// |removed| deleted (a key the new values make wrong, such as a fixed GEMM tile), the other keys
// kept, and "source" set to |source| and moved last. When keys are kept and the old calibration
// had a source, the new one ends with "Kept from the earlier calibration (KEYS): OLD SOURCE", so
// every value in the file still says where it comes from; removed keys are not kept, so they are
// not named. A new "calibration" goes before "sources", or last; every other key of |file| keeps
// its place.
// REQUIRES: no key is in both |values| and |removed|.
nlohmann::ordered_json WithCalibration(const nlohmann::ordered_json& file,
                                       const nlohmann::ordered_json& values,
                                       const std::string& source,
                                       const std::vector<std::string>& removed = {});

// The "attention_tiles" object of |calibration| (each pass that has tiles), every field to 4
// significant digits, as ReadComputeCalibration reads it.
nlohmann::ordered_json AttentionTilesJson(const ComputeCalibration& calibration);

// Adds the file name of |path| (its last component) to |fitted_on|, a calibration's list of the
// files it was fitted on, unless it is there already.
void AddFittedOn(const std::string& path, std::vector<std::string>* fitted_on);

}  // namespace loom

#endif  // LOOM_COST_CALIBRATION_FILE_H_
