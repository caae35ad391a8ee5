// ess-bench writes its output whole or not at all with the simulator's own
// ess::write_file_atomically (sim/io/atomic_file.h); this is the check it makes before minutes of
// measuring, so that an unwritable --out fails at once, not after.
#pragma once

#include <filesystem>

namespace ess::bench {

// Whether a file could be written at `path`: creates PATH.tmp and removes it again, leaving PATH
// itself alone. Throws std::runtime_error naming the file and the system's reason.
void check_writable(const std::filesystem::path& path);

}  // namespace ess::bench
