// The repository is self-contained (issue 14): no file it ships refers to the folder beside the
// checkout that the project was first developed next to, so a plain clone builds, tests and
// recalibrates; the public measurements live in calibration/data/public/ instead, each folder with
// a README naming its files' origin and license, and the shipped profiles name their inputs there.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../scratch_dir.h"
#include "calibration/calibrate.h"

namespace fs = std::filesystem;

namespace {

// Written in pieces so that this file does not itself hold what it looks for.
const std::string kBesideCheckout = std::string("..") + "/shared";
const std::string kSharedData = std::string("shared") + "/data";

// The design document the project started from stays beside the checkout: a shipped file that
// cites it (by its file name, or by the name the presets once gave it) sends a user to text they cannot read.
const std::string kDesignDocument = std::string("DESIGN") + ".md";
const std::string kDesignBrief = std::string("design") + " brief";

bool refers_outside(const std::string& text) {
  return text.find(kBesideCheckout) != std::string::npos || text.find(kSharedData) != std::string::npos ||
         text.find(kDesignDocument) != std::string::npos || text.find(kDesignBrief) != std::string::npos;
}

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The tracked files (`git ls-files`), relative to root; nothing when git cannot list them (no git,
// or a repository git refuses to read).
std::optional<std::vector<std::string>> git_tracked(const fs::path& root) {
  const std::string command = ess::shell_command({"git", "-C", root.string(), "ls-files", "-z"}) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) return std::nullopt;
  std::vector<std::string> files;
  std::size_t start = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\0') {
      files.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  }
  return files;
}

// Every regular file under root, relative to it, without .git/ folders and the top-level build
// outputs that .gitignore names (build*/, out/): the source tree of a copy that is not a clone.
std::vector<std::string> walked(const fs::path& root) {
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      const bool top = it.depth() == 0;
      if (name == ".git" || (top && (name.rfind("build", 0) == 0 || name == "out"))) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root).generic_string());
  }
  return files;
}

std::vector<std::string> repository_files(const fs::path& root) {
  if (fs::exists(root / ".git")) {
    if (auto tracked = git_tracked(root)) return *tracked;
  }
  return walked(root);
}

// "path:line" of every line of these files (relative to root) that refers outside the repository.
std::vector<std::string> outside_references(const fs::path& root, const std::vector<std::string>& files) {
  std::vector<std::string> found;
  for (const auto& file : files) {
    const fs::path path = root / file;
    if (!fs::is_regular_file(path)) continue;  // tracked but deleted in this work tree
    std::istringstream text(read_whole(path));
    std::string line;
    for (int number = 1; std::getline(text, line); ++number) {
      if (refers_outside(line)) found.push_back(file + ":" + std::to_string(number));
    }
  }
  return found;
}

}  // namespace

TEST_CASE("the outside-reference matcher finds both spellings and nothing else", "[repository]") {
  CHECK(refers_outside("\"path\": \"" + kBesideCheckout + "/data/vidur/x.csv\""));
  CHECK(refers_outside("/work/" + kSharedData + "/SOURCES.md"));
  CHECK(refers_outside("(" + kBesideCheckout + " " + kDesignDocument + " section 6)"));
  CHECK(refers_outside("layout the batches imply, see " + kDesignDocument + " section 5"));
  CHECK(refers_outside("\"source\": \"one NIC per GPU (project " + kDesignBrief + ", section 6)\""));
  CHECK_FALSE(refers_outside("the design of the engine, in sim/README.md"));
  CHECK_FALSE(refers_outside("calibration/data/public/vidur/compute_a100_meta-llama_Llama-2-7b-hf_mlp.csv"));
  CHECK_FALSE(refers_outside("std::shared_ptr<Data> shared; // shared by every GPU of a node"));
}

