#include "tests/layering/layering_check.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace ess::layering {
namespace {

namespace fs = std::filesystem;

// The top-level folders whose code is checked (tests/ may include anything).
const std::vector<std::string> kCheckedRoots = {"sim", "models", "calibration", "validate", "kernels"};

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex word("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), word); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

std::vector<std::string> split_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream in(row);
  std::string cell;
  while (std::getline(in, cell, '|')) cells.push_back(trim(cell));
  // "| a | b |" splits into "", "a", "b": drop the empty first cell.
  if (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());
  return cells;
}

void check_table(const LayerTable& table) {
  for (const auto& [name, folder] : table.folders) {
    for (const auto& dep : folder.may_include) {
      const auto it = table.folders.find(dep);
      if (it == table.folders.end()) throw std::runtime_error(name + " may include " + dep + ", which the table lacks");
      if (it->second.layer > folder.layer) {
        throw std::runtime_error(name + " (layer " + std::to_string(folder.layer) + ") may include " + dep + " of layer " +
                                 std::to_string(it->second.layer) + ": a folder includes only its own layer or lower");
      }
    }
  }
  // No cycle among the allowed includes (within a layer they could form one).
  std::map<std::string, int> state;  // 1 on the path, 2 done
  std::function<void(const std::string&, std::vector<std::string>&)> visit = [&](const std::string& name,
                                                                                std::vector<std::string>& path) {
    state[name] = 1;
    path.push_back(name);
    for (const auto& dep : table.folders.at(name).may_include) {
      if (state[dep] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), dep); it != path.end(); ++it) cycle += *it + " -> ";
        throw std::runtime_error("the table allows a cycle: " + cycle + dep);
      }
      if (state[dep] == 0) visit(dep, path);
    }
    path.pop_back();
    state[name] = 2;
  };
  for (const auto& [name, folder] : table.folders) {
    std::vector<std::string> path;
    if (state[name] == 0) visit(name, path);
  }
}

std::string allowed_text(const std::string& name, const Folder& folder) {
  std::string text = name + " (layer " + std::to_string(folder.layer) + ") may include ";
  if (folder.may_include.empty()) return text + "nothing";
  bool first = true;
  for (const auto& dep : folder.may_include) {
    text += (first ? "" : ", ") + dep;
    first = false;
  }
  return text;
}

bool is_source(const fs::path& path) {
  static const std::set<std::string> extensions = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"};
  return extensions.count(path.extension().string()) > 0;
}

void check_includes(const fs::path& root, const LayerTable& table, std::vector<std::string>& out) {
  static const std::regex quoted(R"(^\s*#\s*include\s*"([^"]+)\")");
  static const std::regex simgrid(R"(^\s*#\s*include\s*<(simgrid|xbt)/)");
  for (const auto& top : kCheckedRoots) {
    if (!fs::exists(root / top)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      if (entry.is_regular_file() && is_source(entry.path())) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const std::string rel = fs::relative(file, root).generic_string();
      const std::string from = folder_of(rel);
      const auto folder = table.folders.find(from);
      if (folder == table.folders.end()) {
        out.push_back(rel + ": folder " + from + " is not in README.md's layer table");
        continue;
      }
      std::ifstream in(file);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch m;
        const std::string where = rel + ":" + std::to_string(number);
        if (std::regex_search(line, m, simgrid) && table.simgrid_files.count(rel) == 0) {
          out.push_back(where + " includes a SimGrid header: only the table's SimGrid files may");
          continue;
        }
        if (!std::regex_search(line, m, quoted)) continue;
        std::string target = m[1].str();
        const std::string first = target.substr(0, target.find('/'));
        if (std::find(kCheckedRoots.begin(), kCheckedRoots.end(), first) == kCheckedRoots.end() ||
            target.find('/') == std::string::npos) {
          const fs::path beside = file.parent_path() / target;
          if (!fs::exists(beside)) continue;  // a third-party or generated header
          target = fs::relative(beside, root).lexically_normal().generic_string();
        }
        const std::string to = folder_of(target);
        if (to.empty() || to == from || folder->second.may_include.count(to) > 0) continue;
        out.push_back(where + " includes " + target + ": " + allowed_text(from, folder->second));
      }
    }
  }
}

std::set<std::string> folders_of_library(const LayerTable& table, const std::string& library) {
  std::set<std::string> out;
  for (const auto& [name, folder] : table.folders) {
    if (folder.libraries.count(library) > 0) out.insert(name);
  }
  return out;
}

void check_links(const fs::path& root, const LayerTable& table, std::vector<std::string>& out) {
  static const std::regex call(R"(target_link_libraries\s*\(([^)]*)\))");
  static const std::regex library("^ess_[a-z0-9_]+$");
  std::vector<fs::path> files;
  for (const auto& top : kCheckedRoots) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && (name == "CMakeLists.txt" || entry.path().extension() == ".cmake")) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const std::string text = read_whole(file);
    const std::string rel = fs::relative(file, root).generic_string();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator(); ++it) {
      const auto line = 1 + std::count(text.begin(), text.begin() + it->position(), '\n');
      const std::string where = rel + ":" + std::to_string(line);
      std::stringstream words((*it)[1].str());
      std::string target;
      words >> target;
      if (!std::regex_match(target, library)) continue;  // executables: ess-sim, ess-bench, ...
      const auto from = folders_of_library(table, target);
      if (from.empty()) {
        out.push_back(where + ": library " + target + " is not in README.md's layer table");
        continue;
      }
      for (std::string linked; words >> linked;) {
        if (!std::regex_match(linked, library) || linked == "ess_warnings") continue;
        const auto to = folders_of_library(table, linked);
        if (to.empty()) {
          out.push_back(where + ": " + target + " links " + linked + ", which is not in README.md's layer table");
          continue;
        }
        for (const auto& needed : to) {
          const bool allowed = std::any_of(from.begin(), from.end(), [&](const std::string& f) {
            return f == needed || table.folders.at(f).may_include.count(needed) > 0;
          });
          if (!allowed) {
            out.push_back(where + ": " + target + " links " + linked + " (" + needed + "): " +
                          allowed_text(*from.begin(), table.folders.at(*from.begin())));
          }
        }
      }
    }
  }
}

}  // namespace

