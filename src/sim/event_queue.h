#ifndef LOOM_SIM_EVENT_QUEUE_H_
#define LOOM_SIM_EVENT_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/sim_time.h"

namespace loom {

// The engine's pending events: a binary min-heap over one flat vector, ordered by
// (time, sequence number). The sequence number counts Push() calls, so events at equal times pop
// in the order they were pushed: ties are FIFO and every run is deterministic.
class EventQueue {
 public:
  struct Event {
    SimTime time;
    uint64_t sequence;
    int32_t payload;  // what happens; the engine stores a task id
  };

  // Pre-sizes the heap so that up to |events| pending events need no allocation.
  void Reserve(size_t events) { heap_.reserve(events); }

  void Push(SimTime time, int32_t payload) {
    heap_.push_back({time, next_sequence_++, payload});
    std::push_heap(heap_.begin(), heap_.end(), Later);
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  // REQUIRES: !empty().
  const Event& top() const { return heap_.front(); }

  // Removes and returns the earliest event.
  // REQUIRES: !empty().
  Event Pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    const Event event = heap_.back();
    heap_.pop_back();
    return event;
  }

 private:
  // std::*_heap keep the greatest element first; "greatest" here is the earliest event.
  static bool Later(const Event& a, const Event& b) {
    return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;
  }

  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace loom

#endif  // LOOM_SIM_EVENT_QUEUE_H_
