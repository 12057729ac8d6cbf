#include "probe/cuda/event_timer.h"

#include <algorithm>
#include <memory>
#include <type_traits>

#include "device/cuda/cuda_check.h"
#include "probe/bench.h"

namespace loom::cuda {
namespace {

struct EventDestroyer {
  void operator()(std::remove_pointer_t<cudaEvent_t>* event) const { cudaEventDestroy(event); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroyer>;

Result<Event> MakeEvent() {
  cudaEvent_t event = nullptr;
  LOOM_CUDA(cudaEventCreate(&event));
  return Event(event);
}

// Enqueues the warm-up runs, then each timed run between its pair of events, all back to back:
// the host never waits for the GPU in between, so the GPU runs the repeats without gaps.
Status EnqueueRuns(cudaStream_t stream, const std::function<Status(int64_t)>& launch,
                   const BenchSettings& settings, const std::vector<Event>& starts,
                   const std::vector<Event>& stops) {
  for (int64_t i = 0; i < settings.warmup; ++i) LOOM_RETURN_IF_ERROR(launch(i));
  for (int64_t r = 0; r < settings.repeats; ++r) {
    LOOM_CUDA(cudaEventRecord(starts[r].get(), stream));
    LOOM_RETURN_IF_ERROR(launch(settings.warmup + r));
    LOOM_CUDA(cudaEventRecord(stops[r].get(), stream));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> TimeOnStream(cudaStream_t stream,
                                         const std::function<Status(int64_t)>& launch,
                                         const BenchSettings& settings) {
  std::vector<Event> starts, stops;
  for (int64_t r = 0; r < settings.repeats; ++r) {
    LOOM_ASSIGN_OR_RETURN(Event start, MakeEvent());
    LOOM_ASSIGN_OR_RETURN(Event stop, MakeEvent());
    starts.push_back(std::move(start));
    stops.push_back(std::move(stop));
  }
  Status enqueued = EnqueueRuns(stream, launch, settings, starts, stops);
  // Synchronise even after a failed launch: the runs already enqueued must finish before the
  // caller frees their buffers.
  Status synced =
      CheckCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize(stream)", __FILE__, __LINE__);
  LOOM_RETURN_IF_ERROR(enqueued);
  LOOM_RETURN_IF_ERROR(synced);
  std::vector<double> times_us;
  times_us.reserve(starts.size());
  for (size_t r = 0; r < starts.size(); ++r) {
    float ms = 0;
    LOOM_CUDA(cudaEventElapsedTime(&ms, starts[r].get(), stops[r].get()));
    times_us.push_back(static_cast<double>(ms) * 1000.0);
  }
  return times_us;
}

}  // namespace loom::cuda
