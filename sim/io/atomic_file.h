// Output files written whole or not at all.
//
// A reader (or a crash) never sees a half-written result: the content goes to a temporary file
// beside the target, is flushed to disk, and is then renamed over the target, which POSIX makes
// atomic within one file system.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ess {

// An output file or directory that could not be written. The message names the path and the
// operating system's reason, e.g. "cannot write out/run.json: No such file or directory".
// This is an environment problem (full disk, permissions), not a bug; the CLI reports it.
class OutputError : public std::runtime_error {
 public:
  OutputError(std::filesystem::path path, const std::string& message);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Replaces the file at `path` with `content` atomically: afterwards `path` holds either its old
// content (or is still absent) or all of `content`, never a part. The parent directory must
// exist; it is not created (see ensure_directory). A replaced file's permissions are not kept:
// the new file gets the default mode (0666 less the umask).
//
// Throws OutputError, having removed its temporary file, if the directory is missing or not
// writable, if `path` is a directory or has no file name, or if writing, syncing or renaming fails.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Creates `dir` and any missing parents; does nothing if it is already a directory. Throws
// OutputError if it cannot be created or if something that is not a directory is in the way.
void ensure_directory(const std::filesystem::path& dir);

}  // namespace ess
