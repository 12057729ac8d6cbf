// Models by their Hugging Face hub name, read offline from the hub cache that huggingface_hub
// (and so transformers, `huggingface-cli download` and `hf download`) writes:
//   CACHE/models--ORG--NAME/refs/REVISION        the commit a branch or tag names
//   CACHE/models--ORG--NAME/snapshots/COMMIT/    the files of that commit (links into blobs/)
// CACHE is the first of HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE (its older name), HF_HOME/hub,
// XDG_CACHE_HOME/huggingface/hub and ~/.cache/huggingface/hub, as huggingface_hub's constants.py
// chooses it (huggingface/huggingface_hub 03333b68, src/huggingface_hub/constants.py: HF_HOME,
// default_cache_path, HUGGINGFACE_HUB_CACHE, HF_HUB_CACHE; its file_download.py
// try_to_load_from_cache reads refs/ and snapshots/ this way). loom never downloads: a model not in
// the cache is an error that says where loom looked and the command that fetches its config.

#ifndef LOOM_SPEC_HUB_CACHE_H_
#define LOOM_SPEC_HUB_CACHE_H_

#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace loom {

// The hub cache folder and the setting it came from, in words ("HF_HUB_CACHE", "HF_HOME/hub",
// "the default ~/.cache/huggingface/hub", ...).
struct HubCache {
  std::string dir;
  std::string basis;
};

// An environment lookup: the value of a variable, or nullptr when it is unset.
using EnvironmentLookup = std::function<const char*(const char*)>;

// The hub cache as huggingface_hub finds it from |env|. An empty variable counts as set, as in
// Python's os.getenv; a leading ~ is the home folder (HOME). Without HOME and every variable, dir
// is empty.
HubCache FindHubCache(const EnvironmentLookup& env);
// The same from this process's environment.
HubCache FindHubCache();

// Whether |text| reads as a hub model name: ORG/NAME with an optional @REVISION, ORG and NAME of
// letters, digits, '-', '_' and '.' (not starting with '.' or '-', no "--" or ".." inside, as the
// hub's repository ids), and no ".json" ending.
bool IsHubModelName(std::string_view text);

// The snapshot folder of hub model |name| (ORG/NAME[@REVISION], REVISION main when absent: a
// branch or tag under refs/, or a commit) in |cache|, holding a config.json. Errors name the model,
// the folder loom looked in and why it was not there (no such model, no such revision, no
// config.json in the snapshot), and how to fetch it. REQUIRES: IsHubModelName(name).
Result<std::string> ResolveHubModel(const std::string& name, const HubCache& cache);

// Where a model named |value| by the file |file| is (a scenario's or a runs file's "model"): the
// path beside |file| (PathBeside) unless nothing is there and |value| reads as a hub model name,
// which is then kept as it is for LoadModelSpec to resolve.
std::string ModelPathBeside(const std::string& file, const std::string& value);

}  // namespace loom

#endif  // LOOM_SPEC_HUB_CACHE_H_
