// Fuzzes the framework file reader (LoadFrameworkProfile, spec/framework.h) and its way back to
// JSON, which `loom fit --runs` writes.

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "spec/framework.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("hardware/frameworks", "fuzz.json", data, size);
  loom::Result<loom::FrameworkProfile> framework = loom::LoadFrameworkProfile(path);
  if (!framework.ok()) return loom::fuzz::Rejected(framework.status());
  (void)loom::FrameworkJson(*framework).dump();
  return 0;
}
