#include "spec/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

#include "core/file_io.h"
#include "core/json_reader.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> Variable(const EnvironmentLookup& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// os.path.expanduser's rule for a leading ~ (alone or before a '/'); other text as it is.
std::string ExpandHome(const std::string& path, const EnvironmentLookup& env) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  std::optional<std::string> home = Variable(env, "HOME");
  return home ? *home + path.substr(1) : path;
}

bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// One part of a hub repository id (huggingface_hub validate_repo_id): [\w.-]{1,96}, not starting
// or ending with '-' or '.', without "--" or "..".
bool IsIdPart(std::string_view part) {
  if (part.empty() || part.size() > 96) return false;
  if (!std::all_of(part.begin(), part.end(), IsIdChar)) return false;
  for (char edge : {part.front(), part.back()}) {
    if (edge == '-' || edge == '.') return false;
  }
  return part.find("--") == std::string_view::npos && part.find("..") == std::string_view::npos;
}

// A branch, tag or commit: letters, digits and -_./, no "..", not starting with '/'.
bool IsRevision(std::string_view revision) {
  if (revision.empty() || revision.front() == '/' ||
      revision.find("..") != std::string_view::npos) {
    return false;
  }
  return std::all_of(revision.begin(), revision.end(),
                     [](char c) { return IsIdChar(c) || c == '/'; });
}

std::string FetchCommand(const std::string& repo, const std::string& revision) {
  std::string command = "`huggingface-cli download " + repo + " config.json";
  if (revision != "main") command += " --revision " + revision;
  return command + "`";
}

std::string Where(const HubCache& cache) { return cache.dir + " (" + cache.basis + ")"; }

// The snapshot folders of |repo_dir|, sorted.
std::vector<std::string> Snapshots(const fs::path& repo_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(repo_dir / "snapshots", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

HubCache FindHubCache(const EnvironmentLookup& env) {
  if (std::optional<std::string> dir = Variable(env, "HF_HUB_CACHE")) {
    return {ExpandHome(*dir, env), "HF_HUB_CACHE"};
  }
  if (std::optional<std::string> dir = Variable(env, "HUGGINGFACE_HUB_CACHE")) {
    return {ExpandHome(*dir, env), "HUGGINGFACE_HUB_CACHE"};
  }
  if (std::optional<std::string> home = Variable(env, "HF_HOME")) {
    return {(fs::path(ExpandHome(*home, env)) / "hub").string(), "HF_HOME/hub"};
  }
  if (std::optional<std::string> xdg = Variable(env, "XDG_CACHE_HOME")) {
    return {(fs::path(ExpandHome(*xdg, env)) / "huggingface" / "hub").string(),
            "XDG_CACHE_HOME/huggingface/hub"};
  }
  if (std::optional<std::string> home = Variable(env, "HOME")) {
    return {(fs::path(*home) / ".cache" / "huggingface" / "hub").string(),
            "the default, ~/.cache/huggingface/hub: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME "
            "and XDG_CACHE_HOME are unset"};
  }
  return {"", "none: HOME and every hub cache variable are unset"};
}

HubCache FindHubCache() {
  return FindHubCache([](const char* name) { return std::getenv(name); });
}

bool IsHubModelName(std::string_view text) {
  std::string_view repo = text;
  if (size_t at = text.find('@'); at != std::string_view::npos) {
    if (!IsRevision(text.substr(at + 1))) return false;
    repo = text.substr(0, at);
  }
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view org = repo.substr(0, slash), name = repo.substr(slash + 1);
  if (!IsIdPart(org) || !IsIdPart(name)) return false;
  return name.size() < 5 || name.substr(name.size() - 5) != ".json";
}

Result<std::string> ResolveHubModel(const std::string& name, const HubCache& cache) {
  const size_t at = name.find('@');
  const std::string repo = name.substr(0, at);
  const std::string revision = at == std::string::npos ? "main" : name.substr(at + 1);
  const std::string fix =
      "loom reads the hub cache offline and downloads nothing: fetch the "
      "config with " +
      FetchCommand(repo, revision) + ", or point --model at a config.json or a snapshot folder";
  if (cache.dir.empty()) {
    return Status::NotFound(name +
                            ": no such file or folder, and no Hugging Face hub cache to "
                            "look in (" +
                            cache.basis + "); set HF_HUB_CACHE to it. " + fix);
  }
  const size_t slash = repo.find('/');
  const std::string folder = "models--" + repo.substr(0, slash) + "--" + repo.substr(slash + 1);
  const fs::path repo_dir = fs::path(cache.dir) / folder;
  std::error_code ec;
  if (!fs::is_directory(repo_dir, ec)) {
    return Status::NotFound(name +
                            ": no such file or folder, and not in the Hugging Face hub cache " +
                            Where(cache) + ": it has no " + folder + ". " + fix);
  }
  std::string commit = revision;
  const fs::path ref = repo_dir / "refs" / revision;
  if (fs::is_regular_file(ref, ec)) {
    LOOM_ASSIGN_OR_RETURN(std::string value, ReadInputFile(ref.string()));
    value.erase(std::remove_if(value.begin(), value.end(),
                               [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
                value.end());
    if (value.empty() || !std::all_of(value.begin(), value.end(), IsIdChar) ||
        value.find("..") != std::string::npos) {
      return Status::InvalidArgument(ref.string() + ": holds \"" + Abbreviated(value, 60) +
                                     "\", not the commit of revision " + revision +
                                     "; the cache entry is damaged: fetch it again with " +
                                     FetchCommand(repo, revision));
    }
    commit = value;
  }
  const fs::path snapshot = repo_dir / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec)) {
    const std::vector<std::string> present = Snapshots(repo_dir);
    std::string message = name + ": the Hugging Face hub cache " + Where(cache) + " has " + folder +
                          " but no snapshot of revision " + revision;
    message += commit == revision
                   ? " (no refs/" + revision + " names its commit)"
                   : " (refs/" + revision + " names commit " + commit + ", which snapshots/ lacks)";
    if (present.empty()) {
      message += " and no snapshot at all; fetch it with " + FetchCommand(repo, revision);
    } else {
      std::string listed;
      for (const std::string& commit_dir : present) {
        listed += (listed.empty() ? "" : ", ") + commit_dir;
      }
      message += "; its snapshots are " + listed + ": name one as " + repo +
                 "@COMMIT, or fetch the revision with " + FetchCommand(repo, revision);
    }
    return Status::NotFound(message);
  }
  if (!fs::is_regular_file(snapshot / "config.json", ec)) {
    return Status::NotFound(name + ": the snapshot " + snapshot.string() +
                            " in the Hugging Face hub cache has no config.json (or a link to a "
                            "missing blob); fetch it with " +
                            FetchCommand(repo, revision));
  }
  return snapshot.string();
}

std::string ModelPathBeside(const std::string& file, const std::string& value) {
  std::string beside = PathBeside(file, value);
  std::error_code ec;
  if (!fs::exists(beside, ec) && IsHubModelName(value)) return value;
  return beside;
}

}  // namespace loom
