#include "device/cuda/nccl_buffers.h"

namespace loom::cuda {

Result<CollectiveBuffers> BuffersOf(ProfiledCollective collective, int64_t size_bytes, int ranks) {
  const std::string name(kProfiledCollectiveNames.Name(collective));
  if (ranks < 1 || size_bytes < 1) {
    return Status::InvalidArgument(name + " of " + std::to_string(size_bytes) + " B over " +
                                   std::to_string(ranks) +
                                   " ranks: the size and the ranks must be at least 1");
  }
  const int64_t element_bytes = BytesPerElement(Dtype::kFp32);
  const int64_t elements = size_bytes / element_bytes;
  CollectiveBuffers b;
  int64_t least_bytes = element_bytes;
  switch (collective) {
    case ProfiledCollective::kAllReduce:
    case ProfiledCollective::kBroadcast:
    case ProfiledCollective::kSendRecv:
      b.count = b.send_count = b.recv_count = elements;
      break;
    case ProfiledCollective::kAllGather:
      b.count = b.send_count = b.in_place_send_offset = elements / ranks;
      b.recv_count = b.count * ranks;
      least_bytes *= ranks;
      break;
    case ProfiledCollective::kReduceScatter:
      b.count = b.recv_count = b.in_place_recv_offset = elements / ranks;
      b.send_count = b.count * ranks;
      least_bytes *= ranks;
      break;
    case ProfiledCollective::kAllToAll:
      b.count = elements / ranks;
      b.send_count = b.recv_count = b.count * ranks;
      least_bytes *= ranks;
      break;
  }
  if (b.count < 1) {
    return Status::Unimplemented(
        name + " of " + std::to_string(size_bytes) + " B over " + std::to_string(ranks) +
        " ranks: smaller than one fp32 element per rank; measure it from " +
        std::to_string(least_bytes) + " B");
  }
  b.bytes = element_bytes * std::max(b.send_count, b.recv_count);
  return b;
}

}  // namespace loom::cuda
