// Fuzzes `loom simulate --megatron-args ... --deepspeed-config FILE` (plan/deepspeed_config_in.h):
// the bytes as the DeepSpeed config of the shipped Megatron-DeepSpeed launch of Llama 3 8B
// (scenarios/launches/), read with its arguments on 16 GPUs. A launch it reads must give a strategy
// of whole, positive sizes on those GPUs, with a batch that is micro-batch * micro-batches * dp.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "plan/deepspeed_config_in.h"
#include "spec/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return 0;
  static const loom::Result<loom::ModelSpec> model =
      loom::LoadModelSpec(loom::fuzz::Shipped("models/llama3-8b.json"));
  static const std::vector<std::string> words = [] {
    std::ifstream in(loom::fuzz::Shipped("scenarios/launches/llama3-8b-megatron-deepspeed.sh"));
    const std::string script((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    loom::Result<std::vector<std::string>> split = loom::ShellWords(script, "launch.sh");
    return split.ok() ? *split : std::vector<std::string>();
  }();
  if (!model.ok() || words.empty()) return 0;
  loom::Result<loom::MegatronLaunch> launch =
      loom::ReadMegatronDeepSpeedLaunch(words, config, *model, 16, {"launch.sh", "ds_config.json"});
  if (!launch.ok()) return loom::fuzz::Rejected(launch.status());
  const loom::Strategy& s = launch->strategy;
  const int64_t world = launch->launcher_world_size.value_or(16);
  if (s.tp < 1 || s.pp < 1 || s.dp < 1 || s.micro_batch < 1 || s.WorldSize() != world ||
      s.global_batch != s.micro_batch * s.NumMicroBatches() * s.dp) {
    std::fprintf(stderr, "read tp %lld pp %lld dp %lld micro-batch %lld global %lld on %lld GPUs\n",
                 static_cast<long long>(s.tp), static_cast<long long>(s.pp),
                 static_cast<long long>(s.dp), static_cast<long long>(s.micro_batch),
                 static_cast<long long>(s.global_batch), static_cast<long long>(world));
    std::abort();
  }
  return 0;
}
