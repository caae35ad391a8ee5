// `ess-sim plot`: the Pareto front against a brute-force check, the chart data of a hand-made
// ledger (values, series, labels, skipped charts), the error without gnuplot, and, where gnuplot is
// installed, the rendered PNG and SVG files.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/io/atomic_file.h"
#include "sim/sweep/pareto.h"
#include "sim/sweep/plot.h"
#include "tests/cli/cli_run.h"
#include "tests/scratch_dir.h"

namespace {

using ess::ParetoPoint;
using ess::test::CliRun;
using ess::test::read_file;
using ess::test::run_cli;
using ess::test::ScratchDir;
using nlohmann::json;

// A small deterministic generator (the test must not depend on std:: distributions).
struct Lcg {
  std::uint64_t state;
  std::uint64_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  }
  double below(int n) { return static_cast<double>(next() % static_cast<std::uint64_t>(n)); }
};

// The front by definition: every point no other point dominates (lower-or-equal latency and
// higher-or-equal throughput, one strictly), in latency order, ties by index.
std::vector<ParetoPoint> brute_force_front(const std::vector<ParetoPoint>& points) {
  std::vector<ParetoPoint> front;
  for (const auto& p : points) {
    bool dominated = false;
    for (const auto& q : points) {
      if (q.latency <= p.latency && q.throughput >= p.throughput && (q.latency < p.latency || q.throughput > p.throughput)) {
        dominated = true;
      }
    }
    if (!dominated) front.push_back(p);
  }
  std::sort(front.begin(), front.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.latency != b.latency) return a.latency < b.latency;
    return a.index < b.index;
  });
  return front;
}

TEST_CASE("pareto_front equals a brute-force check on random points, whatever their order", "[plot]") {
  Lcg rng{12345};
  for (int trial = 0; trial < 500; ++trial) {
    const auto n = static_cast<std::size_t>(rng.below(40));
    // Few distinct values, so that equal latencies, equal throughputs and exact copies are common.
    const int range = trial % 2 == 0 ? 8 : 1000;
    std::vector<ParetoPoint> points;
    for (std::size_t i = 0; i < n; ++i) points.push_back({rng.below(range), rng.below(range), i});
    const auto expected = brute_force_front(points);
    INFO("trial " << trial << ", " << n << " points");
    CHECK(ess::pareto_front(points) == expected);
    std::reverse(points.begin(), points.end());
    CHECK(ess::pareto_front(points) == expected);
    for (std::size_t i = 1; i < expected.size(); ++i) {
      // Along the front both rise strictly, except between exact copies.
      const bool copy = expected[i].latency == expected[i - 1].latency && expected[i].throughput == expected[i - 1].throughput;
      CHECK((copy || (expected[i].latency > expected[i - 1].latency && expected[i].throughput > expected[i - 1].throughput)));
    }
  }
}

TEST_CASE("pareto_front keeps exact ties, drops one-sided ties and NaN", "[plot]") {
  const double nan = std::nan("");
  const std::vector<ParetoPoint> points = {
      {10, 100, 0}, {10, 100, 7},  // exact copies: both kept, by index
      {10, 90, 1},                 // same latency, lower throughput: dominated
      {20, 100, 2},                // same throughput, higher latency: dominated
      {30, 300, 3}, {nan, 1e9, 4}, {5, nan, 5}, {40, 250, 6},
  };
  const std::vector<ParetoPoint> expected = {{10, 100, 0}, {10, 100, 7}, {30, 300, 3}};
  CHECK(ess::pareto_front(points) == expected);
  CHECK(ess::pareto_dominates({1, 2, 0}, {1, 1, 1}));
  CHECK_FALSE(ess::pareto_dominates({1, 2, 0}, {1, 2, 1}));
  CHECK(ess::pareto_front({}).empty());
}

// --- A hand-made sweep directory --------------------------------------------------------------

// Two contexts zipped with a PCIe bandwidth, times three cache sections; point 5 did not fit.
// Points are numbered as the sweep would: the zipped pair outermost, the cache innermost.
const char* kSpec = R"({
  "schema": "ess-sim/sweep/v1", "name": "hand", "base": "base.json",
  "axes": [
    {"path": "workload.context_length", "values": [1024, 4096]},
    {"path": "cache", "values": [{"mode": "gpu"},
                                 {"mode": "offload", "pool_ratio": 0.1, "transfer": "gather"},
                                 {"mode": "offload", "pool_ratio": 0.2, "transfer": "gather"}]},
    {"path": "hardware.pcie.h2d_bandwidth", "values": ["50GB/s", "25GB/s"]}
  ],
  "zip": [["workload.context_length", "hardware.pcie.h2d_bandwidth"]]
})";

struct Values {
  double batch, tokens, otps, hidden_ms;
  std::optional<double> h2d, d2h;
};

