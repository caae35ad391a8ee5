// Importing real GPU traces for validation: per decode step, the step time and the time spent in
// each operator category, read from
//
//   ess-runner   our ground-truth runner's Chrome trace (kernels/runner; "otherData": {"format":
//                "ess-runner/v1"}): every event carries its category, step and layer
//   kineto       a PyTorch profiler (Kineto) Chrome trace: GPU kernels and memcpys, steps from the
//                ProfilerStep#N annotations, categories from kernel names through an editable
//                mapping file (validate/kineto-categories.json)
//
// The format is recognised from the content; anything else is a TraceError saying what was found.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

// The categories a validation compares (DESIGN.md: per op category and per step).
enum class ValidationCategory { gemm, norm, indexer, attention, elementwise, transfer, exposed_wait };
inline constexpr std::size_t kValidationCategories = 7;

[[nodiscard]] std::string_view to_string(ValidationCategory c);
// "gemm", "norm", "indexer", "attention", "elementwise", "transfer", "exposed_wait"; nullopt else.
[[nodiscard]] std::optional<ValidationCategory> parse_validation_category(std::string_view name);

class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& path, const std::string& where, const std::string& message);
};

// One decode step as measured (or simulated): seconds per category and the step time.
struct StepProfile {
  double step_time = 0.0;
  std::array<double, kValidationCategories> seconds{};
};

struct MeasuredTrace {
  std::string path;
  std::string format;          // "ess-runner" or "kineto"
  nlohmann::json metadata;     // ess-runner: otherData; kineto: deviceProperties and the like
  std::vector<StepProfile> steps;
  // ess-runner only: seconds per op name per step (the runner names its ops as the simulator does)
  std::vector<std::map<std::string, double>> ops;
  std::size_t events_used = 0;
  std::size_t events_outside_steps = 0;         // kernels before the first or after the last step
  std::map<std::string, double> uncategorised;  // kineto: kernel name -> seconds with no mapping
};

// Kernel-name rules for Kineto traces: the first rule whose regular expression (ECMAScript,
// searched anywhere in the name, case-insensitive) matches gives the category; "ignore" drops the
// kernel. File format:
//   {"schema": "ess-sim/kernel-categories/v1",
//    "rules": [{"pattern": "gemm|cutlass|cublas", "category": "gemm"}, ...]}
class CategoryMap {
 public:
  // Throws TraceError naming the file and the rule for a bad schema, pattern or category.
  static CategoryMap read(const std::string& path);
  static CategoryMap parse(const nlohmann::json& doc, const std::string& origin);
  // nullopt: no rule matches. The string is a category name or "ignore".
  [[nodiscard]] std::optional<std::string> category_of(const std::string& kernel_name) const;

 private:
  struct Rule {
    std::string pattern;
    std::regex regex;
    std::string category;
  };
  std::vector<Rule> rules_;
};

// validate/kineto-categories.json, compiled in: the mapping used when none is given.
extern const char* const kDefaultKinetoCategories;

// Reads a trace. `kineto_map` is needed only for Kineto traces (TraceError if one is met without
// it). Throws TraceError on an unreadable file, invalid JSON, an unknown format, or a malformed
// or empty trace.
[[nodiscard]] MeasuredTrace read_trace(const std::string& path, const CategoryMap* kineto_map);
[[nodiscard]] MeasuredTrace parse_trace(const nlohmann::json& doc, const std::string& path, const CategoryMap* kineto_map);

}  // namespace ess
