#include "sim/sweep/plot.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"
#include "sim/sweep/ledger.h"
#include "sim/sweep/plot_charts.h"
#include "sim/sweep/plot_text.h"
#include "sim/sweep/plot_view.h"
#include "sim/sweep/plot_where.h"
#include "sim/sweep/spec.h"

namespace ess {

using plot::Json;
using plot::Record;

PlotFormat parse_plot_format(const std::string& text, const std::string& option) {
  if (text == "png") return PlotFormat::png;
  if (text == "svg") return PlotFormat::svg;
  if (text == "both") return PlotFormat::both;
  const std::vector<std::string> formats = {"png", "svg", "both"};
  throw ConfigError(option + " " + text, "", "expected png, svg or both" + did_you_mean(text, formats));
}

PlotInput read_plot_input(const std::filesystem::path& sweep_dir) {
  PlotInput in;
  const auto ledger = sweep_dir / kLedgerName;
  in.origin = ledger.string();
  std::error_code ec;
  if (!std::filesystem::is_directory(sweep_dir, ec)) {
    throw ConfigError(sweep_dir.string(), "", "expected a sweep directory (ess-sim sweep SPEC -o DIR)");
  }
  if (!std::filesystem::exists(ledger, ec)) {
    throw ConfigError(in.origin, "", "no ledger: expected the results.jsonl that `ess-sim sweep SPEC -o " +
                                         sweep_dir.string() + "` writes");
  }
  // A point recorded twice (a resumed sweep still running) counts once, by its last record.
  std::map<std::size_t, Record> by_point;
  LedgerContent content = read_ledger(ledger);
  for (auto& r : content.records) {
    const auto index = r.at("point").get<std::size_t>();
    by_point[index] = std::move(r);
  }
  if (by_point.empty()) throw ConfigError(in.origin, "", "the ledger has no points yet");
  for (auto& [index, r] : by_point) {
    const std::string where = "point " + std::to_string(index);
    if (!r.contains("axes") || !r["axes"].is_object()) {
      throw ConfigError(in.origin, "", where + ": expected \"axes\", an object of axis path -> value");
    }
    for (const auto& [key, value] : r.items()) {
      if (plot::kRecordFields.count(key) == 0 && !value.is_number() && !value.is_null()) {
        throw ConfigError(in.origin, "", where + ": metric \"" + key + "\" is " + describe_json(Json::parse(value.dump())) +
                                             ", expected a number or null");
      }
    }
    for (const auto& [path, unused] : r["axes"].items()) {
      if (std::find(in.axes.begin(), in.axes.end(), path) == in.axes.end()) in.axes.push_back(path);
    }
    in.records.push_back(std::move(r));
  }
  const auto copy = sweep_dir / kSweepSpecCopyName;
  if (std::filesystem::exists(copy, ec)) {
    const Json j = read_json_file(copy);
    if (!j.is_object() || j.value("schema", std::string()) != kSweepDirSchema || !j.contains("spec")) {
      throw ConfigError(copy.string(), "", "not a sweep directory's spec.json (expected schema \"" +
                                               std::string(kSweepDirSchema) + "\" and spec)");
    }
    const SweepSpec spec = read_sweep_spec(j["spec"], copy.string() + " (spec)", sweep_dir);
    in.name = spec.name;
    std::vector<std::string> axes;
    for (const auto& a : spec.axes) axes.push_back(a.path);
    for (const auto& a : in.axes) {
      if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
    }
    in.axes = std::move(axes);
    for (const auto& d : spec.dimensions) {
      if (d.size() < 2) continue;
      std::vector<std::string> group;
      for (const auto i : d) group.push_back(spec.axes[i].path);
      in.zipped.push_back(std::move(group));
    }
  }
  return in;
}

PlotPlan plan_plots(const PlotInput& input, const PlotRequest& request) {
  if (!request.y_columns.empty() && request.x_axis.empty()) {
    throw ConfigError("--y " + request.y_columns.front(), "", "--y plots a metric against the axis --x names: give --x AXIS_PATH");
  }
  if (!request.x_axis.empty() && std::find(input.axes.begin(), input.axes.end(), request.x_axis) == input.axes.end()) {
    throw ConfigError("--x " + request.x_axis, "", "\"" + request.x_axis + "\" is not an axis of the sweep" +
                                                       did_you_mean(request.x_axis, input.axes) + "; the axes are " +
                                                       quoted_list(input.axes));
  }
  PlotPlan plan;
  std::string where;
  PlotInput selected;
  const PlotInput* in = &input;
  if (!request.where.empty()) {
    selected.origin = input.origin;
    selected.name = input.name;
    selected.axes = input.axes;
    selected.zipped = input.zipped;
    std::tie(selected.records, where) = plot::apply_where(input, request.where);
    plan.messages.push_back(input.origin + ": " + std::to_string(selected.records.size()) + " of the " +
                            std::to_string(input.records.size()) + " points selected, " + where);
    in = &selected;
  }
  const plot::View view = plot::make_view(*in);
  std::map<std::string, std::size_t> not_ok;
  for (const auto& r : in->records) {
    const std::string status = r.value("status", std::string());
    if (status != "ok") ++not_ok[status];
  }
  std::vector<std::string> counts;
  for (const auto& [status, n] : not_ok) counts.push_back(status + " " + std::to_string(n));
  if (view.ok.empty()) {
    throw ConfigError(input.origin, "", "no point is ok (" + plot::join(counts, ", ") + "): nothing to plot");
  }
  if (!not_ok.empty()) {
    plan.messages.push_back(input.origin + ": " + std::to_string(in->records.size()) + " points" +
                            (where.empty() ? "" : " selected") + ", " + std::to_string(view.ok.size()) +
                            " ok and plotted; not plotted: " + plot::join(counts, ", "));
  }
  plot::Context c{*in, request, view, plan, input.name.empty() ? "" : "sweep " + input.name, where};
  // A serving sweep records serving metrics only: the decode charts do not apply to it; its own
  // (TTFT, TPOT, throughput and goodput) are drawn against every axis it sweeps.
  const bool serving = !view.columns.empty() && std::all_of(view.columns.begin(), view.columns.end(),
                                   [](const std::string& col) { return col.rfind("serving_", 0) == 0; });
  if (serving) {
    if (request.x_axis.empty()) {
      std::size_t swept = 0;
      for (const auto& axis : view.axes) {
        if (!axis.varies()) continue;
        ++swept;
        for (const char* y : {sweepcol::serving_ttft_p99, sweepcol::serving_tpot_p99, sweepcol::serving_throughput,
                              sweepcol::serving_goodput}) {
          if (view.columns.count(y) != 0) plot::metric_vs_axis(c, axis.path, y);
        }
      }
      if (swept == 0) plan.messages.push_back("a serving sweep with no axis of more than one value: nothing to chart against");
    }
  } else {
    plot::throughput_vs_batch(c);
    plot::throughput_vs_context(c);
  }
  if (!request.x_axis.empty()) {
    if (request.y_columns.empty() && !serving) plot::metric_vs_axis(c, request.x_axis, sweepcol::tokens_per_gpu);
    if (request.y_columns.empty() && serving) {
      for (const char* y : {sweepcol::serving_ttft_p99, sweepcol::serving_tpot_p99, sweepcol::serving_throughput,
                            sweepcol::serving_goodput}) {
        if (view.columns.count(y) != 0) plot::metric_vs_axis(c, request.x_axis, y);
      }
    }
    for (const auto& y : request.y_columns) plot::metric_vs_axis(c, request.x_axis, y);
  }
  if (!serving) {
    plot::step_time_breakdown(c);
    plot::pcie_utilization(c);
    plot::pareto_tpot(c);
  }
  if (plan.charts.empty()) {
    throw ConfigError(input.origin, "", "no chart can be drawn:\n  " + plot::join(plan.messages, "\n  "));
  }
  return plan;
}

}  // namespace ess