nlohmann::ordered_json record(std::size_t point, const std::string& status, const std::optional<Values>& v, bool with_times = true) {
  const json contexts = json::array({1024, 4096});
  const json caches = json::parse(R"([{"mode": "gpu"},
      {"mode": "offload", "pool_ratio": 0.1, "transfer": "gather"},
      {"mode": "offload", "pool_ratio": 0.2, "transfer": "gather"}])");
  const json bandwidths = json::array({"50GB/s", "25GB/s"});
  nlohmann::ordered_json r;
  r["point"] = point;
  r["axes"] = {{"workload.context_length", contexts[point / 3]},
               {"cache", caches[point % 3]},
               {"hardware.pcie.h2d_bandwidth", bandwidths[point / 3]}};
  r["status"] = status;
  r["reason"] = status == "ok" ? json(nullptr) : json{{"code", status}, {"message", "does not fit"}};
  auto put = [&](const char* column, std::optional<double> value) {
    r[column] = value ? json(*value) : json(nullptr);
  };
  put("batch_per_gpu", v ? std::optional(v->batch) : std::nullopt);
  put("context_length_tokens", v ? std::optional(contexts[point / 3].get<double>()) : std::nullopt);
  put("tokens_per_s_per_gpu", v ? std::optional(v->tokens) : std::nullopt);
  put("otps_per_request_tokens_per_s", v ? std::optional(v->otps) : std::nullopt);
  if (with_times) {
    // 18 ms of compute, 2 of exposed transfer on offload points, 4 of collectives, 1 idle.
    const bool offload = point % 3 != 0;
    put("time_gemm_s", v ? std::optional(0.010) : std::nullopt);
    put("time_attention_s", v ? std::optional(0.005) : std::nullopt);
    put("time_indexer_s", v ? std::optional(0.001) : std::nullopt);
    put("time_norm_s", v ? std::optional(0.0005) : std::nullopt);
    put("time_elementwise_s", v ? std::optional(0.0005) : std::nullopt);
    put("time_host_s", v ? std::optional(0.001) : std::nullopt);
    put("time_transfers_s", v ? std::optional(offload ? 0.002 : 0.0) : std::nullopt);
    put("time_collectives_s", v ? std::optional(0.004) : std::nullopt);
    put("time_idle_s", v ? std::optional(0.001) : std::nullopt);
    put("step_time_mean_s", v ? std::optional(offload ? 0.025 : 0.023) : std::nullopt);
    put("offload_hidden_s", v && offload ? std::optional(v->hidden_ms / 1e3) : std::nullopt);
  }
  put("pcie_h2d_utilization", v ? v->h2d : std::nullopt);
  put("pcie_d2h_utilization", v ? v->d2h : std::nullopt);
  r["scenario_sha256"] = "0";
  r["ess_sim_version"] = "test";
  r["wall_s"] = 0.1;
  return r;
}

// Writes DIR/spec.json and DIR/results.jsonl; `with_times` false leaves out the time_*_s columns.
void write_sweep(const std::filesystem::path& dir, bool with_times = true) {
  const std::vector<std::optional<Values>> values = {
      Values{16, 1000, 50, 0, std::nullopt, std::nullopt},  // TPOT 20 ms
      Values{32, 1200, 25, 2, 0.15, 0.01},                  // TPOT 40 ms
      Values{32, 1100, 40, 1, 0.12, 0.02},                  // TPOT 25 ms
      Values{4, 400, 20, 0, std::nullopt, std::nullopt},    // TPOT 50 ms
      Values{8, 700, 10, 0.5, 0.05, 0.005},                 // TPOT 100 ms
      std::nullopt,                                         // out of memory
  };
  std::string ledger;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ledger += record(i, values[i] ? "ok" : "out_of_memory", values[i], with_times).dump() + "\n";
  }
  std::ofstream(dir / "results.jsonl") << ledger;
  nlohmann::ordered_json copy;
  copy["schema"] = "ess-sim/sweep-dir/v1";
  copy["spec_sha256"] = "0";
  copy["shard"] = "0/1";
  copy["spec"] = json::parse(kSpec);
  std::ofstream(dir / "spec.json") << copy.dump(2) << "\n";
}