TEST_CASE("the repository scan reports each offending line and skips build outputs", "[repository]") {
  // The scan itself must be able to fail: a scratch tree (not a git repository, so it is walked).
  const ess::test::ScratchDir dir("ess-self-contained");
  const auto write = [&](const std::string& file, const std::string& text) {
    fs::create_directories((dir.path() / file).parent_path());
    std::ofstream(dir.path() / file) << text;
  };
  write("README.md", "Data in calibration/data/public/.\n");
  write("calibration/profiles/p.json", "{\n  \"path\": \"" + kBesideCheckout + "/data/a.csv\"\n}\n");
  write("build/release/CMakeCache.txt", kBesideCheckout + "\n");  // a build output, not shipped
  write("sub/.git/config", kSharedData + "\n");
  const auto files = walked(dir.path());
  CHECK(std::set<std::string>(files.begin(), files.end()) ==
        std::set<std::string>{"README.md", "calibration/profiles/p.json"});
  CHECK(outside_references(dir.path(), files) == std::vector<std::string>{"calibration/profiles/p.json:2"});
}

TEST_CASE("no file of the repository refers to data outside it", "[repository]") {
  const fs::path root = ESS_SOURCE_DIR;
  const auto files = repository_files(root);
  INFO(files.size() << " files listed under " << root);
  // Not vacuous: the listing holds the files that used to refer outside.
  const std::set<std::string> listed(files.begin(), files.end());
  REQUIRE(listed.count("calibration/profiles/a100-80gb-sxm-measured.json") == 1);
  REQUIRE(listed.count("tests/CMakeLists.txt") == 1);
  const auto found = outside_references(root, files);
  std::string lines;
  for (const auto& f : found) lines += "\n  " + f;
  INFO("these lines refer to " << kBesideCheckout << " or " << kSharedData
                               << ", which a clone does not have (use calibration/data/public/):" << lines);
  CHECK(found.empty());
}

TEST_CASE("each public data folder has a README naming every file in it", "[repository]") {
  const fs::path public_data = fs::path(ESS_SOURCE_DIR) / "calibration/data/public";
  int folders = 0;
  for (const auto& folder : fs::directory_iterator(public_data)) {
    if (!folder.is_directory()) continue;
    ++folders;
    INFO(folder.path());
    REQUIRE(fs::is_regular_file(folder.path() / "README.md"));
    const std::string readme = read_whole(folder.path() / "README.md");
    CHECK(readme.find("icense") != std::string::npos);  // License / license
    for (const auto& file : fs::directory_iterator(folder.path())) {
      const std::string name = file.path().filename().string();
      if (name == "README.md") continue;
      INFO(name << " is not described in its folder's README.md");
      CHECK(readme.find("`" + name + "`") != std::string::npos);
    }
  }
  CHECK(folders >= 4);  // vidur, liger, measured, deepseek
}

TEST_CASE("the shipped profiles name their inputs inside the repository, as their README shows", "[repository]") {
  const std::string readme = read_whole(fs::path(ESS_SOURCE_DIR) / "calibration/README.md");
  for (const std::string name : {"a100-80gb-sxm-measured", "h100-sxm-measured"}) {
    const fs::path path = fs::path(ESS_SOURCE_DIR) / "calibration/profiles" / (name + ".json");
    const auto profile = nlohmann::json::parse(read_whole(path));
    // calibration/README.md gives the recorded command verbatim, so pasting it from there works too.
    const std::string command = profile.at("calibration").at("command").get<std::string>();
    INFO(name << ": recorded command " << command);
    CHECK(readme.find("\n" + command + "\n") != std::string::npos);
    for (const auto& input : profile.at("calibration").at("inputs")) {
      const fs::path in = input.at("path").get<std::string>();
      INFO(name << ": input " << in);
      CHECK(in.is_relative());
      CHECK(in.lexically_normal() == in);
      CHECK(*in.begin() != "..");
      CHECK(in.generic_string().rfind("calibration/data/public/", 0) == 0);
      CHECK(fs::is_regular_file(fs::path(ESS_SOURCE_DIR) / in));
    }
  }
}
