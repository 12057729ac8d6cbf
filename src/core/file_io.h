#ifndef LOOM_CORE_FILE_IO_H_
#define LOOM_CORE_FILE_IO_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace loom {

// The largest input file loom reads (512 MiB). Every loom input (a config, a profile, a plan, an
// nccl-tests or training log) is far smaller; a bigger one is a wrong path, not data.
inline constexpr int64_t kMaxInputFileBytes = int64_t{512} << 20;

// Reads the whole of |path|. Errors name the path and what is wrong with it: missing, a directory,
// a symbolic-link loop, a FIFO or device (reading one could block forever), unreadable, or larger
// than kMaxInputFileBytes. |missing_hint| follows the message of a missing file ("check the path,
// or pass a shipped file such as models/llama3-70b.json").
Result<std::string> ReadInputFile(const std::string& path,
                                  std::string_view missing_hint = "check the path");

// Writes |text| to |path| so that a reader never sees half a file: into a temporary beside it
// (|path|.loom.tmp), flushed and checked (a full disk is an error, not a short file), then renamed
// over |path|. |path| may be a symbolic link: the file it points to is replaced and the link kept.
// A |path| that is a directory, FIFO, socket or device is refused, since renaming over it would
// silently replace it with a regular file. A SIGINT or SIGTERM meanwhile waits (DeferredInterrupts,
// core/interrupt.h) and ends the process once |path| holds the old file or the new one, complete,
// with no temporary beside it. |check|, when given, reads the temporary back before the
// rename; an error from it leaves |path| as it was. |fix| ends every error message ("pass another
// --out").
Status WriteFileAtomically(
    const std::string& path, std::string_view text, std::string_view fix,
    const std::function<Status(const std::string& temporary)>& check = nullptr);

}  // namespace loom

#endif  // LOOM_CORE_FILE_IO_H_