const ess::ChartFiles* chart(const ess::PlotPlan& plan, const std::string& name) {
  for (const auto& c : plan.charts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool has_message(const ess::PlotPlan& plan, const std::string& text) {
  return std::any_of(plan.messages.begin(), plan.messages.end(), [&](const std::string& m) { return m.find(text) != std::string::npos; });
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST_CASE("plot turns a ledger's ok points into chart data, one series per cache section", "[plot]") {
  const ScratchDir dir("ess-plot");
  write_sweep(dir.path());
  const auto input = ess::read_plot_input(dir.path());
  CHECK(input.name == "hand");
  CHECK(input.axes == std::vector<std::string>{"workload.context_length", "cache", "hardware.pcie.h2d_bandwidth"});
  const auto plan = ess::plan_plots(input, {});
  CHECK(has_message(plan, "6 points, 5 ok and plotted; not plotted: out_of_memory 1"));

  SECTION("throughput vs context: lines along the context, the zipped bandwidth not splitting them") {
    const auto* c = chart(plan, "throughput_vs_context");
    REQUIRE(c != nullptr);
    // Labels: the keys that tell the cache sections apart (mode, pool_ratio), not "transfer",
    // which is the same wherever it is given; point 5 (out of memory) is absent.
    CHECK(c->data == "# Throughput per GPU vs context length - sweep hand\n"
                     "# columns: context_length_tokens tokens_per_s_per_gpu point; one block per series (gnuplot "
                     "index 0, 1, ...), sorted by x\n"
                     "# index 0: mode=gpu\n1024 1000 0\n4096 400 3\n\n\n"
                     "# index 1: mode=offload pool_ratio=0.1\n1024 1200 1\n4096 700 4\n\n\n"
                     "# index 2: mode=offload pool_ratio=0.2\n1024 1100 2\n");
    CHECK(contains(c->script, "index 1 using 1:2 with linespoints lw 2 ps 1.3 title 'mode=offload pool_ratio=0.1'"));
    CHECK(contains(c->script, "set xlabel 'context length (tokens)'"));
    CHECK(contains(c->script, "set ylabel 'decode throughput (tokens/s per GPU)'"));
    CHECK(contains(c->script, "set output 'throughput_vs_context.png'"));
    CHECK(contains(c->script, "set output 'throughput_vs_context.svg'"));
    CHECK(c->images == std::vector<std::string>{"throughput_vs_context.png", "throughput_vs_context.svg"});
  }
  SECTION("throughput vs batch: the batch is not an axis, so lines run along the context") {
    const auto* c = chart(plan, "throughput_vs_batch");
    REQUIRE(c != nullptr);
    CHECK(contains(c->data, "# index 0: mode=gpu\n16 1000 0\n4 400 3\n") == false);  // sorted by batch
    CHECK(contains(c->data, "# index 0: mode=gpu\n4 400 3\n16 1000 0\n"));
    CHECK(contains(c->data, "# index 1: mode=offload pool_ratio=0.1\n8 700 4\n32 1200 1\n"));
    CHECK(contains(c->script, "differ only in workload.context_length and hardware.pcie.h2d_bandwidth"));
  }
  SECTION("step-time breakdown: compute summed, in ms, positions grouped by context") {
    const auto* c = chart(plan, "step_time_breakdown");
    REQUIRE(c != nullptr);
    // position point compute exposed_transfer exposed_collectives idle hidden_transfer step_time_mean;
    // a gap of 0.6 where the context changes.
    CHECK(contains(c->data, "\n0 0 18 0 4 1 0 23\n1 1 18 2 4 1 2 25\n2 2 18 2 4 1 1 25\n3.6 3 18 0 4 1 0 23\n"
                            "4.6 4 18 2 4 1 0.5 25\n"));
    // The stack adds up to the mean step time: 18 + 2 + 4 + 1 = 25.
    CHECK(contains(c->script, "($3+$4+$5):($3+$4+$5+$6) with boxxyerror"));
    CHECK(contains(c->script, "'context_length=1024 mode=gpu h2d_bandwidth=50GB/s' 0"));
    CHECK(contains(c->script, "title 'hidden transfer (overlapped with compute, not in the step)'"));
  }
  SECTION("PCIe utilisation: offload points only, in percent, labelled by what differs among them") {
    const auto* c = chart(plan, "pcie_utilization");
    REQUIRE(c != nullptr);
    CHECK(contains(c->data, "\n0 1 15 1\n1 2 12 2\n2.6 4 5 0.5\n"));
    // Among the offload points the mode does not vary: only the pool ratio is named.
    CHECK(contains(c->script, "'context_length=1024 pool_ratio=0.1 h2d_bandwidth=50GB/s' 0"));
    CHECK(has_message(plan, "pcie_utilization: 3 of the 5 ok points plotted, 2 do not offload"));
  }
  SECTION("Pareto: every ok point by cache section, the front sorted by TPOT") {
    const auto* c = chart(plan, "pareto_tpot");
    REQUIRE(c != nullptr);
    // TPOT = 1000 / otps: 20, 40, 25, 50, 100 ms; the front is points 0, 2, 1.
    CHECK(contains(c->data, "# index 0: mode=gpu\n20 1000 0\n50 400 3\n"));
    CHECK(contains(c->data, "# index 3: Pareto front\n"
                            "# point 0: context_length=1024 mode=gpu h2d_bandwidth=50GB/s\n20 1000 0\n"
                            "# point 2: context_length=1024 mode=offload pool_ratio=0.2 h2d_bandwidth=50GB/s\n25 1100 2\n"
                            "# point 1: context_length=1024 mode=offload pool_ratio=0.1 h2d_bandwidth=50GB/s\n40 1200 1\n"));
    CHECK(contains(c->script, "index 3 using 1:2 with linespoints"));
    CHECK(contains(c->script, "set xlabel 'TPOT: time per output token of a request (ms)'"));
  }
  SECTION("the same ledger gives byte-identical scripts and data") {
    const auto again = ess::plan_plots(ess::read_plot_input(dir.path()), {});
    REQUIRE(again.charts.size() == plan.charts.size());
    for (std::size_t i = 0; i < plan.charts.size(); ++i) {
      CHECK(again.charts[i].script == plan.charts[i].script);
      CHECK(again.charts[i].data == plan.charts[i].data);
    }
  }
}

TEST_CASE("plot skips a chart whose metric columns the ledger lacks, naming the summary fields to list", "[plot]") {
  const ScratchDir dir("ess-plot");
  write_sweep(dir.path(), /*with_times=*/false);
  const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), {});
  CHECK(chart(plan, "step_time_breakdown") == nullptr);
  CHECK(chart(plan, "throughput_vs_context") != nullptr);
  CHECK(has_message(plan, "skipped step_time_breakdown: needs the metric columns time_gemm_s, time_attention_s, "
                          "time_indexer_s, time_norm_s, time_elementwise_s, time_host_s, time_transfers_s, "
                          "time_collectives_s, time_idle_s, which "));
  CHECK(has_message(plan, "list \"time_by_category_s.gemm\", \"time_by_category_s.attention\""));
  CHECK(has_message(plan, "in the spec's \"metrics\""));
}

TEST_CASE("plot refuses what it cannot chart", "[plot]") {
  const ScratchDir dir("ess-plot");
  SECTION("no ledger") {
    const auto r = run_cli({"plot", dir.path().string(), "--gnuplot", "/bin/true"});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "results.jsonl: no ledger"));
  }
  SECTION("--x must be an axis") {
    write_sweep(dir.path());
    ess::PlotRequest request;
    request.x_axis = "cache.pool_ratio";
    CHECK_THROWS_WITH(ess::plan_plots(ess::read_plot_input(dir.path()), request),
                      Catch::Contains("\"cache.pool_ratio\" is not an axis of the sweep"));
  }
  SECTION("--x with values that are not numbers plots them as categories") {
    write_sweep(dir.path());
    ess::PlotRequest request;
    request.x_axis = "cache";
    const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), request);
    const auto* c = chart(plan, "throughput_vs_cache");
    REQUIRE(c != nullptr);
    CHECK(contains(c->script, "('mode=gpu' 0, 'mode=offload pool_ratio=0.1' 1, 'mode=offload pool_ratio=0.2' 2)"));
    CHECK(contains(c->data, "# index 0: context_length=1024 h2d_bandwidth=50GB/s\n0 1000 0\n1 1200 1\n2 1100 2\n"));
  }
  SECTION("no ok point") {
    std::ofstream(dir.path() / "results.jsonl") << record(0, "out_of_memory", std::nullopt).dump() << "\n";
    CHECK_THROWS_WITH(ess::plan_plots(ess::read_plot_input(dir.path()), {}),
                      Catch::Contains("no point is ok (out_of_memory 1): nothing to plot"));
  }
  SECTION("a metric that is not a number") {
    auto r = record(0, "ok", Values{1, 2, 3, 0, std::nullopt, std::nullopt});
    r["tokens_per_s_per_gpu"] = "fast";
    std::ofstream(dir.path() / "results.jsonl") << r.dump() << "\n";
    CHECK_THROWS_WITH(ess::read_plot_input(dir.path()),
                      Catch::Contains("point 0: metric \"tokens_per_s_per_gpu\" is") &&
                          Catch::Contains("expected a number or null"));
  }
  SECTION("a bad --format") {
    const auto r = run_cli({"plot", dir.path().string(), "--format", "jpg"});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "--format jpg: expected png, svg or both"));
  }
}

