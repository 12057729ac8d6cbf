#ifndef LOOM_DEVICE_CUDA_NCCL_BUFFERS_H_
#define LOOM_DEVICE_CUDA_NCCL_BUFFERS_H_

#include <cstdint>
#include <string>

#include "core/status.h"
#include "op/op.h"

namespace loom::cuda {

// The buffers of NCCL's collectives as nccl-tests sizes them, for the probe's NCCL bench and the
// CUDA executor's collectives: arithmetic only, tested on a CPU.

// The buffers of one rank for a collective point of |size_bytes| (nccl-tests' size column) over a
// group of |ranks|, in fp32 elements, as nccl-tests sizes them (src/*.cu, GetCollByteCount):
//   all_reduce, broadcast: the buffer is the size: count = size/4, sent and received whole.
//   all_gather: the size is the output: each rank sends count = size/4/ranks elements.
//   reduce_scatter: the size is the input: each rank receives count = size/4/ranks elements.
//   all_to_all: each rank sends size/ranks bytes to every peer (count = size/4/ranks per peer).
//   send_recv: each rank sends size/4 elements to the next rank of its group, receives from the
//              previous one.
// A size that is not a multiple of 4 * ranks (4 for the whole-buffer collectives) is rounded down
// to one, as nccl-tests rounds it; |bytes| is the size after rounding.
struct CollectiveBuffers {
  int64_t count = 0;       // the count NCCL is called with: nccl-tests' count column
  int64_t send_count = 0;  // elements of the send buffer out of place
  int64_t recv_count = 0;  // elements of the receive buffer out of place
  // In place one buffer of max(send_count, recv_count) elements serves both: the data sent starts
  // at element key * in_place_send_offset, the data received at key * in_place_recv_offset (key:
  // the rank's position in its group), the offsets NCCL's in-place calls require.
  int64_t in_place_send_offset = 0;
  int64_t in_place_recv_offset = 0;
  int64_t bytes = 0;  // nccl-tests' size column of the rounded point: 4 * max(send, recv count)
};

// Unimplemented when the point holds less than one element per rank (size < 4 * ranks for
// all_gather, reduce_scatter and all_to_all, size < 4 otherwise); InvalidArgument when |ranks| or
// |size_bytes| is below 1.
Result<CollectiveBuffers> BuffersOf(ProfiledCollective collective, int64_t size_bytes, int ranks);

}  // namespace loom::cuda

#endif  // LOOM_DEVICE_CUDA_NCCL_BUFFERS_H_
