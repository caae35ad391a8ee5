// Where a trace was measured, as text for otherData: driver and library versions, date, host.
#pragma once

#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>

namespace ess::runner {

// The driver version in the text of /proc/driver/nvidia/version: the first dotted number of its
// first line ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." ->
// "550.54.15"); "unknown" if there is none.
[[nodiscard]] std::string parse_driver_version(std::string_view proc_text);
// parse_driver_version of the file, or "unknown" if it cannot be read.
[[nodiscard]] std::string read_driver_version(const std::filesystem::path& path = "/proc/driver/nvidia/version");

// cudaRuntimeGetVersion's 1000 x major + 10 x minor: 13000 -> "13.0", 12080 -> "12.8".
[[nodiscard]] std::string format_cuda_version(int version);
// cublasGetVersion's 10000 x major + 100 x minor + patch: 130100 -> "13.1.0".
[[nodiscard]] std::string format_cublas_version(int version);

// UTC ISO 8601 to the second: "2025-01-02T03:04:05Z".
[[nodiscard]] std::string utc_iso8601(std::time_t time);

// gethostname, or "unknown".
[[nodiscard]] std::string host_name();

}  // namespace ess::runner