// Sets PATH for the scope of a test and restores it.
class PathGuard {
 public:
  explicit PathGuard(const std::string& value) {
    if (const char* old = std::getenv("PATH")) old_ = old;
    ::setenv("PATH", value.c_str(), 1);
  }
  PathGuard(const PathGuard&) = delete;
  PathGuard& operator=(const PathGuard&) = delete;
  ~PathGuard() {
    if (old_) {
      ::setenv("PATH", old_->c_str(), 1);
    } else {
      ::unsetenv("PATH");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST_CASE("plot without gnuplot on PATH says how to install it, exits 2 and writes nothing", "[plot]") {
  const ScratchDir dir("ess-plot");
  const ScratchDir empty("ess-plot-empty-path");
  write_sweep(dir.path());
  CliRun r;
  {
    const PathGuard path(empty.path().string());
    r = run_cli({"plot", dir.path().string()});
  }
  CHECK(r.code == 2);
  CHECK(r.err == "error: gnuplot not found on PATH: install it with apt-get install gnuplot-nox\n");
  CHECK(r.out.empty());
  CHECK_FALSE(std::filesystem::exists(dir.path() / "plots"));
  // A path that is not an executable file.
  const auto missing = run_cli({"plot", dir.path().string(), "--gnuplot", (empty.path() / "gnuplot").string()});
  CHECK(missing.code == 2);
  CHECK(contains(missing.err, "is not an executable file"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "plots"));
  // A gnuplot that fails: its exit status is reported and nothing is written.
  if (std::filesystem::exists("/bin/false")) {
    const auto failed = run_cli({"plot", dir.path().string(), "--gnuplot", "/bin/false"});
    CHECK(failed.code == 2);
    CHECK(contains(failed.err, "/bin/false exited with status 1 on throughput_vs_batch.gp"));
    CHECK_FALSE(std::filesystem::exists(dir.path() / "plots"));
  }
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

TEST_CASE("plot renders PNG and SVG charts with gnuplot, with their scripts and data", "[plot]") {
  try {
    (void)ess::find_gnuplot("gnuplot");
  } catch (const ess::OutputError&) {
    WARN("gnuplot is not installed (apt-get install gnuplot-nox): the rendering is not checked");
    return;
  }
  const ScratchDir dir("ess-plot");
  write_sweep(dir.path());
  const auto r = run_cli({"plot", dir.path().string(), "--x", "cache"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  const auto plots = dir.path() / "plots";
  const std::vector<std::string> charts = {"throughput_vs_batch", "throughput_vs_context", "throughput_vs_cache",
                                           "step_time_breakdown", "pcie_utilization",   "pareto_tpot"};
  for (const auto& name : charts) {
    for (const std::string ext : {".gp", ".dat", ".png", ".svg"}) {
      const auto file = plots / (name + ext);
      INFO(file);
      CHECK(std::filesystem::exists(file));
      CHECK(contains(r.out, file.string() + "\n"));
      const std::string content = read_file(file);
      CHECK_FALSE(content.empty());
      if (ext == ".png") CHECK(starts_with(content, "\x89PNG\r\n\x1a\n"));
      if (ext == ".svg") CHECK(starts_with(content, "<?xml"));
    }
  }
  CHECK(std::filesystem::exists(plots / ess::kManifestName));

  SECTION("the same ledger renders byte-identical files") {
    const ScratchDir other("ess-plot-again");
    const auto again = run_cli({"plot", dir.path().string(), "--x", "cache", "-o", other.path().string()});
    REQUIRE(again.code == 0);
    for (const auto& entry : std::filesystem::directory_iterator(plots)) {
      INFO(entry.path().filename());
      CHECK(read_file(entry.path()) == read_file(other.path() / entry.path().filename()));
    }
  }
  SECTION("a chart no longer drawn is removed with the rest of the previous set") {
    const auto again = run_cli({"plot", dir.path().string(), "--format", "png"});
    REQUIRE(again.code == 0);
    CHECK_FALSE(std::filesystem::exists(plots / "throughput_vs_cache.png"));
    CHECK_FALSE(std::filesystem::exists(plots / "throughput_vs_cache.gp"));
    CHECK_FALSE(std::filesystem::exists(plots / "pareto_tpot.svg"));
    CHECK(std::filesystem::exists(plots / "pareto_tpot.png"));
  }
  SECTION("a directory holding a run's output set is refused") {
    const ScratchDir run_dir("ess-plot-run");
    std::ofstream(run_dir.path() / "results.json") << "{}\n";
    std::ofstream(run_dir.path() / ess::kManifestName)
        << R"({"schema": "ess-sim/output-manifest/v1", "producer": "ess-sim", "files": [{"name": "results.json"}]})";
    const auto refused = run_cli({"plot", dir.path().string(), "-o", run_dir.path().string()});
    CHECK(refused.code == 2);
    CHECK(contains(refused.err, "holds another output set"));
    CHECK_FALSE(std::filesystem::exists(run_dir.path() / "pareto_tpot.png"));
  }
}


// --- A big sweep: small multiples and --where ---------------------------------------------------

// Nodes (zipped with attention_dp) x preset x batch x MTP acceptance: 2 x 3 x 4 x 3 = 72 points,
// all ok, in sweep order (the last axis fastest).
const char* kBigSpec = R"({
  "schema": "ess-sim/sweep/v1", "name": "big", "base": "base.json",
  "axes": [
    {"path": "hardware.nodes", "values": [1, 2]},
    {"path": "parallelism.attention_dp", "values": [8, 16]},
    {"path": "hardware.preset", "values": ["x", "y", "z"]},
    {"path": "workload.batch_per_gpu", "values": [1, 2, 4, 8]},
    {"path": "workload.mtp.acceptance", "values": [1, 1.5, 2]}
  ],
  "zip": [["hardware.nodes", "parallelism.attention_dp"]]
})";

void write_big_sweep(const std::filesystem::path& dir) {
  const std::vector<std::string> presets = {"x", "y", "z"};
  const std::vector<int> batches = {1, 2, 4, 8};
  const std::vector<double> acceptances = {1, 1.5, 2};
  std::string ledger;
  std::size_t point = 0;
  for (int n = 1; n <= 2; ++n) {
    for (std::size_t p = 0; p < presets.size(); ++p) {
      for (const int b : batches) {
        for (const double a : acceptances) {
          nlohmann::ordered_json r;
          r["point"] = point;
          r["axes"] = {{"hardware.nodes", n},
                       {"parallelism.attention_dp", 8 * n},
                       {"hardware.preset", presets[p]},
                       {"workload.batch_per_gpu", b},
                       {"workload.mtp.acceptance", a}};
          r["status"] = "ok";
          r["reason"] = nullptr;
          const double step = 0.02 + 0.001 * b + 0.002 * static_cast<double>(p);
          r["batch_per_gpu"] = b;
          r["tokens_per_s_per_gpu"] = b * a / step;
          r["otps_per_request_tokens_per_s"] = a / step;
          for (const char* col : {"time_gemm_s", "time_attention_s", "time_indexer_s", "time_norm_s",
                                  "time_elementwise_s", "time_host_s", "time_transfers_s", "time_collectives_s"}) {
            r[col] = step / 10;
          }
          r["time_idle_s"] = step * 0.2;
          r["step_time_mean_s"] = step;
          r["pcie_h2d_utilization"] = 0.01 * b;
          r["scenario_sha256"] = "0";
          r["ess_sim_version"] = "test";
          r["wall_s"] = 0.1;
          ledger += r.dump() + "\n";
          ++point;
        }
      }
    }
  }
  std::ofstream(dir / "results.jsonl") << ledger;
  nlohmann::ordered_json copy;
  copy["schema"] = "ess-sim/sweep-dir/v1";
  copy["spec_sha256"] = "0";
  copy["shard"] = "0/1";
  copy["spec"] = json::parse(kBigSpec);
  std::ofstream(dir / "spec.json") << copy.dump(2) << "\n";
}

std::vector<std::string> chart_names(const ess::PlotPlan& plan) {
  std::vector<std::string> names;
  for (const auto& c : plan.charts) names.push_back(c.name);
  return names;
}

// The series a line or Pareto chart plots: its data blocks.
std::size_t blocks(const std::string& data) {
  std::size_t n = 0;
  for (auto at = data.find("# index "); at != std::string::npos; at = data.find("# index ", at + 1)) ++n;
  return n;
}

// The bars of a bar chart: its data rows.
std::size_t rows(const std::string& data) {
  std::size_t n = 0;
  std::size_t start = 0;
  while (start < data.size()) {
    const auto end = data.find('\n', start);
    if (data[start] != '#') ++n;
    start = end == std::string::npos ? data.size() : end + 1;
  }
  return n;
}

TEST_CASE("plot splits a chart with too many lines or bars into small multiples, one per value of a dimension", "[plot]") {
  const ScratchDir dir("ess-plot-big");
  write_big_sweep(dir.path());
  const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), {});
  // Throughput vs batch: nodes (with attention_dp) x preset x acceptance = 2 x 3 x 3 = 18 lines,
  // more than 12. Splitting by nodes gives 2 charts of 9 lines; by preset or acceptance, 3 of 6:
  // nodes, the fewest charts. The file names name only the zip's first axis.
  const std::vector<std::string> expected = {
      "throughput_vs_batch--nodes=1", "throughput_vs_batch--nodes=2",  // 18 lines
      "step_time_breakdown--nodes=1", "step_time_breakdown--nodes=2",  // 72 bars > 64: 2 x 36
      "pcie_utilization--nodes=1",    "pcie_utilization--nodes=2",     // 72 bars
      "pareto_tpot"};                                                  // one chart, fewer colours
  CHECK(chart_names(plan) == expected);
  CHECK(has_message(plan, "throughput_vs_batch: 18 lines, more than 12 in one chart: split into 2 charts, one per "
                          "hardware.nodes (throughput_vs_batch--*)"));
  CHECK(has_message(plan, "step_time_breakdown: 72 bars, more than 64 in one chart: split into 2 charts"));
  for (const auto& name : {"throughput_vs_batch--nodes=1", "throughput_vs_batch--nodes=2"}) {
    const auto* c = chart(plan, name);
    REQUIRE(c != nullptr);
    INFO(name);
    CHECK(blocks(c->data) == 9);
    CHECK(blocks(c->data) <= ess::kPlotMaxSeries);
    // Legends name only what varies within the chart; the title names the fixed values.
    CHECK(contains(c->script, "title 'preset=x acceptance=1.5'"));
    CHECK_FALSE(contains(c->script, "title 'nodes="));
    CHECK(contains(c->script, "set output '" + std::string(name) + ".png'"));
    CHECK(contains(c->script, "'" + std::string(name) + ".dat' index 8 using 1:2"));
    // Both share one y scale: the largest throughput of the whole chart, 8 x 2 / 0.028 = 571.43, + 5%.
    CHECK(contains(c->script, "set yrange [0:600]\n"));
  }
  CHECK(contains(chart(plan, "throughput_vs_batch--nodes=2")->script,
                 "set title \"Throughput per GPU vs batch per GPU - sweep big\\nnodes=2 attention_dp=16\""));
  for (const auto& name : {"step_time_breakdown--nodes=1", "pcie_utilization--nodes=2"}) {
    INFO(name);
    REQUIRE(chart(plan, name) != nullptr);
    CHECK(rows(chart(plan, name)->data) == 36);
    CHECK(rows(chart(plan, name)->data) <= ess::kPlotMaxBars);
  }
  // Pareto: 18 colours; within 12 the most are preset x acceptance (9), more than nodes x preset (6).
  const auto* pareto = chart(plan, "pareto_tpot");
  REQUIRE(pareto != nullptr);
  CHECK(blocks(pareto->data) == 9 + 1);  // and the front
  CHECK(has_message(plan, "pareto_tpot: Colours by hardware.preset and workload.mtp.acceptance (at most 12); a colour's "
                          "dots differ in hardware.nodes too"));
  CHECK(contains(pareto->data, "# index 0: preset=x acceptance=1.0\n"));

  SECTION("the same ledger gives byte-identical split charts") {
    const auto again = ess::plan_plots(ess::read_plot_input(dir.path()), {});
    REQUIRE(chart_names(again) == expected);
    for (std::size_t i = 0; i < plan.charts.size(); ++i) {
      CHECK(again.charts[i].script == plan.charts[i].script);
      CHECK(again.charts[i].data == plan.charts[i].data);
    }
  }
  SECTION("among as few charts, the outermost dimension splits") {
    // Without nodes 2: preset x acceptance = 9 lines, within the limit: one chart. Without the
    // first preset too, but keeping both nodes: nodes x preset x acceptance = 2 x 2 x 3 = 12: one chart.
    ess::PlotRequest request;
    request.where = {"hardware.preset=y", "hardware.preset=z"};
    const auto sliced = ess::plan_plots(ess::read_plot_input(dir.path()), request);
    REQUIRE(chart(sliced, "throughput_vs_batch") != nullptr);
    CHECK(blocks(chart(sliced, "throughput_vs_batch")->data) == 12);
    // 4 acceptances would make 16: by nodes (2 charts of 8) or by preset (2 of 8), nodes outermost.
  }
}

TEST_CASE("plot skips a chart that would need more than 64 small multiples, pointing to --where", "[plot]") {
  const ScratchDir dir("ess-plot-huge");
  // 65 x 13 lines along 2 batches: by a (65 charts of 13 lines) and by b (13 of 65) both exceed
  // 12 lines, by both 845 charts exceed 64.
  std::string ledger;
  std::size_t point = 0;
  for (int a = 0; a < 65; ++a) {
    for (int b = 0; b < 13; ++b) {
      for (const int batch : {1, 2}) {
        nlohmann::ordered_json r;
        r["point"] = point++;
        r["axes"] = {{"a", a}, {"b", b}, {"workload.batch_per_gpu", batch}};
        r["status"] = "ok";
        r["tokens_per_s_per_gpu"] = 100.0 * batch + a + b;
        r["otps_per_request_tokens_per_s"] = 10.0 + a;
        ledger += r.dump() + "\n";
      }
    }
  }
  std::ofstream(dir.path() / "results.jsonl") << ledger;
  const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), {});
  CHECK(chart(plan, "throughput_vs_batch") == nullptr);
  CHECK(has_message(plan, "skipped throughput_vs_batch: 845 lines would need 845 charts of at most 12 (one per a and b), "
                          "more than 64; plot a slice with --where PATH=VALUE"));
  // A slice of it fits: 13 lines, more than 12, split by b (the only dimension left) into 13 charts,
  // and the Pareto chart.
  ess::PlotRequest request;
  request.where = {"a=3"};
  const auto sliced = ess::plan_plots(ess::read_plot_input(dir.path()), request);
  CHECK(has_message(sliced, "26 of the 1690 points selected, where a=3"));
  CHECK(chart_names(sliced).size() == 13 + 1);
  CHECK(chart_names(sliced).front() == "throughput_vs_batch--b=0");
}

