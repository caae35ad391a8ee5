// Writing an output file whole or not at all (CONVENTIONS.md): the content goes to PATH.tmp,
// which is flushed, closed and then renamed over PATH, so a crash or a full disk never leaves a
// truncated PATH for the fitter to read.
#pragma once

#include <filesystem>
#include <string_view>

namespace ess::bench {

// Throws std::runtime_error naming the file and the system's reason when the temporary file
// cannot be written or renamed; the temporary file is removed then and PATH is left untouched.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// Whether write_file_atomically(path, ...) could create its temporary file: creates PATH.tmp and
// removes it again, leaving PATH itself alone. Throws std::runtime_error like
// write_file_atomically. ess-bench calls it before minutes of measuring, not after.
void check_writable(const std::filesystem::path& path);

}  // namespace ess::bench
