#ifndef LOOM_DEVICE_LAUNCHER_H_
#define LOOM_DEVICE_LAUNCHER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace loom {

// The processes of one run of `loom probe` or `loom validate` (MPI ranks, or one process alone),
// behind an interface so that what runs over them is tested on a CPU without MPI.
class Launcher {
 public:
  virtual ~Launcher() = default;

  virtual int Rank() const = 0;
  virtual int Size() const = 0;
  // The host name of every rank, in rank order (the same on every rank).
  virtual const std::vector<std::string>& Hosts() const = 0;
  // Copies |bytes| bytes at |data| from |root| to every rank.
  virtual Status Broadcast(void* data, int64_t bytes, int root) = 0;
  // The largest of every rank's |value|.
  virtual Result<double> MaxOverRanks(double value) = 0;
  virtual Status Barrier() = 0;
};

// A launcher of one process, for runs without MPI.
class SingleProcessLauncher : public Launcher {
 public:
  explicit SingleProcessLauncher(std::string host) : hosts_{std::move(host)} {}
  int Rank() const override { return 0; }
  int Size() const override { return 1; }
  const std::vector<std::string>& Hosts() const override { return hosts_; }
  Status Broadcast(void*, int64_t, int) override { return Status::Ok(); }
  Result<double> MaxOverRanks(double value) override { return value; }
  Status Barrier() override { return Status::Ok(); }

 private:
  std::vector<std::string> hosts_;
};

// |rank|'s position among the ranks of its host in |hosts| (one host name per rank, in rank
// order): the GPU it drives is this index modulo the GPUs the host has.
// REQUIRES: 0 <= rank < hosts.size().
int LocalIndex(const std::vector<std::string>& hosts, int rank);

}  // namespace loom

#endif  // LOOM_DEVICE_LAUNCHER_H_