TEST_CASE("plot --where plots a slice of the sweep", "[plot]") {
  const ScratchDir dir("ess-plot");
  write_sweep(dir.path());
  const auto input = ess::read_plot_input(dir.path());
  ess::PlotRequest request;
  SECTION("a key of an object axis; the title says which slice") {
    request.where = {"cache.pool_ratio=0.1"};
    const auto plan = ess::plan_plots(input, request);
    CHECK(has_message(plan, "2 of the 6 points selected, where cache.pool_ratio=0.1"));
    const auto* c = chart(plan, "throughput_vs_context");
    REQUIRE(c != nullptr);
    // Points 1 and 4, one line: the cache no longer varies, so it names no series.
    CHECK(contains(c->data, "# Throughput per GPU vs context length - sweep hand - where cache.pool_ratio=0.1\n"));
    CHECK(contains(c->data, "# index 0: all points\n1024 1200 1\n4096 700 4\n"));
    CHECK(blocks(c->data) == 1);
    CHECK(contains(c->script, "set title \"Throughput per GPU vs context length - sweep hand\\nwhere cache.pool_ratio=0.1\""));
  }
  SECTION("clauses on one path: any; on two paths: all; a value's text matches too") {
    request.where = {"cache.pool_ratio=0.1", "cache.pool_ratio=0.2", "hardware.pcie.h2d_bandwidth=50GB/s",
                     "workload.context_length=1024"};
    const auto plan = ess::plan_plots(input, request);
    CHECK(has_message(plan, "2 of the 6 points selected"));
    // Points 1 and 2 (pool ratio 0.1 and 0.2) at 1024 tokens and 50GB/s.
    const auto* c = chart(plan, "pareto_tpot");
    REQUIRE(c != nullptr);
    CHECK(contains(c->data, "# index 0: pool_ratio=0.1\n40 1200 1\n\n\n# index 1: pool_ratio=0.2\n25 1100 2\n\n\n"
                            "# index 2: Pareto front\n"));
  }
  SECTION("errors: no '=', no such axis, no such value, nothing together") {
    request.where = {"cache"};
    CHECK_THROWS_WITH(ess::plan_plots(input, request), Catch::Contains("--where cache: expected PATH=VALUE"));
    request.where = {"workload.context_lenght=1024"};
    CHECK_THROWS_WITH(ess::plan_plots(input, request),
                      Catch::Contains("\"workload.context_lenght\" is not an axis of the sweep") &&
                          Catch::Contains("workload.context_length"));
    request.where = {"workload.context_length=2048"};
    CHECK_THROWS_WITH(ess::plan_plots(input, request),
                      Catch::Contains("no point of the sweep has workload.context_length = 2048; its values are") &&
                          Catch::Contains("1024") && Catch::Contains("4096"));
    request.where = {"cache.mode=gpu", "hardware.pcie.h2d_bandwidth=25GB/s", "workload.context_length=1024"};
    CHECK_THROWS_WITH(ess::plan_plots(input, request), Catch::Contains("no point of the sweep matches all of them together"));
    const auto r = run_cli({"plot", dir.path().string(), "--where", "cache.transfer=copy", "--gnuplot", "/bin/true"});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "no point of the sweep has cache.transfer = copy"));
  }
}

