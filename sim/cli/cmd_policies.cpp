// `ess-sim policies [--json]`: every registered policy of every pluggable kind (eviction, access
// model, overlap, prefetch, predictor), every other choice a scenario makes by name (arrival
// processes, trace formats, prefill modes, the controller's initial cap, MLA kernels, CUDA-graph
// rules) and the measurement formats `calibrate` reads, by that name and a one-line summary, with
// the parameters a policy declares (the key beside the kind's field, range, default). The lists come
// from the registries, so they are what the scenario loader and `calibrate` accept.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/measurement_formats.h"
#include "models/mla_kernels.h"
#include "sim/cli/commands.h"
#include "sim/config/engine_config.h"
#include "sim/config/serving_config.h"
#include "sim/offload/access_model.h"
#include "sim/offload/eviction.h"
#include "sim/offload/overlap.h"
#include "sim/offload/prefetch.h"

namespace ess {

namespace {

struct PolicyLine {
  std::string_view name;
  std::string summary;
  std::span<const PolicyParam> params;
};

struct PolicyKind {
  std::string_view kind;   // the JSON key
  std::string_view field;  // where a scenario names one
  std::string_view fallback;  // the policy of a scenario that names none ("": there is none)
  std::vector<PolicyLine> lines;
};

template <typename Factory>
PolicyKind kind_of(std::string_view kind, std::string_view field, std::string_view fallback,
                   std::span<const Registered<Factory>> registry) {
  PolicyKind k{kind, field, fallback, {}};
  for (const auto& r : registry) k.lines.push_back({r.name, std::string(r.summary), r.params});
  return k;
}

// A kind whose lines have a name and a summary only (serving.*, engine.*).
template <typename Line>
PolicyKind named_kind(std::string_view kind, std::string_view field, std::string_view fallback, std::span<const Line> lines) {
  PolicyKind k{kind, field, fallback, {}};
  for (const auto& l : lines) k.lines.push_back({l.name, std::string(l.summary), {}});
  return k;
}

// The measurement formats `calibrate` reads, recognised from a file's content: CSV tables by their
// header, JSON documents by their schema.
PolicyKind calibration_formats() {
  PolicyKind k{"calibration-format", "ess-sim calibrate FILE, told from its content", "", {}};
  for (const auto* f : measurement::csv_formats()) k.lines.push_back({f->name, std::string("CSV: ") + f->what, {}});
  for (const auto* f : measurement::json_formats()) k.lines.push_back({f->name, std::string("JSON, schema ") + f->schema, {}});
  return k;
}

std::vector<PolicyKind> policy_kinds() {
  const auto& graphs = cuda_graph_rules();
  return {
      kind_of("eviction", "cache.eviction", kDefaultEviction, eviction_policies()),
      kind_of("access", "cache.access.model", kDefaultAccessModel, access_models()),
      kind_of("overlap", "cache.overlap", kDefaultOverlap, overlap_policies()),
      kind_of("prefetch", "cache.prefetch.policy", kDefaultPrefetchPolicy, prefetch_policies()),
      kind_of("predictor", "cache.prefetch.predictor", kDefaultPredictor, prefetch_predictors()),
      // The other plug-in kinds a scenario chooses by name: serving's and the engine's.
      named_kind("arrivals", "serving.arrivals.process", kArrivalProcesses[0].name, std::span<const Named>(kArrivalProcesses)),
      named_kind("trace-format", "serving.arrivals.format", kTraceFormats[0].name, std::span<const Named>(kTraceFormats)),
      named_kind("prefill", "serving.prefill.mode", kPrefillModes[0].name, std::span<const Named>(kPrefillModes)),
      named_kind("initial-cap", "serving.controller.initial_cap", kInitialCaps[0].name, std::span<const Named>(kInitialCaps)),
      named_kind("mla-kernel", "engine.mla_kernel", mla_kernels().front().name, mla_kernels()),
      named_kind("cuda-graph-sizes", "engine.cuda_graph_sizes", "none", std::span<const CudaGraphRule>(graphs)),
      calibration_formats(),
      // A new kind: its registry here, one line (sim/offload/registry.h lists the policy kinds).
  };
}

// Where a scenario gives a policy's parameter: beside the field naming the policy (cache.heat_decay
// beside cache.eviction).
std::string param_key(const PolicyKind& k, const PolicyParam& p) {
  const std::size_t dot = k.field.rfind('.');
  return std::string(k.field.substr(0, dot == std::string_view::npos ? 0 : dot + 1)) + std::string(p.name);
}

}  // namespace

void add_policies_command(CLI::App& app, CommandAction& action) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("policies", "List the registered policies of each kind (eviction, access model, "
                                             "overlap, prefetch, predictor), the other plug-ins a scenario names "
                                             "(arrival processes, trace formats, prefill modes, the controller's initial "
                                             "cap, MLA kernels, CUDA-graph rules) and the measurement formats calibrate reads");
  cmd->add_flag("--json", *json, "Print a JSON object {\"eviction\": [{\"name\": ..., \"summary\": ...}], ...}");
  cmd->callback([json, &action] {
    action = [json](std::ostream& out) {
      const std::vector<PolicyKind> kinds = policy_kinds();
      if (*json) {
        nlohmann::ordered_json doc = nlohmann::ordered_json::object();
        for (const PolicyKind& k : kinds) {
          auto& list = doc[std::string(k.kind)] = nlohmann::ordered_json::array();
          for (const PolicyLine& l : k.lines) {
            nlohmann::ordered_json params = nlohmann::ordered_json::array();
            for (const PolicyParam& p : l.params) {
              params.push_back({{"name", param_key(k, p)}, {"summary", p.summary}, {"range", p.range()}, {"default", p.default_value}});
            }
            list.push_back({{"name", l.name}, {"summary", l.summary}, {"params", params}});
          }
        }
        out << doc.dump(2) << "\n";
        return 0;
      }
      std::size_t width = 0;
      for (const PolicyKind& k : kinds) {
        for (const PolicyLine& l : k.lines) width = std::max(width, l.name.size());
      }
      bool first = true;
      for (const PolicyKind& k : kinds) {
        out << (first ? "" : "\n") << k.kind << " (" << k.field << (k.fallback.empty() ? "" : "; default ")
            << k.fallback << "):\n";
        first = false;
        for (const PolicyLine& l : k.lines) {
          out << "  " << l.name << std::string(width - l.name.size() + 2, ' ') << l.summary << "\n";
          for (const PolicyParam& p : l.params) {
            out << "  " << std::string(width + 2, ' ') << param_key(k, p) << ": " << p.summary << ", in " << p.range()
                << ", default " << p.default_value << "\n";
          }
        }
      }
      return 0;
    };
  });
}

}  // namespace ess
