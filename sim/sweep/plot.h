// Charts of a sweep (`ess-sim plot DIR`): from the ledger's ok points, a gnuplot script and a data
// file per chart, rendered to PNG and/or SVG by gnuplot run as a child process.
//
// The charts (README.md, "Plots"):
//   throughput_vs_batch    tokens/s per GPU against batch per GPU
//   throughput_vs_context  tokens/s per GPU against context length
//   throughput_vs_<axis>   tokens/s per GPU against the axis given with --x
//   <column>_vs_<axis>     each metric column given with --y (a serving sweep's TTFT, goodput, ...) against --x
//   step_time_breakdown    where a mean step goes, stacked per point, and the hidden transfer beside it
//   pcie_utilization       PCIe h2d and d2h utilisation per offload point
//   pareto_tpot            tokens/s per GPU against TPOT, every point and the Pareto front
// A chart whose metric columns the ledger lacks is skipped with a message naming the columns and
// the summary fields the spec's "metrics" must list.
//
// Big sweeps: a line chart with more than kPlotMaxSeries lines, or a bar chart with more than
// kPlotMaxBars bars, is split into small multiples, one chart per value of the sweep dimensions
// that give the fewest charts (ties: the outermost), named NAME--axis=value--axis=value; the
// Pareto chart stays one (its front is over every point) and colours by fewer axes instead. A chart
// that would need more than kPlotMaxCharts parts is skipped with a message: plot a slice (--where).
//
// plan_plots() is pure: the same ledger and request give byte-identical scripts and data files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ess {

enum class PlotFormat { png, svg, both };

// "png", "svg" or "both"; a ConfigError naming `option` otherwise.
[[nodiscard]] PlotFormat parse_plot_format(const std::string& text, const std::string& option);

// What plotting needs from a sweep directory.
struct PlotInput {
  std::string origin;                           // the ledger's path, for messages
  std::string name;                             // the sweep's name (spec.json); may be empty
  std::vector<nlohmann::ordered_json> records;  // the ledger, sorted by point
  std::vector<std::string> axes;                // axis paths, in the spec's order
  std::vector<std::vector<std::string>> zipped; // axes that advance together (the spec's "zip")
};

// Reads DIR/results.jsonl (a torn last line is ignored) and, when present, DIR/spec.json (the
// sweep's name and zip lists; without it the axes are those of the records, none zipped). Throws
// ConfigError for a missing or empty ledger, a record without "axes", or a metric that is neither
// a number nor null.
[[nodiscard]] PlotInput read_plot_input(const std::filesystem::path& sweep_dir);

// At most 12 lines (or Pareto colours) a chart: the palette's 8 colours, then the colours again
// with other point shapes; past a dozen a legend entry can no longer be matched to its line by eye.
inline constexpr std::size_t kPlotMaxSeries = 12;
// At most 64 bars a chart: 40 pixels a bar, a 3,300-pixel wide image.
inline constexpr std::size_t kPlotMaxBars = 64;
// At most 64 charts of one kind: more is not a chart to read but a table; plot a slice.
inline constexpr std::size_t kPlotMaxCharts = 64;

struct PlotRequest {
  PlotFormat format = PlotFormat::both;
  std::string x_axis;  // --x: also plot throughput against this axis (empty: not)
  // --y: plot these metric columns (ledger names, e.g. serving_ttft_p99_s) against --x instead of
  // tokens/s per GPU; each chart is COLUMN_vs_AXIS.
  std::vector<std::string> y_columns;
  // --where PATH=VALUE: plot only the points whose axis PATH (or key PATH of an object axis, such
  // as cache.pool_ratio) has VALUE (read as JSON when it parses, else as a string; a value's text
  // also matches). Clauses on one path: any of them; on different paths: all.
  std::vector<std::string> where;
};

// One chart: the script NAME.gp, run in the directory holding NAME.dat, writes `images` there.
struct ChartFiles {
  std::string name;
  std::string script;
  std::string data;
  std::vector<std::string> images;  // NAME.png and/or NAME.svg
};

struct PlotPlan {
  std::vector<ChartFiles> charts;
  std::vector<std::string> messages;  // for the user: charts skipped and why, points left out
};

// The charts of `input`'s ok points (those --where selects). Throws ConfigError when no point is
// ok, when every chart is skipped (the message gives each reason), when --x or a --where path
// names no axis, or when a --where value matches no point.
[[nodiscard]] PlotPlan plan_plots(const PlotInput& input, const PlotRequest& request);

// The gnuplot executable: `program` itself when it contains a '/', else the first executable
// regular file of that name in the directories of $PATH (an empty entry, the current directory,
// is skipped). Throws OutputError ("gnuplot not found on PATH: install it with apt-get install
// gnuplot-nox") when there is none.
[[nodiscard]] std::filesystem::path find_gnuplot(const std::string& program);

struct PlotOutput {
  std::vector<std::filesystem::path> written;  // every file of the set, in out_dir
  std::vector<std::string> warnings;           // what gnuplot printed on stderr while succeeding
};

// Renders every chart in a private temporary directory (one `gnuplot NAME.gp` child each, its exit
// status checked), then writes the scripts, data files and images into out_dir (created if
// missing) as one set with a manifest (write_output_set): a failure leaves out_dir as it was.
// Files of a previous plot set in out_dir that the new set lacks (a chart now skipped) are
// removed. Refuses an out_dir whose manifest lists files other than charts (a run's results).
// Throws OutputError (gnuplot failed, a file could not be written) or ConfigError.
PlotOutput render_plots(const PlotPlan& plan, const std::filesystem::path& gnuplot, const std::filesystem::path& out_dir);

}  // namespace ess
