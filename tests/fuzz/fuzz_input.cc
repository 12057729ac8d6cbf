#include "fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace loom::fuzz {
namespace {

namespace fs = std::filesystem;

// The repository's folders whose files the fuzzed inputs may name.
constexpr const char* kDataFolders[] = {
    "models",
    "hardware/gpus",
    "hardware/clusters",
    "hardware/frameworks",
    "hardware/profiles",
    "scenarios",
    "tests/cli/data",
    "tests/cost/data",
    "tests/fuzz/seeds/training_log",
};

// Never freed: the atexit handler that removes the sandbox runs after static destructors would.
const fs::path* sandbox = nullptr;

void RemoveSandbox() {
  std::error_code ignored;
  fs::remove_all(*sandbox, ignored);
}

// A failure here is the harness's, not loom's: say so and stop, rather than fuzz nothing.
[[noreturn]] void HarnessError(const std::string& what, const std::error_code& error) {
  std::fprintf(stderr, "loom fuzz harness: %s: %s\n", what.c_str(), error.message().c_str());
  std::abort();
}

const fs::path& Sandbox() {
  if (sandbox != nullptr) return *sandbox;
  std::error_code error;
  fs::path root = fs::temp_directory_path(error) / ("loom-fuzz-" + std::to_string(getpid()));
  if (error) HarnessError("no temporary folder (set TMPDIR)", error);
  fs::remove_all(root, error);
  for (const char* folder : kDataFolders) {
    const fs::path source = fs::path(LOOM_SOURCE_DIR) / folder;
    fs::create_directories(root / folder, error);
    if (error) HarnessError("cannot create " + (root / folder).string(), error);
    for (const fs::directory_entry& entry : fs::directory_iterator(source, error)) {
      if (!entry.is_regular_file()) continue;
      fs::create_symlink(entry.path(), root / folder / entry.path().filename(), error);
      if (error) HarnessError("cannot link " + entry.path().string(), error);
    }
    if (error) HarnessError("cannot list " + source.string(), error);
  }
  sandbox = new fs::path(std::move(root));
  std::atexit(RemoveSandbox);
  return *sandbox;
}

}  // namespace

std::string WriteText(std::string_view folder, std::string_view name, std::string_view text) {
  const fs::path path = Sandbox() / folder / name;
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) HarnessError("cannot create " + path.parent_path().string(), error);
  // A new file rather than the old one truncated: ext4 flushes a file truncated to zero and
  // written again when it is closed (auto_da_alloc), a few milliseconds a run.
  fs::remove(path, error);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out)
    HarnessError("cannot write " + path.string(), std::make_error_code(std::errc::io_error));
  return path.string();
}

std::string WriteInput(std::string_view folder, std::string_view name, const uint8_t* data,
                       size_t size) {
  return WriteText(folder, name, std::string_view(reinterpret_cast<const char*>(data), size));
}

int Rejected(const Status& status) {
  static const bool verbose = std::getenv("LOOM_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", std::string(status.message()).c_str());
  return 0;
}

std::string Shipped(std::string_view relative) { return (Sandbox() / relative).string(); }

}  // namespace loom::fuzz
