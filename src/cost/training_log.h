#ifndef LOOM_COST_TRAINING_LOG_H_
#define LOOM_COST_TRAINING_LOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace loom {

// What a training run's log says about its step time (for `loom fit --runs`).
struct TrainingLog {
  enum class Kind { kMegatron, kDeepSpeed };
  Kind kind = Kind::kMegatron;
  // Megatron-LM: "elapsed time per iteration (ms): X" of every logged interval (megatron/training/
  // training.py, training_log), each the mean over --log-interval iterations. DeepSpeed: the
  // "CurrSamplesPerSec=X" of its throughput timer (deepspeed/utils/timer.py, ThroughputTimer).
  std::vector<double> values;
  // Megatron-LM's argument dump ("------------------------ arguments ------------------------",
  // then "  name .......... value" lines): what ran, by argument name. Empty for DeepSpeed.
  std::map<std::string, std::string> arguments;

  // The step time: the median of the logged values after the first (which carries the warm-up:
  // kernel autotuning, allocator growth, compilation). Megatron values are milliseconds per
  // iteration; DeepSpeed's are samples per second over |global_batch| samples a step.
  // Errors: fewer than 2 values, or a DeepSpeed log without |global_batch|.
  Result<double> StepTimeSeconds(int64_t global_batch = 0) const;
};

// Reads a Megatron-LM or DeepSpeed log. Errors name the file: unreadable, or neither kind of line.
Result<TrainingLog> ReadTrainingLog(const std::string& path);

}  // namespace loom

#endif  // LOOM_COST_TRAINING_LOG_H_
