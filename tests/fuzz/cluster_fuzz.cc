// Fuzzes the cluster file reader (LoadClusterSpec, spec/cluster.h), which also reads the GPU file
// the cluster names ("../gpus/..." resolves to the shipped GPU files), then what `loom plan`
// derives from a cluster: its size and tensor-parallel degrees.

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "spec/cluster.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = loom::fuzz::WriteInput("hardware/clusters", "fuzz.json", data, size);
  loom::Result<loom::ClusterSpec> cluster = loom::LoadClusterSpec(path);
  if (!cluster.ok()) return loom::fuzz::Rejected(cluster.status());
  (void)cluster->TotalGpus();
  (void)cluster->TensorParallelDegrees();
  return 0;
}
