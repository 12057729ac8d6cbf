// Runs RunProbe on real MPI ranks with fake GPUs (not GoogleTest: every rank is a process of one
// MPI job): the ranks agree on the points a resumed profile skips, on the collectives' outcome
// when only one rank fails, and only rank 0 writes.
//   mpirun -np 2 --oversubscribe probe_runner_mpi_check PROFILE
// Prints "ok" and exits 0 on every rank, or prints the first failure and exits 1.

#include <cstdio>
#include <string>
#include <vector>

#include "device/mpi_launcher.h"
#include "probe/fake_benches.h"
#include "probe/probe_runner.h"

namespace loom {
namespace {

std::vector<ProbePoint> Points() {
  return {GemmShape{1024, 1024, 1024, 1, Dtype::kBf16},
          HostPoint{HostMeasure::kLaunch, 0},
          CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 1024},
          CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 2048},
          CollectivePoint{ProfiledCollective::kAllReduce, ProbeGroup::kWorld, 4096},
          CollectivePoint{ProfiledCollective::kAllGather, ProbeGroup::kWorld, 1024}};
}

#define CHECK(condition, what)                                    \
  do {                                                            \
    if (!(condition)) return Status::Internal(std::string(what)); \
  } while (false)

Status Check(Launcher& launcher, const std::string& path) {
  testing::FakeKernelBench kernels;
  testing::FakeCollectiveBench collectives;
  // The 2 KiB all-reduce hangs on the last rank only: every rank must give up on the group.
  if (launcher.Rank() == launcher.Size() - 1) collectives.hang_bytes = 2048;
  ProbeRunOptions options;
  options.output_path = path;
  options.settings.repeats = 3;
  options.date = "2026-11-22";
  if (launcher.Rank() == 0) std::remove(path.c_str());
  LOOM_RETURN_IF_ERROR(launcher.Barrier());
  Result<ProbeSummary> first =
      RunProbe(Points(), kernels.Facts(), launcher, launcher.Rank() == 0 ? &kernels : nullptr,
               &collectives, options, {});
  if (!first.ok()) return first.status();
  CHECK(first->hangs.size() == 1, "every rank records the hang");
  CHECK(first->abandoned == 2, "the world group's two later points are abandoned on every rank");
  CHECK(collectives.calls == 2, "no rank calls the aborted group again");
  CHECK(kernels.calls == (launcher.Rank() == 0 ? 2 : 0), "kernels run on rank 0 only");
  if (launcher.Rank() == 0) {
    Result<Profile> p = ReadProfile(path);
    if (!p.ok()) return p.status();
    CHECK(p->collectives.size() == 1 && p->collectives[0].ranks == launcher.Size(),
          "one collective of every rank");
    CHECK(p->failures.size() == 1, "the hang is recorded");
    CHECK(launcher.Size() == 1 || p->failures[0].error.find("another rank") != std::string::npos,
          "rank 0 did not hang: its record says another rank failed");
  }
  // Resumed after the network is fixed: every rank skips the same recorded points.
  options.resume = true;
  testing::FakeCollectiveBench fixed;
  Result<ProbeSummary> second =
      RunProbe(Points(), kernels.Facts(), launcher, launcher.Rank() == 0 ? &kernels : nullptr,
               &fixed, options, {});
  if (!second.ok()) return second.status();
  CHECK(second->resumed == 4, "four points were recorded");
  CHECK(fixed.calls == 2, "only the abandoned points are measured again");
  return Status::Ok();
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpirun -np N probe_runner_mpi_check PROFILE\n");
    return 1;
  }
  loom::Result<std::unique_ptr<loom::Launcher>> launcher = loom::MakeMpiLauncher();
  if (!launcher.ok()) {
    std::fprintf(stderr, "MakeMpiLauncher: %s\n", launcher.status().ToString().c_str());
    return 1;
  }
  loom::Status status = loom::Check(**launcher, argv[1]);
  const int rank = (*launcher)->Rank();
  std::printf("rank %d: %s\n", rank, status.ok() ? "ok" : status.ToString().c_str());
  return status.ok() ? 0 : 1;
}
