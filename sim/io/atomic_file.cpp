#include "sim/io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "sim/io/sha256.h"

namespace ess {

namespace {

// strerror's text for an errno value (std::system_category gives the same words, thread-safely).
std::string os_reason(int error) { return std::system_category().message(error); }

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw OutputError(path, what + " " + path.string() + ": " + os_reason(error));
}

// Distinguishes temporary files of different writes in one process. The only process-wide state
// here, and it must be: two Simulation objects writing into one directory need different names.
std::atomic<unsigned long long> g_temp_counter{0};

// How often to try another temporary name when one already exists (a stale file left by a
// killed process that had the same pid). Any real collision beyond a few tries is a different fault.
constexpr int k_temp_name_attempts = 16;

// Closes a descriptor and removes the temporary file unless release() was called.
class TempFile {
 public:
  TempFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&& other) noexcept
      : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), released_(std::exchange(other.released_, true)) {}
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(path_.c_str());
  }

  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Closes the descriptor, reporting close's error (which can be a delayed write error on NFS).
  [[nodiscard]] int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }
  void release() { released_ = true; }

 private:
  std::filesystem::path path_;
  int fd_;
  bool released_ = false;
};

void write_all(const TempFile& temp, const std::filesystem::path& target, std::string_view content) {
  const char* next = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t written = ::write(temp.fd(), next, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(target, "cannot write", errno);
    }
    next += written;
    left -= static_cast<std::size_t>(written);
  }
}

// Makes the rename itself durable. Best effort: some file systems refuse fsync on a directory
// (EINVAL), and by now the new content is in place, so failing the write would be wrong.
void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

OutputError::OutputError(std::filesystem::path path, const std::string& message)
    : InputError(message), path_(std::move(path)) {}

namespace {

// Writes `content` to a fresh temporary beside `path` and syncs it; the caller renames it.
TempFile write_temporary(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path name = path.filename();
  if (name.empty() || name == "." || name == "..") {
    throw OutputError(path, "cannot write " + path.string() + ": the path names no file");
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");

  // The temporary lives in the target's directory so the rename stays within one file system;
  // the leading dot keeps it out of plain listings while it exists.
  int fd = -1;
  std::filesystem::path temp_path;
  for (int attempt = 0; attempt < k_temp_name_attempts; ++attempt) {
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on the chained operator+.
    std::string temp_name = ".";
    temp_name += name.string();
    temp_name += ".tmp-";
    temp_name += std::to_string(::getpid());
    temp_name += '-';
    temp_name += std::to_string(g_temp_counter.fetch_add(1));
    temp_path = dir / temp_name;
    fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) fail(path, "cannot write", errno);
  TempFile temp(temp_path, fd);
  write_all(temp, path, content);
  if (::fsync(temp.fd()) != 0) fail(path, "cannot write", errno);
  if (const int error = temp.close(); error != 0) fail(path, "cannot write", error);
  return temp;
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  TempFile temp = write_temporary(path, content);
  // rename(2) replaces a file atomically and fails with EISDIR if `path` is a directory.
  if (::rename(temp.path().c_str(), path.c_str()) != 0) fail(path, "cannot write", errno);
  temp.release();
  sync_directory(directory_of(path));
}

std::size_t remove_stale_temporaries(const std::filesystem::path& dir, const std::string& name) {
  const std::string prefix = "." + name + ".tmp-";
  std::size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return 0;
  for (const auto& entry : it) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) != 0) continue;
    // .NAME.tmp-PID-N: the writer's process id, then a counter.
    const std::string rest = file.substr(prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || dash > 9) continue;
    long pid = 0;
    bool digits = true;
    for (std::size_t i = 0; i < dash; ++i) {
      if (rest[i] < '0' || rest[i] > '9') digits = false;
      if (digits) pid = pid * 10 + (rest[i] - '0');
    }
    if (!digits || pid <= 0 || pid == ::getpid()) continue;
    // Only a process that no longer exists cannot be writing it (EPERM: it runs, as someone else).
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

void write_output_set(const std::filesystem::path& dir, const std::vector<OutputFile>& files,
                      const std::string& producer) {
  for (const auto& f : files) remove_stale_temporaries(dir, f.name);
  remove_stale_temporaries(dir, kManifestName);

  // 1. Every file whole in a temporary: a full disk fails here, with the previous set untouched.
  std::vector<TempFile> temps;
  temps.reserve(files.size());
  for (const auto& f : files) temps.push_back(write_temporary(dir / f.name, f.content));
  nlohmann::ordered_json manifest{{"schema", "ess-sim/output-manifest/v1"}, {"producer", producer}};
  nlohmann::ordered_json listed = nlohmann::ordered_json::array();
  for (const auto& f : files) {
    listed.push_back({{"name", f.name}, {"bytes", f.content.size()}, {"sha256", sha256_hex(f.content)}});
  }
  manifest["files"] = std::move(listed);
  const std::string manifest_text = manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  TempFile manifest_temp = write_temporary(dir / kManifestName, manifest_text);

  // 2. No manifest while the set changes: a crash from here on leaves a set without one.
  const std::filesystem::path manifest_path = dir / kManifestName;
  if (::unlink(manifest_path.c_str()) != 0 && errno != ENOENT) fail(manifest_path, "cannot remove", errno);

  // 3. Each file over its target; if one rename fails, remove the whole set rather than leave new
  // files beside old ones.
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::filesystem::path target = dir / files[i].name;
    if (::rename(temps[i].path().c_str(), target.c_str()) != 0) {
      const int error = errno;
      for (const auto& f : files) ::unlink((dir / f.name).c_str());
      throw OutputError(target, "cannot write " + target.string() + ": " + os_reason(error) +
                                    " (the output set in " + dir.string() +
                                    " was removed so that no mix of old and new files remains)");
    }
    temps[i].release();
  }
  // 4. The manifest last: its presence says the set is complete.
  if (::rename(manifest_temp.path().c_str(), manifest_path.c_str()) != 0) fail(manifest_path, "cannot write", errno);
  manifest_temp.release();
  sync_directory(dir);
}

void ensure_directory(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    throw OutputError(dir, "cannot create directory " + dir.string() + ": " + error.message());
  }
  // create_directories reports success for an existing non-directory on some library versions.
  if (!std::filesystem::is_directory(dir, error)) {
    throw OutputError(dir, "cannot create directory " + dir.string() + ": " + os_reason(ENOTDIR));
  }
}

}  // namespace ess
