// `ess-sim search pd`: prints what sim/serving/pd_search.h finds.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/serving/pd_search.h"

namespace ess {

namespace {

void print_text(const Scenario& base, const PdSearch& q, const nlohmann::ordered_json& doc, std::ostream& out) {
  out << (base.name.empty() ? base.origin : base.name) << ": prefill instances (" << base.serving->prefill.nodes_per_instance
      << " node(s) each) for decode on " << doc.at("decode_nodes_tried").dump() << " node(s) of " << base.hardware.gpu.count
      << " GPUs, " << static_cast<int>(q.attainment * 100.0) << "% of requests within the SLOs\n";
  out << "  decode nodes  instances  prefill GPUs  TTFT p99 (s)  TPOT p99 (ms)  within SLO  steps full\n";
  char line[240];
  for (const auto& r : doc.at("probes")) {
    std::snprintf(line, sizeof line, "  %12d  %9d  %12d  %12.2f  %13.2f  %9.1f%%  %11.0f%%%s\n", r.at("decode_nodes").get<int>(),
                  r.at("prefill_instances").get<int>(), r.at("prefill_gpus").get<int>(), pd_statistic(r.at("ttft_p99_s")),
                  pd_statistic(r.at("tpot_p99_s")) * 1e3, r.at("good_share").get<double>() * 100.0,
                  r.at("prefill_step_fill").get<double>() * 100.0, r.at("incomplete").get<std::int64_t>() > 0 ? "  (requests incomplete)" : "");
    out << line;
  }
  if (q.colocated) {
    out << "  colocated alternative (" << q.colocated_tokens << " tokens per GPU per step, the decode nodes prefill their own prompts):\n";
    out << "  decode nodes  GPUs  TTFT p99 (s)  TPOT p99 (ms)  within SLO  step time on chunks\n";
    for (const auto& r : doc.at("colocated")) {
      std::snprintf(line, sizeof line, "  %12d  %4d  %12.2f  %13.2f  %9.1f%%  %18.0f%%%s\n", r.at("decode_nodes").get<int>(),
                    r.at("gpus").get<int>(), pd_statistic(r.at("ttft_p99_s")), pd_statistic(r.at("tpot_p99_s")) * 1e3,
                    r.at("good_share").get<double>() * 100.0, r.at("prefill_time_share").get<double>() * 100.0,
                    r.at("incomplete").get<std::int64_t>() > 0 ? "  (requests incomplete)" : "");
      out << line;
    }
  }
  const auto& a = doc.at("answer");
  if (a.is_null()) {
    out << "  no answer, because " << doc.at("why_not").get<std::string>() << "\n";
    return;
  }
  const int d = a.at("decode_nodes").get<int>();
  if (a.at("kind") == "colocated") {
    out << "  answer: colocated on " << d << " node(s), " << a.at("gpus").get<int>() << " GPUs (no prefill instances)\n";
  } else {
    const int k = a.at("prefill_instances").get<int>();
    out << "  answer: " << k << " prefill instance(s) for " << d << " decode node(s), " << a.at("gpus").get<int>() - d * base.hardware.gpu.count
        << " prefill + " << d * base.hardware.gpu.count << " decode GPUs (P:D " << k * base.serving->prefill.nodes_per_instance << ":" << d
        << " nodes)\n";
  }
  for (const auto& n : doc.at("notes")) out << "  " << n.get<std::string>() << "\n";
}

}  // namespace

int print_search_pd(const PdSearch& q, bool json, std::ostream& out) {
  const PdSearchResult r = search_pd(q);
  if (json) {
    out << r.doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    print_text(r.base, q, r.doc, out);
  }
  return r.found ? 0 : 1;
}

}  // namespace ess
