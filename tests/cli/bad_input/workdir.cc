#include "cli/bad_input/workdir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom::bad_input {
namespace {

namespace fs = std::filesystem;

constexpr char kPlaceholder[] = "@@loom-bad-input@@";

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ReplaceOnce(std::string text, const std::string& what, const std::string& with) {
  const size_t at = text.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  if (at != std::string::npos) text.replace(at, what.size(), with);
  return text;
}

// The child's side of RunBinary; returns only if it cannot start |binary|.
void StartChild(const std::string& binary, std::vector<char*>& argv, const fs::path& dir,
                const fs::path& out_path, const fs::path& err_path) {
  const int in = open("/dev/null", O_RDONLY);
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0 || chdir(dir.c_str()) != 0) return;
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) return;
  execv(binary.c_str(), argv.data());
}

}  // namespace

Outcome RunBinary(const std::string& binary, const std::vector<std::string>& args,
                  const fs::path& dir, const std::vector<int>& drain) {
  const fs::path out_path = dir.parent_path() / "stdout", err_path = dir.parent_path() / "stderr";
  std::vector<std::string> words = {binary};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    StartChild(binary, argv, dir, out_path, err_path);
    _exit(127);
  }
  Outcome o;
  if (pid < 0) {
    o.err = "fork failed";
    return o;
  }
  int status = 0;
  char sink[1 << 16];
  for (;;) {
    for (int fd : drain) {
      while (read(fd, sink, sizeof sink) > 0) {
      }
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() - start > kDeadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      o.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.timed_out && WIFSIGNALED(status)) {
    o.signaled = true;
    o.signal = WTERMSIG(status);
  } else if (!o.timed_out && WIFEXITED(status)) {
    o.code = WEXITSTATUS(status);
  }
  o.out = ReadText(out_path);
  o.err = ReadText(err_path);
  return o;
}

Workdir::Workdir() {
  std::string pattern = (fs::temp_directory_path() / "loom-bad-input-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern << " failed";
  root_ = pattern;
  dir_ = root_ / "work";
  const fs::path source = LOOM_SOURCE_DIR;
  for (const char* folder : {"models", "scenarios", "hardware/gpus", "hardware/clusters",
                             "hardware/frameworks", "tests/cli/data", "tests/cost/data"}) {
    fs::create_directories(dir_ / folder);
    fs::copy(source / folder, dir_ / folder, fs::copy_options::recursive);
  }
  const Json strategy = {{"tp", 1},          {"pp", 1},           {"dp", 1},
                         {"micro_batch", 1}, {"global_batch", 4}, {"seq_len", 512}};
  Save("scenarios/small.json", {{"schema", "loom.scenario/1"},
                                {"model", "../models/gpt3-125m.json"},
                                {"cluster", "../hardware/clusters/dgx-h100.json"},
                                {"nodes", 1},
                                {"strategy", strategy}});
}

Workdir::~Workdir() {
  for (int fd : drain_) close(fd);
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

std::string Workdir::Read(const std::string& relative) const { return ReadText(Path(relative)); }

void Workdir::Write(const std::string& relative, const std::string& text) const {
  fs::create_directories(Path(relative).parent_path());
  std::ofstream(Path(relative), std::ios::binary | std::ios::trunc) << text;
}

Workdir::Json Workdir::Load(const std::string& relative) const {
  return Json::parse(Read(relative));
}

void Workdir::Save(const std::string& relative, const Json& json) const {
  Write(relative, json.dump(2) + "\n");
}

void Workdir::Edit(const std::string& from, const std::string& to,
                   const std::function<void(Json&)>& edit) const {
  Json json = Load(from);
  edit(json);
  Save(to, json);
}

void Workdir::SetRaw(const std::string& from, const std::string& to, const std::string& at,
                     const std::string& raw) const {
  Json json = Load(from);
  json[Json::json_pointer(at)] = kPlaceholder;
  Write(to, ReplaceOnce(json.dump(2), "\"" + std::string(kPlaceholder) + "\"", raw));
}

void Workdir::DuplicateKey(const std::string& from, const std::string& to, const std::string& at,
                           const std::string& key, const std::string& raw) const {
  Json json = Load(from);
  json[Json::json_pointer(at)][kPlaceholder] = 0;
  Write(to, ReplaceOnce(json.dump(2), "\"" + std::string(kPlaceholder) + "\": 0",
                        "\"" + key + "\": " + raw));
}

void Workdir::Symlink(const std::string& target, const std::string& relative) const {
  fs::create_symlink(target, Path(relative));
}

void Workdir::Fifo(const std::string& relative) {
  ASSERT_EQ(mkfifo(Path(relative).c_str(), 0644), 0) << relative;
  const int fd = open(Path(relative).c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0) << relative;
  drain_.push_back(fd);
}

Outcome Workdir::Loom(const std::vector<std::string>& args) const {
  return RunBinary(LOOM_BINARY, args, dir_, drain_);
}

std::string Nested(size_t depth, bool objects) {
  std::string text;
  text.reserve(depth * 6 + 1);
  for (size_t i = 0; i < depth; ++i) text += objects ? "{\"a\":" : "[";
  text += "1";
  for (size_t i = 0; i < depth; ++i) text += objects ? "}" : "]";
  return text;
}

}  // namespace loom::bad_input
