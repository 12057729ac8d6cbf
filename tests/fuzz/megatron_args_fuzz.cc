// Fuzzes `loom simulate --megatron-args` (plan/megatron_args_in.h): a launch script split as the
// shell splits it (ShellWords), read as pretrain_gpt.py's arguments for Llama 3 8B on 64 GPUs
// (ReadMegatronArguments). A launch it reads must give a strategy of whole, positive sizes on the
// GPUs it names.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "plan/megatron_args_in.h"
#include "spec/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  loom::Result<std::vector<std::string>> words = loom::ShellWords(text, "launch.sh");
  if (!words.ok()) return loom::fuzz::Rejected(words.status());
  static const loom::Result<loom::ModelSpec> model =
      loom::LoadModelSpec(loom::fuzz::Shipped("models/llama3-8b.json"));
  if (!model.ok()) return 0;
  loom::Result<loom::MegatronLaunch> launch =
      loom::ReadMegatronArguments(*words, *model, 64, "launch.sh");
  if (!launch.ok()) return loom::fuzz::Rejected(launch.status());
  const loom::Strategy& s = launch->strategy;
  const int64_t world = launch->launcher_world_size.value_or(64);
  if (s.tp < 1 || s.pp < 1 || s.cp < 1 || s.dp < 1 || s.WorldSize() != world) {
    std::fprintf(stderr, "read tp %lld pp %lld cp %lld dp %lld on %lld GPUs\n",
                 static_cast<long long>(s.tp), static_cast<long long>(s.pp),
                 static_cast<long long>(s.cp), static_cast<long long>(s.dp),
                 static_cast<long long>(world));
    std::abort();
  }
  return 0;
}
