// Reading a whole input file. Callers turn a failure into their own error type and wording
// (ConfigError for scenarios, MeasurementError for calibration inputs, TraceError for traces);
// describe() gives the shared wording of each problem.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ess {

// Largest input file any reader accepts (scenarios, measurements, traces, category maps, replay
// traces). Far above any real input (a Kineto trace of a whole decode run is ~100 MB); it exists so
// that a wrong path (a disk image, a log) fails at once instead of filling memory.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{1} << 30;  // 1 GiB

// `not_regular`: a FIFO, socket or device (/dev/zero, /dev/stdin), which could block or never end.
enum class ReadProblem { none, missing, directory, not_regular, too_large, unreadable };

// Reads `path` whole into `text` (binary, unchanged), at most `max_bytes`. Returns none on success;
// on failure `text` is left empty and the return value says why.
[[nodiscard]] ReadProblem read_whole_file(const std::filesystem::path& path, std::string& text,
                                          std::uint64_t max_bytes = kMaxInputFileBytes);

// What went wrong, for messages: "no such file", "is a directory", ... (empty for none).
[[nodiscard]] std::string describe(ReadProblem problem, std::uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace ess
