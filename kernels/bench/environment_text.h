// Formatting of the environment fields of the measurements JSON from what the CUDA, cuBLAS and
// NCCL APIs and the kernel report. Pure functions, so the formats are tested without a GPU.
#pragma once

#include <ctime>
#include <filesystem>
#include <string>
#include <string_view>

namespace ess::bench {

// cudaDriverGetVersion / cudaRuntimeGetVersion encode 1000 x major + 10 x minor (CUDA Runtime API
// reference): 12080 -> "12.8", 13000 -> "13.0". Throws std::invalid_argument for a value < 1000.
[[nodiscard]] std::string format_cuda_version(int encoded);

// ncclGetVersion: NCCL_VERSION(X, Y, Z) is X x 10000 + Y x 100 + Z since NCCL 2.9, and
// X x 1000 + Y x 100 + Z before (nccl.h): 22809 -> "2.28.9", 2708 -> "2.7.8".
// Throws std::invalid_argument for a value < 1000.
[[nodiscard]] std::string format_nccl_version(int encoded);

// The NVIDIA kernel driver's version from the text of /proc/driver/nvidia/version, whose first
// line is "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  <date>" (or "... Open Kernel
// Module for x86_64  570.86.15  Release Build ..."): the first word after "Kernel Module" made
// of digits and dots with at least one dot. "unknown" when there is no such word.
[[nodiscard]] std::string parse_driver_version(std::string_view proc_text);

// parse_driver_version of the file (the kernel's /proc/driver/nvidia/version by default), or
// "unknown" when it cannot be read.
[[nodiscard]] std::string read_driver_version(const std::filesystem::path& path = "/proc/driver/nvidia/version");

// gethostname, or "unknown".
[[nodiscard]] std::string host_name();

// A time as UTC ISO 8601 with seconds and a Z: 0 -> "1970-01-01T00:00:00Z". Computed without the
// C library's time zone state (days-from-civil, H. Hinnant's chrono date algorithms).
[[nodiscard]] std::string iso8601_utc(std::time_t t);

}  // namespace ess::bench
