// Reading a whole input file. Callers turn a failure into their own error type and wording
// (ConfigError for scenarios, MeasurementError for calibration inputs, TraceError for traces).
#pragma once

#include <filesystem>
#include <string>

namespace ess {

enum class ReadProblem { none, missing, directory, unreadable };

// Reads `path` whole into `text` (binary, unchanged). Returns none on success; on failure `text`
// is left empty and the return value says why.
[[nodiscard]] ReadProblem read_whole_file(const std::filesystem::path& path, std::string& text);

}  // namespace ess
