#ifndef LOOM_TESTS_PROBE_FAKE_BENCHES_H_
#define LOOM_TESTS_PROBE_FAKE_BENCHES_H_

#include <functional>
#include <string>
#include <vector>

#include "device/launcher.h"
#include "probe/bench.h"

namespace loom::testing {

// A GPU whose kernels take a time computed from their shape: GEMMs at 500 TFLOP/s plus 5 us,
// memory-bound kernels at 2 TB/s, attention 100 us, host copies at 25 GB/s, launches 3 us. The
// repeats spread +-10 % around that time so percentiles differ from the median.
class FakeKernelBench : public KernelBench {
 public:
  DeviceFacts Facts() override;
  Result<std::vector<double>> TimeGemm(const GemmShape& shape,
                                       const BenchSettings& settings) override;
  Result<std::vector<double>> TimeAttention(const AttentionShape& shape,
                                            const BenchSettings& settings) override;
  Result<std::vector<double>> TimeMemory(MemoryKernel kernel, int64_t bytes,
                                         const BenchSettings& settings) override;
  Result<std::vector<double>> TimeHost(HostMeasure measure, int64_t bytes,
                                       const BenchSettings& settings) override;

  int calls = 0;
  // Called before every measurement with the number of measurements so far; a test throws from it
  // to stand for the process being killed.
  std::function<void(int)> before_each;
  // fp8 GEMMs fail as on a GPU without fp8 tensor cores; GEMMs with m above this run out of memory.
  bool fp8_unsupported = true;
  int64_t out_of_memory_above_m = int64_t{1} << 40;

 private:
  Result<std::vector<double>> Spread(double us, const BenchSettings& settings);
};

// NCCL over groups of known sizes: a collective moves its bus bytes at 100 GB/s plus 10 us.
// A point of |hang_collective| at |hang_bytes| times out as a hung NCCL operation does.
class FakeCollectiveBench : public CollectiveBench {
 public:
  Result<CollectiveTimes> Time(const CollectivePoint& point, const BenchSettings& settings,
                               double timeout_s) override;

  int calls = 0;
  ProfiledCollective hang_collective = ProfiledCollective::kAllReduce;
  int64_t hang_bytes = -1;
  std::vector<ProbeGroup> aborted;
};

// Rank 0 of |hosts|.size() ranks whose other ranks behave like it (MaxOverRanks returns the value).
class FakeLauncher : public Launcher {
 public:
  explicit FakeLauncher(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {}
  int Rank() const override { return 0; }
  int Size() const override { return static_cast<int>(hosts_.size()); }
  const std::vector<std::string>& Hosts() const override { return hosts_; }
  Status Broadcast(void*, int64_t, int) override { return Status::Ok(); }
  Result<double> MaxOverRanks(double value) override { return value; }
  Status Barrier() override {
    ++barriers;
    return Status::Ok();
  }
  int barriers = 0;

 private:
  std::vector<std::string> hosts_;
};

}  // namespace loom::testing

#endif  // LOOM_TESTS_PROBE_FAKE_BENCHES_H_
