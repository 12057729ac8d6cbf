#include "device/launcher.h"

#include <algorithm>

namespace loom {

int LocalIndex(const std::vector<std::string>& hosts, int rank) {
  return static_cast<int>(std::count(hosts.begin(), hosts.begin() + rank, hosts[rank]));
}

}  // namespace loom
