#ifndef LOOM_TESTS_COST_H100_RUN_H_
#define LOOM_TESTS_COST_H100_RUN_H_

// The committed H100 run (hardware/validation/2026-11-27/), which several cost tests fit and judge
// their models on.

#include <string>

#include <gtest/gtest.h>

#include "cost/profile.h"
#include "spec/cluster.h"

namespace loom {

struct H100Run {
  Profile profile;  // profile.json: the four models' kernels
  Profile grid;     // grid.json: the generic grid, measured back to back after the profile
  GpuSpec gpu;      // gpu.json: the calibration that run's stage 1 fitted
};

// Reads the run; a file that does not read fails the test (call it in ASSERT_NO_FATAL_FAILURE).
inline void LoadH100Run(H100Run* run) {
  const std::string dir = std::string(LOOM_SOURCE_DIR) + "/hardware/validation/2026-11-27/";
  Result<Profile> profile = ReadProfile(dir + "profile.json");
  Result<Profile> grid = ReadProfile(dir + "grid.json");
  ASSERT_TRUE(profile.ok()) << profile.status().message();
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  Result<GpuSpec> gpu = LoadGpuSpec(dir + "gpu.json");
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  *run = {*profile, *grid, *gpu};
}

}  // namespace loom

#endif  // LOOM_TESTS_COST_H100_RUN_H_
