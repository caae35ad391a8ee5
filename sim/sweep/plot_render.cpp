// Rendering a planned chart set: gnuplot found on PATH and run once a chart in a private directory,
// then the set written into the output directory whole.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"
#include "sim/io/atomic_file.h"
#include "sim/io/child_process.h"
#include "sim/io/read_file.h"
#include "sim/sweep/plot.h"
#include "sim/sweep/plot_text.h"

namespace ess {

namespace {

using plot::Json;

std::string os_error(int error) { return std::strerror(error); }

bool is_executable_file(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// A private directory removed with its contents at the end.
class StagingDir {
 public:
  StagingDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ess-plot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw OutputError(pattern, "cannot create a temporary directory " + pattern + ": " + os_error(errno));
    }
    path_ = pattern;
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_output(const std::filesystem::path& path) {
  std::string text;
  if (read_whole_file(path, text) != ReadProblem::none) return "";
  return text;
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs `gnuplot script` in `dir` (stdin /dev/null, stdout and stderr to files there); returns what
// it printed on stderr. Throws OutputError when it cannot start or does not exit with status 0.
std::string run_gnuplot(const std::filesystem::path& gnuplot, const std::filesystem::path& dir, const std::string& script) {
  const auto out_path = dir / ".gnuplot.stdout";
  const auto err_path = dir / ".gnuplot.stderr";
  const std::string program = gnuplot.string();
  const pid_t pid = start_child(program, {script}, dir, out_path, err_path, "cannot execute gnuplot");
  const int status = wait_child(pid, program);
  const std::string stderr_text = trim_end(read_output(err_path));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                              : "was killed by signal " + std::to_string(WTERMSIG(status));
    throw OutputError(gnuplot, program + " " + how + " on " + script +
                                   (stderr_text.empty() ? std::string() : ":\n" + stderr_text) +
                                   " (no chart was written)");
  }
  return stderr_text;
}

// The files a previous output set in `dir` lists (its manifest), or none. A manifest of anything
// but charts (a run's results.json) is refused: its set would lose its manifest.
std::vector<std::string> previous_plot_files(const std::filesystem::path& dir) {
  const auto path = dir / kManifestName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  const Json manifest = read_json_file(path);
  std::vector<std::string> names;
  if (manifest.is_object() && manifest.contains("files") && manifest["files"].is_array()) {
    for (const auto& f : manifest["files"]) {
      if (f.is_object() && f.contains("name") && f["name"].is_string()) names.push_back(f["name"].get<std::string>());
    }
  }
  for (const auto& n : names) {
    const auto dot = n.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : n.substr(dot);
    if (n.find('/') != std::string::npos || (ext != ".gp" && ext != ".dat" && ext != ".png" && ext != ".svg")) {
      throw ConfigError(path.string(), "", "this directory holds another output set (it lists \"" + n +
                                               "\"), not charts; choose another -o directory");
    }
  }
  return names;
}

}  // namespace

std::filesystem::path find_gnuplot(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    throw OutputError(program, "gnuplot not found: " + program +
                                   " is not an executable file (install gnuplot with apt-get install gnuplot-nox)");
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    // An empty entry means the current directory: not a place to pick a program from.
    if (!dir.empty()) {
      const std::filesystem::path candidate = std::filesystem::path(dir) / program;
      if (is_executable_file(candidate)) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  throw OutputError(program, program + " not found on PATH: install it with apt-get install gnuplot-nox");
}

PlotOutput render_plots(const PlotPlan& plan, const std::filesystem::path& gnuplot, const std::filesystem::path& out_dir) {
  PlotOutput result;
  std::error_code ec;
  const auto previous = std::filesystem::is_directory(out_dir, ec) ? previous_plot_files(out_dir) : std::vector<std::string>{};
  const StagingDir staging;
  for (const auto& chart : plan.charts) {
    write_file_atomically(staging.path() / (chart.name + ".gp"), chart.script);
    write_file_atomically(staging.path() / (chart.name + ".dat"), chart.data);
  }
  for (const auto& chart : plan.charts) {
    const std::string script = chart.name + ".gp";
    const std::string printed = run_gnuplot(gnuplot, staging.path(), script);
    if (!printed.empty()) result.warnings.push_back("gnuplot on " + script + ": " + printed);
  }
  // Everything rendered: read the set into memory and write it into out_dir in one go.
  std::vector<std::pair<std::string, std::string>> contents;
  for (const auto& chart : plan.charts) {
    contents.emplace_back(chart.name + ".gp", chart.script);
    contents.emplace_back(chart.name + ".dat", chart.data);
    for (const auto& image : chart.images) {
      std::string bytes;
      const auto problem = read_whole_file(staging.path() / image, bytes);
      if (problem != ReadProblem::none || bytes.empty()) {
        throw OutputError(staging.path() / image, "gnuplot exited with status 0 but did not write " + image +
                                                      (problem != ReadProblem::none ? " (" + describe(problem) + ")"
                                                                                    : " (empty)"));
      }
      contents.emplace_back(image, std::move(bytes));
    }
  }
  std::vector<OutputFile> files;
  for (const auto& [name, content] : contents) files.push_back({name, content});
  ensure_directory(out_dir);
  write_output_set(out_dir, files, std::string("ess-sim ") + ESS_SIM_VERSION + " plot");
  for (const auto& name : previous) {
    const bool kept = std::any_of(contents.begin(), contents.end(), [&](const auto& f) { return f.first == name; });
    if (!kept) ::unlink((out_dir / name).c_str());
  }
  for (const auto& [name, unused] : contents) result.written.push_back(out_dir / name);
  result.written.push_back(out_dir / kManifestName);
  return result;
}

}  // namespace ess