LayerTable parse_layer_table(const std::string& readme) {
  const auto begin = readme.find("<!-- layers");
  const auto end = readme.find("<!-- end of layers -->");
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    throw std::runtime_error("README.md has no layer table between \"<!-- layers\" and \"<!-- end of layers -->\"");
  }
  LayerTable table;
  std::stringstream in(readme.substr(begin, end - begin));
  std::vector<std::pair<std::string, std::pair<int, int>>> ranges;  // "every folder of layers A-B"
  static const std::regex range(R"(every folder of layers (\d)-(\d))");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("SimGrid headers:", 0) == 0) {
      for (const auto& file : backticked(line)) table.simgrid_files.insert(file);
      continue;
    }
    if (line.rfind("| `", 0) != 0) continue;
    const auto cells = split_cells(line);
    if (cells.size() < 4 || backticked(cells[0]).size() != 1) throw std::runtime_error("malformed layer row: " + line);
    const std::string name = backticked(cells[0]).front();
    Folder folder;
    try {
      folder.layer = std::stoi(cells[1]);
    } catch (const std::exception&) {
      throw std::runtime_error("layer row " + name + ": the layer \"" + cells[1] + "\" is not a number");
    }
    for (const auto& lib : backticked(cells[2])) folder.libraries.insert(lib);
    std::smatch m;
    if (std::regex_search(cells[3], m, range)) {
      ranges.push_back({name, {std::stoi(m[1].str()), std::stoi(m[2].str())}});
    } else {
      for (const auto& dep : backticked(cells[3])) folder.may_include.insert(dep);
    }
    if (!table.folders.emplace(name, folder).second) throw std::runtime_error("layer row " + name + " appears twice");
  }
  for (const auto& [name, bounds] : ranges) {
    for (const auto& [other, folder] : table.folders) {
      if (folder.layer >= bounds.first && folder.layer <= bounds.second) table.folders[name].may_include.insert(other);
    }
  }
  if (table.folders.empty()) throw std::runtime_error("README.md's layer table has no rows");
  check_table(table);
  return table;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.find('/');
  if (slash == std::string::npos) return "";
  const std::string top = path.substr(0, slash);
  if (std::find(kCheckedRoots.begin(), kCheckedRoots.end(), top) == kCheckedRoots.end()) return "";
  if (top != "sim") return top;
  const auto second = path.find('/', slash + 1);
  return second == std::string::npos ? "" : path.substr(0, second);
}

std::vector<std::string> check_layers(const std::filesystem::path& root) {
  const LayerTable table = parse_layer_table(read_whole(root / "README.md"));
  std::vector<std::string> out;
  check_includes(root, table, out);
  check_links(root, table, out);
  return out;
}

}  // namespace ess::layering
