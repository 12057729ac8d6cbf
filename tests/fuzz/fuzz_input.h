#ifndef LOOM_TESTS_FUZZ_FUZZ_INPUT_H_
#define LOOM_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

// What every fuzz target of tests/fuzz shares: loom's readers take file paths, and the files they
// read name other files by relative paths (a cluster its GPU file, a scenario its model and
// cluster, a runs file its models and logs). So each fuzzing process gets a sandbox folder,
// $TMPDIR/loom-fuzz-<pid>, laid out like the repository's data folders (models/, hardware/gpus/,
// hardware/clusters/, hardware/frameworks/, hardware/profiles/, scenarios/, tests/cli/data/,
// tests/cost/data/, and the logs of tests/fuzz/seeds/training_log/ that a runs seed names), each
// shipped file a symlink to the source tree, and the fuzz input is written beside them:
// "../gpus/h100-sxm5-80gb.json" in a fuzzed cluster file resolves as it does in a shipped one.
// The sandbox is removed when the process exits normally.

namespace loom::fuzz {

// Writes |data| to the file |name| in |folder| of this process's sandbox (one of the folders
// above, e.g. "hardware/clusters", or a new one), replacing what the previous input wrote there,
// and returns its path.
std::string WriteInput(std::string_view folder, std::string_view name, const uint8_t* data,
                       size_t size);

// Same, for a text a target composes itself.
std::string WriteText(std::string_view folder, std::string_view name, std::string_view text);

// The sandbox's path of the shipped file |relative| ("hardware/clusters/dgx-h100.json").
std::string Shipped(std::string_view relative);

// What a target returns for an input its reader refused: 0, libFuzzer's "keep going". With
// LOOM_FUZZ_VERBOSE=1 in the environment it first prints |status|, to see why a seed is refused:
//   LOOM_FUZZ_VERBOSE=1 build-sanitize/fuzz/model models/*.json
int Rejected(const Status& status);

}  // namespace loom::fuzz

#endif  // LOOM_TESTS_FUZZ_FUZZ_INPUT_H_
