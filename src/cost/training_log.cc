#include "cost/training_log.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include "core/file_io.h"

namespace loom {
namespace {

// The number that follows |marker| in |line|, if any.
std::optional<double> NumberAfter(std::string_view line, std::string_view marker) {
  const size_t at = line.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string rest(line.substr(at + marker.size()));
  const char* begin = rest.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return v;
}

bool Trim(std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  if (a == std::string::npos) return false;
  s = s.substr(a, b - a + 1);
  return true;
}

}  // namespace

Result<TrainingLog> ReadTrainingLog(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string text,
                        ReadInputFile(path, "check the path of the training log"));
  std::istringstream in(text);
  TrainingLog log;
  std::vector<double> megatron, deepspeed;
  bool in_arguments = false;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find("---- arguments ----") != std::string::npos) {
      in_arguments = true;
      continue;
    }
    if (in_arguments) {
      if (line.find("---- end of arguments ----") != std::string::npos) {
        in_arguments = false;
        continue;
      }
      // "  tensor_model_parallel_size ...................... 8"
      const size_t dots = line.find(" ..");
      if (dots != std::string::npos) {
        std::string name = line.substr(0, dots), value = line.substr(line.find_last_of('.') + 1);
        if (Trim(name) && Trim(value)) log.arguments[name] = value;
      }
      continue;
    }
    std::optional<double> ms = NumberAfter(line, "elapsed time per iteration (ms):");
    std::optional<double> sps = NumberAfter(line, "CurrSamplesPerSec=");
    // A NaN, an infinity or a non-positive rate (a failed or diverged interval) is no step time.
    for (const std::optional<double>& value : {ms, sps}) {
      if (value && !(std::isfinite(*value) && *value > 0)) {
        return Status::InvalidArgument(
            path + ":" + std::to_string(line_number) + ": the logged " +
            (ms ? "'elapsed time per iteration (ms)'" : "'CurrSamplesPerSec'") + " is " +
            std::to_string(*value) +
            "; loom reads only finite positive step times: "
            "cut the log to the intervals that ran, or give step_time_s instead");
      }
    }
    if (ms) megatron.push_back(*ms);
    if (sps) deepspeed.push_back(*sps);
  }
  if (!megatron.empty()) {
    log.kind = TrainingLog::Kind::kMegatron;
    log.values = std::move(megatron);
  } else if (!deepspeed.empty()) {
    log.kind = TrainingLog::Kind::kDeepSpeed;
    log.values = std::move(deepspeed);
  } else {
    return Status::InvalidArgument(
        path +
        ": no step times: neither Megatron-LM's 'elapsed time per iteration (ms):' "
        "nor DeepSpeed's 'CurrSamplesPerSec=' appears; give step_time_s instead");
  }
  return log;
}

Result<double> TrainingLog::StepTimeSeconds(int64_t global_batch) const {
  if (values.size() < 2) {
    return Status::InvalidArgument(
        "the log has " + std::to_string(values.size()) +
        " logged interval(s); loom needs 2 or more, the first of which (warm-up) it drops");
  }
  std::vector<double> kept(values.begin() + 1, values.end());
  std::sort(kept.begin(), kept.end());
  const size_t n = kept.size();
  const double median = n % 2 == 1 ? kept[n / 2] : 0.5 * (kept[n / 2 - 1] + kept[n / 2]);
  if (kind == Kind::kMegatron) return median / 1e3;
  if (global_batch <= 0 || median <= 0) {
    return Status::InvalidArgument(
        "a DeepSpeed log gives samples per second: the run needs its global batch "
        "(strategy.global_batch) to make a step time of it");
  }
  return static_cast<double>(global_batch) / median;
}

}  // namespace loom
