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
#include <vector>

#include "sim/base/error.h"

namespace ess {

// An output file or directory that could not be written. The message names the path and the
// operating system's reason, e.g. "cannot write out/run.json: No such file or directory".
// This is an environment problem (full disk, permissions), not a bug; the CLI reports it.
class OutputError : public InputError {
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

// One file of an output set: its name inside the set's directory and its content.
struct OutputFile {
  std::string name;
  std::string_view content;
};

// Name of the manifest an output set ends with. It lists every file of the set with its size and
// SHA-256; it exists only while the set is complete, so a reader that finds it can trust the set.
inline constexpr const char* kManifestName = "manifest.json";

// Writes the files of `files` into `dir` (which must exist) as one consistent set: afterwards the
// directory holds either the previous set, or all of the new files and a new manifest, or (if a
// rename failed half way, which needs a failing disk) none of the set's files. Every file is first
// written whole to a temporary; only then is the old manifest removed, each temporary renamed
// over its target, and the manifest written last. Temporaries left by a killed earlier write (of
// these names, by a process that no longer runs) are removed first. `producer` is recorded in the
// manifest (e.g. "ess-sim 0.1.0"). Throws OutputError.
void write_output_set(const std::filesystem::path& dir, const std::vector<OutputFile>& files,
                      const std::string& producer);

// Removes temporaries `.NAME.tmp-PID-N` of `name` in `dir` whose process PID no longer runs
// (left by kill -9 or a power cut). Returns how many were removed. Never throws.
std::size_t remove_stale_temporaries(const std::filesystem::path& dir, const std::string& name);

// Creates `dir` and any missing parents; does nothing if it is already a directory. Throws
// OutputError if it cannot be created or if something that is not a directory is in the way.
void ensure_directory(const std::filesystem::path& dir);

}  // namespace ess
