// Child processes for commands that run other programs (sweep points, search probes, gnuplot):
// fork and exec with stdin from /dev/null and stdout / stderr into files, and a wait that retries
// on signals. POSIX only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ess {

// Starts `program` with `args` (argv[1] on) in `cwd` (empty: the current directory), stdin from
// /dev/null, stdout and stderr into `out_file` and `err_file` (created or truncated, mode 0600).
// If exec fails the child writes `exec_failure` to its stderr file and exits 127 (126 when the
// redirections or chdir fail). Returns the child's pid; throws OutputError when the files cannot
// be created or fork fails.
[[nodiscard]] pid_t start_child(const std::string& program, const std::vector<std::string>& args,
                                const std::filesystem::path& cwd, const std::filesystem::path& out_file,
                                const std::filesystem::path& err_file, const std::string& exec_failure);

// Waits for `pid` (retrying on EINTR) and returns its wait status; throws OutputError naming
// `what` when waitpid fails.
[[nodiscard]] int wait_child(pid_t pid, const std::string& what);

}  // namespace ess
