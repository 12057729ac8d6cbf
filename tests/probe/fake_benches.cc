#include "probe/fake_benches.h"

#include "probe/statistics.h"

namespace loom::testing {

DeviceFacts FakeKernelBench::Facts() {
  DeviceFacts f;
  f.device.name = "NVIDIA H100 80GB HBM3";
  f.device.sm_count = 132;
  f.device.memory_bytes = int64_t{85} << 30;
  f.device.compute_capability = "9.0";
  f.driver_version = "580.159.04";
  f.cuda_version = "13.0";
  f.library_versions = {{"cublaslt", "13.0.0"}, {"cudnn", "9.19.0"}, {"nccl", "2.28.9"}};
  return f;
}

Result<std::vector<double>> FakeKernelBench::Spread(double us, const BenchSettings& settings) {
  if (before_each) before_each(calls);
  ++calls;
  std::vector<double> times;
  for (int64_t i = 0; i < settings.repeats; ++i) {
    const double offset =
        settings.repeats == 1 ? 0 : 0.2 * static_cast<double>(i) / (settings.repeats - 1) - 0.1;
    times.push_back(us * (1 + offset));
  }
  return times;
}

Result<std::vector<double>> FakeKernelBench::TimeGemm(const GemmShape& g,
                                                      const BenchSettings& settings) {
  if (fp8_unsupported && g.dtype == Dtype::kFp8) {
    ++calls;
    return Status::Unimplemented(
        "fp8 GEMMs need compute capability 8.9 or later; this GPU has 8.0");
  }
  if (g.m > out_of_memory_above_m) {
    ++calls;
    return Status::ResourceExhausted("cudaMalloc failed: out of memory");
  }
  return Spread(5 + 2.0 * g.m * g.n * g.k * g.batch / 500e12 * 1e6, settings);
}

Result<std::vector<double>> FakeKernelBench::TimeAttention(const AttentionShape&,
                                                           const BenchSettings& settings) {
  return Spread(100, settings);
}

Result<std::vector<double>> FakeKernelBench::TimeMemory(MemoryKernel kernel, int64_t bytes,
                                                        const BenchSettings& settings) {
  const MemoryShape traffic = MemoryKernelTraffic(kernel, bytes);
  return Spread(3 + static_cast<double>(traffic.bytes_read + traffic.bytes_written) / 2e12 * 1e6,
                settings);
}

Result<std::vector<double>> FakeKernelBench::TimeHost(HostMeasure measure, int64_t bytes,
                                                      const BenchSettings& settings) {
  return Spread(measure == HostMeasure::kLaunch ? 3 : static_cast<double>(bytes) / 25e9 * 1e6,
                settings);
}

Result<CollectiveTimes> FakeCollectiveBench::Time(const CollectivePoint& point,
                                                  const BenchSettings& settings, double timeout_s) {
  ++calls;
  if (point.collective == hang_collective && point.size_bytes == hang_bytes) {
    aborted.push_back(point.group);
    return Status::DeadlineExceeded(
        std::string(kProfiledCollectiveNames.Name(point.collective)) + " of " +
        std::to_string(point.size_bytes) + " B over group " +
        std::string(kProbeGroupNames.Name(point.group)) + ": did not finish within " +
        std::to_string(static_cast<int>(timeout_s)) + " s and was aborted");
  }
  const double us = 10 + static_cast<double>(point.size_bytes) *
                             CollectiveBusFactor(point.collective, 8) / 100e9 * 1e6;
  CollectiveTimes t;
  t.out_of_place_us.assign(static_cast<size_t>(settings.repeats), us * 1.02);
  t.in_place_us.assign(static_cast<size_t>(settings.repeats), us);
  return t;
}

}  // namespace loom::testing
