// Fuzzes the profile reader (ReadProfile, cost/profile.h), then what `loom fit --gpu` does with a
// profile: its summary, the GPU check and the compute-model fit against the shipped H100 (for
// profiles of a few samples).

#include <cstddef>
#include <cstdint>

#include "cost/profile.h"
#include "cost/profile_fit.h"
#include "fuzz_input.h"
#include "spec/cluster.h"

namespace {

constexpr size_t kMaxFittedSamples = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("hardware/profiles", "fuzz.json", data, size);
  loom::Result<loom::Profile> profile = loom::ReadProfile(path);
  if (!profile.ok()) return loom::fuzz::Rejected(profile.status());
  (void)loom::ProfileText(*profile);
  (void)loom::RecordedPointKeys(*profile);
  static const loom::Result<loom::GpuSpec> gpu =
      loom::LoadGpuSpec(loom::fuzz::Shipped("hardware/gpus/h100-sxm5-80gb.json"));
  if (!gpu.ok()) return loom::fuzz::Rejected(gpu.status());
  (void)loom::CheckProfiledGpu(*profile, *gpu);
  // The fit of a full profile (hundreds of samples) takes a quarter of a second under the
  // sanitizers; small ones reach the same code a thousand times faster.
  if (!profile->samples.empty() && profile->samples.size() <= kMaxFittedSamples) {
    (void)loom::FitComputeCalibration(profile->samples, *gpu);
  }
  return 0;
}
