#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/interrupt.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// What a non-regular file is, for messages.
std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Closes a file descriptor when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports close's own error (NFS and full disks report late).
  int Close() {
    int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

}  // namespace

Result<std::string> ReadInputFile(const std::string& path, std::string_view missing_hint) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      struct stat link {};
      const bool dangling = ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
      return Status::NotFound(
          path + (dangling ? ": a symbolic link to a file that does not exist" : ": no such file") +
          "; " + std::string(missing_hint));
    }
    if (error == ELOOP) {
      return Status::NotFound(
          path + ": a loop of symbolic links (each points on to the next); point it at a file");
    }
    return Status::IoError(path + ": cannot open (" + std::strerror(error) + "); " +
                           std::string(missing_hint));
  }
  if (!S_ISREG(info.st_mode)) {
    return Status::InvalidArgument(path + ": is " + KindOf(info.st_mode) +
                                   ", not a file; pass the path of a file" +
                                   (S_ISDIR(info.st_mode) ? " inside it" : ""));
  }
  if (info.st_size > kMaxInputFileBytes) {
    return Status::InvalidArgument(
        path + ": is " + std::to_string(info.st_size >> 20) + " MiB; loom's inputs are at most " +
        std::to_string(kMaxInputFileBytes >> 20) + " MiB, so this is not one (check the path)");
  }
  Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return Status::IoError(path + ": cannot open (" + std::strerror(errno) +
                           "); check its permissions");
  }
  std::string text;
  text.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (true) {
    if (done == text.size()) {
      // The file may have grown since stat; read on, still bounded.
      if (text.size() >= static_cast<size_t>(kMaxInputFileBytes)) {
        return Status::InvalidArgument(
            path + ": grew past " + std::to_string(kMaxInputFileBytes >> 20) +
            " MiB while it was read; loom's inputs are smaller (check the path)");
      }
      text.resize(text.size() + 4096);
    }
    ssize_t got = ::read(fd.get(), text.data() + done, text.size() - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(path + ": reading failed (" + std::strerror(errno) + ")");
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  text.resize(done);
  return text;
}

Status WriteFileAtomically(const std::string& path, std::string_view text, std::string_view fix,
                           const std::function<Status(const std::string& temporary)>& check) {
  const DeferredInterrupts hold;
  const std::string suffix = "; " + std::string(fix);
  // Write through a symbolic link: replace the file it names, keep the link.
  std::string target = path;
  std::error_code error;
  if (fs::is_symlink(fs::symlink_status(path, error))) {
    fs::path resolved = fs::weakly_canonical(fs::path(path), error);
    if (error) {
      return Status::IoError(path + ": a symbolic link that cannot be followed (" +
                             error.message() + ")" + suffix);
    }
    target = resolved.string();
  }
  struct stat info {};
  if (::stat(target.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return Status::InvalidArgument(
        path + ": is " + KindOf(info.st_mode) +
        "; loom writes its output as a regular file and will not replace this" + suffix);
  }
  // One fixed name per target: a temporary left by a process killed mid-write is overwritten by the
  // next write instead of piling up.
  const std::string temporary = target + ".loom.tmp";
  auto fail = [&](const std::string& what) {
    std::remove(temporary.c_str());
    return Status::IoError(path + ": " + what + suffix);
  };
  {
    Descriptor fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
      const std::string reason = std::strerror(errno);
      return Status::IoError(path + ": cannot write (creating " + temporary + " beside it: " +
                             reason + "); check that the folder exists and is writable" + suffix);
    }
    size_t done = 0;
    while (done < text.size()) {
      ssize_t wrote = ::write(fd.get(), text.data() + done, text.size() - done);
      if (wrote < 0) {
        if (errno == EINTR) continue;
        return fail("writing failed (" + std::string(std::strerror(errno)) +
                    "; is the disk full?)");
      }
      done += static_cast<size_t>(wrote);
    }
    if (::fsync(fd.get()) != 0 && errno != EINVAL) {
      return fail("writing failed at fsync (" + std::string(std::strerror(errno)) + ")");
    }
    if (fd.Close() != 0)
      return fail("writing failed at close (" + std::string(std::strerror(errno)) + ")");
  }
  if (check) {
    if (Status checked = check(temporary); !checked.ok()) {
      std::remove(temporary.c_str());
      return checked;
    }
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    return fail("cannot replace it with " + temporary + " (" + std::strerror(errno) + ")");
  }
  return Status::Ok();
}

}  // namespace loom
