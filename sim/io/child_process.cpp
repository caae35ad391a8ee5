#include "sim/io/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/io/atomic_file.h"

namespace ess {

pid_t start_child(const std::string& program, const std::vector<std::string>& args, const std::filesystem::path& cwd,
                  const std::filesystem::path& out_file, const std::filesystem::path& err_file,
                  const std::string& exec_failure) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (in < 0 || out < 0 || err < 0) {
    const int e = errno;
    for (const int fd : {in, out, err}) {
      if (fd >= 0) ::close(fd);
    }
    throw OutputError(out_file, "cannot create " + out_file.string() + " and " + err_file.filename().string() +
                                    " for " + program + ": " + std::strerror(e));
  }
  const std::string dir = cwd.empty() ? std::string(".") : cwd.string();
  const std::string message = exec_failure + "\n";
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 || ::chdir(dir.c_str()) != 0) _exit(126);
    ::execv(program.c_str(), argv.data());
    (void)!::write(2, message.data(), message.size());
    _exit(127);
  }
  const int fork_errno = errno;
  ::close(in);
  ::close(out);
  ::close(err);
  if (pid < 0) throw OutputError(out_file, "cannot start " + program + ": fork: " + std::strerror(fork_errno));
  return pid;
}

int wait_child(pid_t pid, const std::string& what) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw OutputError(what, "cannot wait for " + what + ": " + std::strerror(errno));
  }
  return status;
}

}  // namespace ess
