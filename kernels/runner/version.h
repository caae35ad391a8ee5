// The version ess-runner reports in its traces ("tool": "ess-runner <version>") and --version.
#pragma once

namespace ess::runner {

inline constexpr const char* kRunnerVersion = "0.1.0";
// The trace format this program writes (otherData.format); bump it when the format changes.
inline constexpr const char* kTraceFormat = "ess-runner/v1";

}  // namespace ess::runner
