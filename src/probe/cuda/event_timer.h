#ifndef LOOM_PROBE_CUDA_EVENT_TIMER_H_
#define LOOM_PROBE_CUDA_EVENT_TIMER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include <cuda_runtime.h>

#include "core/status.h"
#include "probe/bench.h"

namespace loom::cuda {

// Runs |launch|(i) settings.warmup times untimed, then settings.repeats times, each between two
// CUDA events recorded on |stream|, and returns each timed run's milliseconds as microseconds.
// |launch| enqueues one run on |stream| (i counts runs from 0, warm-up included, so that the
// caller can rotate input buffers by it) and returns its Status; the first error stops the loop
// and is returned. Synchronises |stream| before returning.
Result<std::vector<double>> TimeOnStream(cudaStream_t stream,
                                         const std::function<Status(int64_t)>& launch,
                                         const BenchSettings& settings);

}  // namespace loom::cuda

#endif  // LOOM_PROBE_CUDA_EVENT_TIMER_H_
