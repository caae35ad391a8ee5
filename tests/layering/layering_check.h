// The layering check: every include and library link of the source tree against the layer table
// in README.md ("Layers", between the `<!-- layers` and `<!-- end of layers -->` lines).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ess::layering {

struct Folder {
  int layer = 0;
  std::set<std::string> libraries;  // the CMake libraries built from it
  std::set<std::string> may_include;
};

struct LayerTable {
  std::map<std::string, Folder> folders;  // "sim/graph", "models", ...
  std::set<std::string> simgrid_files;     // the only files that may include <simgrid/...>
};

// Reads the table out of README.md's text; throws std::runtime_error naming what is malformed.
[[nodiscard]] LayerTable parse_layer_table(const std::string& readme);

// The folder a repository-relative path belongs to ("sim/graph/op.h" -> "sim/graph",
// "models/gemm.h" -> "models"), or "" for one outside the checked folders.
[[nodiscard]] std::string folder_of(const std::string& path);

// Every violation under `root` (README.md's table, the sources of sim/, models/, calibration/,
// validate/, kernels/ and their CMake files), one line each: the file and line, what it includes
// or links, and what its folder may include. Empty when the tree keeps its layers.
[[nodiscard]] std::vector<std::string> check_layers(const std::filesystem::path& root);

}  // namespace ess::layering
