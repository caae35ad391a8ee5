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
//
// Input is untrusted: JSON is read with duplicate keys, nesting beyond 64 levels and numbers beyond
// the double range rejected (ess::parse_json_text, sim/config/json_text.h), every time is checked (finite, durations >= 0,
// steps > 0 and not overlapping, events inside their step), and every problem is a TraceError naming
// the file, the JSON pointer of the event and what was expected.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/base/error.h"
#include "validate/pattern.h"

namespace ess {

// The categories a validation compares (per op category and per step; README "Against a real GPU run").
enum class ValidationCategory { gemm, norm, indexer, attention, elementwise, transfer, exposed_wait };
inline constexpr std::size_t kValidationCategories = 7;

[[nodiscard]] std::string_view to_string(ValidationCategory c);
// "gemm", "norm", "indexer", "attention", "elementwise", "transfer", "exposed_wait"; nullopt else.
[[nodiscard]] std::optional<ValidationCategory> parse_validation_category(std::string_view name);

class TraceError : public InputError {
 public:
  TraceError(const std::string& path, const std::string& where, const std::string& message);
};

// Bounds on what a trace may hold, far above real runs: they keep a wrong or hostile file from
// allocating or simulating without limit.
inline constexpr std::size_t kMaxTraceSteps = 100000;          // ess-runner args.step < this
inline constexpr std::int64_t kMaxTraceLayer = 100000;         // ess-runner args.layer < this
inline constexpr std::size_t kMaxKernelNameBytes = 64 * 1024;  // the longest C++ template kernel names are a few KB

// One decode step as measured (or simulated): seconds per category and the step time.
struct StepProfile {
  double step_time = 0.0;
  std::array<double, kValidationCategories> seconds{};
  // The step's shape where the source records it, so that a trace of another model or
  // configuration is refused instead of compared (compare_profiles): how many events of each
  // category it holds, and how many model layers its events name (0: not recorded, as in Kineto
  // traces). `events_are_ops`: the events are the simulator's ops one for one (ess-runner traces
  // and the simulation), not GPU kernels, which a library may split or fuse.
  std::array<std::size_t, kValidationCategories> events{};
  std::size_t layers = 0;
  bool events_are_ops = false;
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

// Kernel-name rules for Kineto traces: the first rule whose pattern (validate/pattern.h: a linear-
// time subset of regular expressions, searched anywhere in the name, case-insensitive) matches
// gives the category; "ignore" drops the kernel. File format:
//   {"schema": "ess-sim/kernel-categories/v1", "description": "...",
//    "rules": [{"pattern": "gemm|cutlass|cublas", "category": "gemm"}, ...]}
// Unknown keys are errors (a misspelt "patern" would otherwise be a rule that never matches).
class CategoryMap {
 public:
  // Throws TraceError naming the file and the rule (JSON pointer) for invalid JSON, a bad schema,
  // an unsupported pattern or an unknown category.
  static CategoryMap read(const std::string& path);
  static CategoryMap parse_text(std::string_view text, const std::string& origin);
  static CategoryMap parse(const nlohmann::json& doc, const std::string& origin);
  // The compiled-in validate/kineto-categories.json.
  static CategoryMap builtin();
  // nullopt: no rule matches. The string is a category name or "ignore".
  [[nodiscard]] std::optional<std::string> category_of(std::string_view kernel_name) const;
  [[nodiscard]] std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string pattern;
    NamePattern matcher;
    std::string category;
  };
  std::vector<Rule> rules_;
};

// validate/kineto-categories.json, compiled in: the mapping used when none is given.
extern const char* const kDefaultKinetoCategories;

// Reads a trace. `kineto_map` is needed only for Kineto traces (TraceError if one is met without
// it). Throws TraceError on an unreadable file, invalid JSON, an unknown format, or a malformed
// or empty trace; nothing else for any input (tests/fuzz/*_trace_fuzz.cpp).
[[nodiscard]] MeasuredTrace read_trace(const std::string& path, const CategoryMap* kineto_map);
// The same for a trace's text; `path` names it in errors.
[[nodiscard]] MeasuredTrace parse_trace_text(std::string_view text, const std::string& path,
                                             const CategoryMap* kineto_map);
[[nodiscard]] MeasuredTrace parse_trace(const nlohmann::json& doc, const std::string& path, const CategoryMap* kineto_map);


}  // namespace ess