TEST_CASE("plot renders split charts as one output set and removes them when a slice is plotted", "[plot]") {
  try {
    (void)ess::find_gnuplot("gnuplot");
  } catch (const ess::OutputError&) {
    WARN("gnuplot is not installed (apt-get install gnuplot-nox): the rendering is not checked");
    return;
  }
  const ScratchDir dir("ess-plot-big");
  write_big_sweep(dir.path());
  const auto r = run_cli({"plot", dir.path().string(), "--format", "png"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto plots = dir.path() / "plots";
  for (const std::string name : {"throughput_vs_batch--nodes=1", "throughput_vs_batch--nodes=2", "pcie_utilization--nodes=2"}) {
    for (const std::string ext : {".gp", ".dat", ".png"}) {
      INFO(name + ext);
      CHECK(std::filesystem::exists(plots / (name + ext)));
    }
  }
  CHECK_FALSE(std::filesystem::exists(plots / "throughput_vs_batch.png"));
  const auto sliced = run_cli({"plot", dir.path().string(), "--format", "png", "--where", "hardware.nodes=1"});
  INFO(sliced.err);
  REQUIRE(sliced.code == 0);
  CHECK(std::filesystem::exists(plots / "throughput_vs_batch.png"));
  CHECK_FALSE(std::filesystem::exists(plots / "throughput_vs_batch--nodes=1.png"));
  CHECK_FALSE(std::filesystem::exists(plots / "pcie_utilization--nodes=2.dat"));
}

}  // namespace

namespace {

// A serving sweep's ledger: two rates x two cache modes, TTFT p99 growing with the rate on the
// GPU-only points; serving metric columns only.
void write_serving_sweep(const std::filesystem::path& dir) {
  const json rates = json::array({"2/s", "8/s"});
  const json caches = json::parse(R"([{"mode": "gpu"}, {"mode": "offload", "pool_ratio": 0.21}])");
  const double ttft[4] = {7.0, 7.1, 190.0, 8.3};
  std::string ledger;
  for (std::size_t i = 0; i < 4; ++i) {
    nlohmann::ordered_json r;
    r["point"] = i;
    r["axes"] = {{"serving.arrivals.rate", rates[i / 2]}, {"cache", caches[i % 2]}};
    r["status"] = "ok";
    r["reason"] = nullptr;
    r["serving_ttft_p99_s"] = ttft[i];
    r["serving_goodput_requests_per_s"] = i == 2 ? 0.4 : 1.9;
    r["scenario_sha256"] = "0";
    r["ess_sim_version"] = "test";
    r["wall_s"] = 0.1;
    ledger += r.dump() + "\n";
  }
  std::ofstream(dir / "results.jsonl") << ledger;
  nlohmann::ordered_json copy;
  copy["schema"] = "ess-sim/sweep-dir/v1";
  copy["spec_sha256"] = "0";
  copy["shard"] = "0/1";
  copy["spec"] = json::parse(R"({"schema": "ess-sim/sweep/v1", "name": "serving", "base": "base.json",
    "axes": [{"path": "serving.arrivals.rate", "values": ["2/s", "8/s"]},
             {"path": "cache", "values": [{"mode": "gpu"}, {"mode": "offload", "pool_ratio": 0.21}]}]})");
  std::ofstream(dir / "spec.json") << copy.dump(2) << "\n";
}

}  // namespace

