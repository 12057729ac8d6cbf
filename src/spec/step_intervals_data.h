#ifndef LOOM_SPEC_STEP_INTERVALS_DATA_H_
#define LOOM_SPEC_STEP_INTERVALS_DATA_H_

#include <string_view>

namespace loom {

// hardware/intervals/step-time.json, embedded at build time (CMake reads the file into
// step_intervals_data.cc; src/spec/CMakeLists.txt).
std::string_view ShippedStepIntervalsText();

}  // namespace loom

#endif  // LOOM_SPEC_STEP_INTERVALS_DATA_H_
