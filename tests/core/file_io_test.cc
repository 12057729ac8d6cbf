#include "core/file_io.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace loom {
namespace {

namespace fs = std::filesystem;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh folder per test.
fs::path Folder(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("loom-file-io-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReadInputFile, ReadsAFile) {
  const fs::path file = Folder("reads") / "a.json";
  std::ofstream(file) << "{\"a\": 1}";
  Result<std::string> text = ReadInputFile(file.string());
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "{\"a\": 1}");
}

TEST(ReadInputFile, MissingFileSaysSoAndGivesTheHint) {
  Result<std::string> text =
      ReadInputFile("/nonexistent-loom/x.json", "pass models/llama3-70b.json");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(text.status().message(),
            "/nonexistent-loom/x.json: no such file; pass models/llama3-70b.json");
}

TEST(ReadInputFile, DirectoryIsNamedAsOne) {
  const fs::path dir = Folder("directory");
  Result<std::string> text = ReadInputFile(dir.string());
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), dir.string() + ": is a directory, not a file"))
      << text.status().message();
}

TEST(ReadInputFile, SymlinkLoopIsNamedAsOne) {
  const fs::path dir = Folder("loop");
  fs::create_symlink(dir / "b", dir / "a");
  fs::create_symlink(dir / "a", dir / "b");
  Result<std::string> text = ReadInputFile((dir / "a").string());
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "a loop of symbolic links"))
      << text.status().message();
}

TEST(ReadInputFile, DanglingSymlinkIsNamedAsOne) {
  const fs::path dir = Folder("dangling");
  fs::create_symlink(dir / "gone", dir / "link");
  Result<std::string> text = ReadInputFile((dir / "link").string());
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "a symbolic link to a file that does not exist"))
      << text.status().message();
}

// A FIFO would block the read until a writer comes, forever in a script: refused before opening.
TEST(ReadInputFile, FifoIsRefusedWithoutBlocking) {
  const fs::path fifo = Folder("fifo") / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<std::string> text = ReadInputFile(fifo.string());
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "is a FIFO (named pipe), not a file"))
      << text.status().message();
}

TEST(ReadInputFile, DeviceIsRefused) {
  Result<std::string> text = ReadInputFile("/dev/zero");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "/dev/zero: is a character device"))
      << text.status().message();
}

// A sparse file: its size is over the bound, its blocks take no disk.
TEST(ReadInputFile, OversizedFileIsRefusedBeforeReading) {
  const fs::path file = Folder("oversized") / "huge.json";
  std::ofstream(file).close();
  fs::resize_file(file, static_cast<uintmax_t>(kMaxInputFileBytes) + 1);
  Result<std::string> text = ReadInputFile(file.string());
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "loom's inputs are at most 512 MiB"))
      << text.status().message();
}

TEST(WriteFileAtomically, WritesAndReplaces) {
  const fs::path file = Folder("writes") / "out.json";
  ASSERT_TRUE(WriteFileAtomically(file.string(), "first", "pass another --out").ok());
  ASSERT_TRUE(WriteFileAtomically(file.string(), "second", "pass another --out").ok());
  EXPECT_EQ(Slurp(file), "second");
  // No temporary is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);
}

// Renaming over /dev/null would replace the device with a regular file (as root) or fail late.
TEST(WriteFileAtomically, RefusesADevice) {
  Status s = WriteFileAtomically("/dev/null", "x", "pass another --out");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(
      s.message(),
      "/dev/null: is a character device; loom writes its output as a regular file and will not "
      "replace this; pass another --out");
}

TEST(WriteFileAtomically, RefusesADirectoryAndAFifo) {
  const fs::path dir = Folder("refuses");
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  Status on_dir = WriteFileAtomically(dir.string(), "x", "pass another --out");
  EXPECT_TRUE(Contains(on_dir.message(), ": is a directory; loom writes")) << on_dir.message();
  Status on_fifo = WriteFileAtomically((dir / "pipe").string(), "x", "pass another --out");
  EXPECT_TRUE(Contains(on_fifo.message(), ": is a FIFO (named pipe); loom writes"))
      << on_fifo.message();
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
}

TEST(WriteFileAtomically, WritesThroughASymlinkAndKeepsIt) {
  const fs::path dir = Folder("symlink");
  std::ofstream(dir / "target.json") << "old";
  fs::create_symlink(dir / "target.json", dir / "link.json");
  ASSERT_TRUE(WriteFileAtomically((dir / "link.json").string(), "new", "pass another --out").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(Slurp(dir / "target.json"), "new");
}

TEST(WriteFileAtomically, ACheckThatFailsKeepsTheOldFile) {
  const fs::path file = Folder("check") / "out.json";
  std::ofstream(file) << "old";
  Status s = WriteFileAtomically(file.string(), "new", "fix", [](const std::string& temporary) {
    EXPECT_TRUE(fs::exists(temporary));
    return Status::InvalidArgument("does not load");
  });
  EXPECT_EQ(s.message(), "does not load");
  EXPECT_EQ(Slurp(file), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);
}

// A full disk, as the kernel reports it to write(): RLIMIT_FSIZE makes write fail with EFBIG.
TEST(WriteFileAtomically, AWriteThatFailsIsAnErrorAndKeepsTheOldFile) {
  const fs::path file = Folder("full") / "out.json";
  std::ofstream(file) << "old";
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status s = WriteFileAtomically(file.string(), std::string(4096, 'x'), "pass another --out");
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), file.string() + ": writing failed")) << s.message();
  EXPECT_EQ(Slurp(file), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace loom