TEST_CASE("plot --x --y charts a serving sweep's metrics against an axis, without the decode charts", "[plot]") {
  const ScratchDir dir("ess-plot");
  write_serving_sweep(dir.path());
  ess::PlotRequest request;
  request.x_axis = "serving.arrivals.rate";
  request.y_columns = {"serving_ttft_p99_s", "serving_goodput_requests_per_s"};
  const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), request);
  REQUIRE(plan.charts.size() == 2);
  const auto* ttft = chart(plan, "serving_ttft_p99_s_vs_serving_arrivals_rate");
  REQUIRE(ttft != nullptr);
  // Categorical rates at 0 and 1, one block per cache section: GPU-only 7.0 -> 190, ESS 7.1 -> 8.3.
  CHECK(contains(ttft->data, "# columns: serving_arrivals_rate serving_ttft_p99_s point"));
  CHECK(contains(ttft->data, "0 7 0\n1 190 2\n"));
  CHECK(contains(ttft->data, "0 7.1 1\n1 8.3 3\n"));
  CHECK(contains(ttft->script, "set ylabel 'serving_ttft_p99_s'"));
  CHECK(chart(plan, "throughput_vs_batch") == nullptr);
  // A column the ledger lacks is skipped by name; --y without --x is refused.
  request.y_columns = {"serving_tpot_p99_s", "serving_ttft_p99_s"};
  const auto partial = ess::plan_plots(ess::read_plot_input(dir.path()), request);
  CHECK(partial.charts.size() == 1);
  CHECK(has_message(partial, "skipped serving_tpot_p99_s_vs_serving_arrivals_rate: needs the metric column serving_tpot_p99_s"));
  request.x_axis.clear();
  CHECK_THROWS_WITH(ess::plan_plots(ess::read_plot_input(dir.path()), request), Catch::Contains("give --x AXIS_PATH"));
}

TEST_CASE("plot of a serving sweep without flags draws its TTFT, TPOT, throughput and goodput against each swept axis", "[plot]") {
  const ScratchDir dir("ess-plot");
  write_serving_sweep(dir.path());
  const auto plan = ess::plan_plots(ess::read_plot_input(dir.path()), ess::PlotRequest{});
  // The ledger has TTFT p99 and goodput (no TPOT or throughput column): two metrics x two axes.
  CHECK(plan.charts.size() == 4);
  const auto* ttft = chart(plan, "serving_ttft_p99_s_vs_serving_arrivals_rate");
  REQUIRE(ttft != nullptr);
  CHECK(contains(ttft->data, "0 7 0\n1 190 2\n"));
  CHECK(chart(plan, "serving_goodput_requests_per_s_vs_serving_arrivals_rate") != nullptr);
  CHECK(chart(plan, "serving_ttft_p99_s_vs_cache") != nullptr);
  CHECK(chart(plan, "serving_tpot_p99_s_vs_serving_arrivals_rate") == nullptr);
  CHECK(chart(plan, "throughput_vs_batch") == nullptr);
}
