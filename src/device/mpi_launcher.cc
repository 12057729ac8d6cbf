#include "device/mpi_launcher.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if LOOM_HAVE_MPI
#include <mpi.h>

#include "device/mpi_check.h"
#endif

namespace loom {

bool StartedByMpiLauncher() {
  // OMPI_COMM_WORLD_SIZE: Open MPI's mpirun; PMI_SIZE: MPICH's Hydra (and srun --mpi=pmi2);
  // PMIX_RANK: any PMIx launcher (Open MPI 5's prterun, srun --mpi=pmix). SLURM_PROCID is set in
  // every srun step, which is how a Slurm job starts loom probe on each GPU; a batch script that
  // runs loom without srun may have it too, and then gets an MPI job of one rank, which is
  // harmless.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int LauncherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank <= INT32_MAX) return static_cast<int>(rank);
  }
  return 0;
}

Result<std::unique_ptr<Launcher>> MakeProcessLauncher() {
  if (StartedByMpiLauncher()) return MakeMpiLauncher();
  char name[256] = {};
  const bool named = gethostname(name, sizeof name - 1) == 0;
  return std::unique_ptr<Launcher>(new SingleProcessLauncher(named ? name : "localhost"));
}

#if LOOM_HAVE_MPI
Status MpiStatus(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return Status::Internal(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                          ": " + std::string(text, static_cast<size_t>(length)));
}

namespace {

// Host names are exchanged as fixed-size arrays, so that one MPI_Allgather moves them all.
constexpr int kHostNameBytes = MPI_MAX_PROCESSOR_NAME;

class MpiLauncher : public Launcher {
 public:
  MpiLauncher() = default;
  MpiLauncher(const MpiLauncher&) = delete;
  MpiLauncher& operator=(const MpiLauncher&) = delete;

  // MPI_Finalize's code is not checked: a destructor cannot return it, and a process that failed
  // to finalize is exiting anyway.
  ~MpiLauncher() override {
    if (initialized_) MPI_Finalize();
  }

  // MPI_Init, then MPI_COMM_WORLD's rank, size and every rank's host name.
  Status Init() {
    LOOM_MPI(MPI_Init(nullptr, nullptr));
    initialized_ = true;
    // The default handler aborts the job on an error; returning it lets every call say what failed.
    LOOM_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    LOOM_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    LOOM_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
    return GatherHosts();
  }

  int Rank() const override { return rank_; }
  int Size() const override { return size_; }
  const std::vector<std::string>& Hosts() const override { return hosts_; }

  Status Broadcast(void* data, int64_t bytes, int root) override {
    if (bytes < 0 || bytes > INT32_MAX) {
      return Status::InvalidArgument("MPI broadcast of " + std::to_string(bytes) +
                                     " bytes: MPI_Bcast takes 0 to 2^31-1 bytes at once");
    }
    LOOM_MPI(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD));
    return Status::Ok();
  }

  Result<double> MaxOverRanks(double value) override {
    double max = 0;
    LOOM_MPI(MPI_Allreduce(&value, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return max;
  }

  Status Barrier() override {
    LOOM_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return Status::Ok();
  }

 private:
  Status GatherHosts() {
    std::vector<char> mine(kHostNameBytes, '\0');
    int length = 0;
    LOOM_MPI(MPI_Get_processor_name(mine.data(), &length));
    std::vector<char> all(static_cast<size_t>(kHostNameBytes) * static_cast<size_t>(size_), '\0');
    LOOM_MPI(MPI_Allgather(mine.data(), kHostNameBytes, MPI_CHAR, all.data(), kHostNameBytes,
                           MPI_CHAR, MPI_COMM_WORLD));
    hosts_.clear();
    for (int r = 0; r < size_; ++r) {
      const char* name = all.data() + static_cast<size_t>(r) * kHostNameBytes;
      size_t name_length = 0;
      while (name_length < static_cast<size_t>(kHostNameBytes) && name[name_length] != '\0')
        ++name_length;
      hosts_.emplace_back(name, name_length);
    }
    return Status::Ok();
  }

  bool initialized_ = false;
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> hosts_;
};

}  // namespace

Result<std::unique_ptr<Launcher>> MakeMpiLauncher() {
  auto launcher = std::make_unique<MpiLauncher>();
  LOOM_RETURN_IF_ERROR(launcher->Init());
  return std::unique_ptr<Launcher>(std::move(launcher));
}

#else

Result<std::unique_ptr<Launcher>> MakeMpiLauncher() {
#if LOOM_SINGLE_PROCESS_BUILD
  return Status::Unimplemented(
      "this is loom-single-process (the GPU bundle's loom), built without MPI: it runs one rank in "
      "one process, "
      "started without mpirun; for several ranks use build/loom, built where MPI is installed "
      "(tools/loom installs "
      "Open MPI), under mpirun");
#else
  return Status::Unimplemented(
      "loom was built without MPI: install Debian's libopenmpi-dev (tools/loom does) and rebuild; "
      "without MPI "
      "loom probe measures one GPU in one process");
#endif
}

#endif

}  // namespace loom
