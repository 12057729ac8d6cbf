// Fuzzes the GPU file reader (LoadGpuSpec, spec/cluster.h) and the datasheet peaks read from it.

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "fuzz_input.h"
#include "spec/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("hardware/gpus", "fuzz.json", data, size);
  loom::Result<loom::GpuSpec> gpu = loom::LoadGpuSpec(path);
  if (!gpu.ok()) return loom::fuzz::Rejected(gpu.status());
  for (loom::Dtype dtype :
       {loom::Dtype::kBf16, loom::Dtype::kFp16, loom::Dtype::kFp8, loom::Dtype::kFp32}) {
    (void)gpu->PeakTflops(dtype);
  }
  return 0;
}
