// Runs under mpirun (not GoogleTest: every rank is a process of one MPI job) and checks the MPI
// launcher against what Open MPI's environment says and against the other ranks:
//   mpirun -np 2 --oversubscribe mpi_launcher_check
// Prints "ok" and exits 0 on every rank, or prints the first failure and exits 1.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "device/mpi_launcher.h"

namespace loom {
namespace {

// The size Open MPI's mpirun gives every rank, or -1 outside it.
int SizeFromEnvironment() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size == nullptr ? -1 : std::atoi(size);
}

Status CheckShape(const Launcher& launcher) {
  const int env_size = SizeFromEnvironment();
  if (env_size < 1)
    return Status::InvalidArgument("OMPI_COMM_WORLD_SIZE is not set: run this under mpirun");
  if (launcher.Size() != env_size) {
    return Status::Internal("Size() is " + std::to_string(launcher.Size()) +
                            ", OMPI_COMM_WORLD_SIZE is " + std::to_string(env_size));
  }
  if (launcher.Rank() < 0 || launcher.Rank() >= launcher.Size()) {
    return Status::Internal("Rank() " + std::to_string(launcher.Rank()) + " is outside [0, " +
                            std::to_string(launcher.Size()) + ")");
  }
  const std::vector<std::string>& hosts = launcher.Hosts();
  if (static_cast<int>(hosts.size()) != launcher.Size()) {
    return Status::Internal("Hosts() has " + std::to_string(hosts.size()) + " names for " +
                            std::to_string(launcher.Size()) + " ranks");
  }
  for (const std::string& host : hosts) {
    // Every rank of this check runs on this machine.
    if (host.empty() || host != hosts[0]) {
      return Status::Internal("Hosts() differ on one machine: '" + hosts[0] + "' and '" + host +
                              "'");
    }
  }
  return Status::Ok();
}

// A 128-byte buffer, the size of an ncclUniqueId, filled on rank 0 only, must arrive whole.
Status CheckBroadcast(Launcher& launcher) {
  std::vector<unsigned char> id(128, 0);
  auto pattern = [](size_t i) { return static_cast<unsigned char>((i * 37 + 11) % 251 + 1); };
  if (launcher.Rank() == 0) {
    for (size_t i = 0; i < id.size(); ++i) id[i] = pattern(i);
  }
  LOOM_RETURN_IF_ERROR(launcher.Broadcast(id.data(), static_cast<int64_t>(id.size()), 0));
  for (size_t i = 0; i < id.size(); ++i) {
    if (id[i] != pattern(i)) {
      return Status::Internal("Broadcast: byte " + std::to_string(i) + " is " +
                              std::to_string(id[i]) + ", rank 0 sent " +
                              std::to_string(pattern(i)));
    }
  }
  return Status::Ok();
}

Status CheckMax(Launcher& launcher) {
  Result<double> max = launcher.MaxOverRanks(static_cast<double>(launcher.Rank()));
  if (!max.ok()) return max.status();
  if (*max != launcher.Size() - 1) {
    return Status::Internal("MaxOverRanks(rank) is " + std::to_string(*max) + ", expected " +
                            std::to_string(launcher.Size() - 1));
  }
  return launcher.Barrier();
}

Status CheckLauncher() {
  if (!StartedByMpiLauncher())
    return Status::Internal("StartedByMpiLauncher() is false under mpirun");
  Result<std::unique_ptr<Launcher>> launcher = MakeMpiLauncher();
  if (!launcher.ok()) return launcher.status();
  Launcher& mpi = *launcher.value();
  LOOM_RETURN_IF_ERROR(CheckShape(mpi));
  LOOM_RETURN_IF_ERROR(CheckBroadcast(mpi));
  return CheckMax(mpi);
}

}  // namespace
}  // namespace loom

int main() {
  const loom::Status status = loom::CheckLauncher();
  if (!status.ok()) {
    std::fprintf(stderr, "mpi_launcher_check: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
