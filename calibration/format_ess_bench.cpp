// ess-bench measurements JSON (schema "ess-sim/measurements/v1", specified in kernels/README.md,
// "The measurements JSON"): the samples kernels/ess-bench writes on a GPU.
#include "calibration/measurement_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>
#include <map>

#include <nlohmann/json.hpp>

#include "calibration/format_helpers.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"

namespace ess::measurement {

namespace {

std::string shown_json(const nlohmann::json& v) {
  return shown(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// Every key of `j` must be one of `known` (the schema's keys at `pointer`).
void require_known_keys(const nlohmann::json& j, const std::vector<std::string>& known, const std::string& path,
                        const std::string& pointer) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw MeasurementError(path, pointer_append(pointer, key),
                             "unknown key \"" + shown(key) + "\"" + did_you_mean(key, known) + " (expected " +
                                 quoted_list(known) + ")");
    }
  }
}

// The keys of the statistics objects `stats` and `alone`.
const std::vector<std::string> kStatsKeys = {"repetitions", "median_s", "mean_s", "min_s",
                                             "max_s",       "p10_s",    "p90_s",  "std_s"};

class SampleReader {
 public:
  SampleReader(const nlohmann::json& j, std::string path, std::string pointer)
      : j_(j), path_(std::move(path)), pointer_(std::move(pointer)) {}
  [[nodiscard]] const nlohmann::json& field(const std::string& key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    return *it;
  }
  // A JSON integer in `range` (a float such as 8.0 is not one: the writer prints integers as such).
  [[nodiscard]] std::int64_t integer(const std::string& key, const IntRange& range) const {
    const auto& v = field(key);
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(range.max) && static_cast<std::int64_t>(u) >= range.min) {
        return static_cast<std::int64_t>(u);
      }
    } else if (v.is_number_integer()) {
      const auto i = v.get<std::int64_t>();
      if (i >= range.min && i <= range.max) return i;
    }
    fail(key, "expected " + range_text(range) + ", got " + shown_json(v));
  }
  [[nodiscard]] std::string text(const std::string& key, const std::vector<std::string>& allowed) const {
    const auto& v = field(key);
    if (!v.is_string()) fail(key, "expected a string, got " + shown_json(v));
    const std::string s = v.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(key, "unknown value \"" + shown(s) + "\"" + did_you_mean(s, allowed) + " (expected one of " + list + ")");
    }
    return s;
  }
  // stats.median_s (or another statistics object's) in seconds, within [kMinSeconds, kMaxSeconds].
  [[nodiscard]] double median(const std::string& key = "stats") const {
    const auto& st = field(key);
    if (!st.is_object()) fail(key, "expected an object with \"median_s\", got " + shown_json(st));
    require_known_keys(st, kStatsKeys, path_, pointer_append(pointer_, key));
    const auto it = st.find("median_s");
    if (it == st.end() || !it->is_number() || !(it->get<double>() >= kMinSeconds && it->get<double>() <= kMaxSeconds)) {
      fail(key + "/median_s", "expected a time in seconds > 0 between 1e-09 (1 ns) and 3600 (1 hour), got " +
                                  (it == st.end() ? std::string("nothing") : shown_json(*it)));
    }
    return it->get<double>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw MeasurementError(path_, pointer_ + "/" + key, message);
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::string pointer_;
};

DType read_dtype(const SampleReader& s) {
  const std::string d = s.text("dtype", {"fp32", "bf16", "fp16", "fp8"});
  return *parse_dtype(d);
}

// The keys of each sample kind (kernels/README.md, "samples").
const std::map<std::string, std::vector<std::string>>& sample_keys() {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"gemm", {"kind", "m", "n", "k", "dtype", "stats"}},
      {"norm", {"kind", "norm", "tokens", "hidden", "dtype", "stats"}},
      {"copy", {"kind", "direction", "host_memory", "bytes", "stats"}},
      {"gather", {"kind", "direction", "method", "rows", "row_bytes", "calls", "stats"}},
      {"gather_interference", {"kind", "m", "n", "k", "dtype", "rows", "row_bytes", "alone", "stats"}},
      {"d2d", {"kind", "bytes", "stats"}},
      {"p2p", {"kind", "src", "dst", "bytes", "stats"}},
      {"allreduce", {"kind", "gpus", "bytes", "dtype", "stats"}},
      {"alltoall", {"kind", "gpus", "bytes", "dtype", "stats"}}};
  return keys;
}

// rows x row_bytes of a gather, checked.
double gather_bytes(const SampleReader& s) {
  const std::int64_t rows = s.integer("rows", kRows);
  const std::int64_t row_bytes = s.integer("row_bytes", kBytes);
  const auto bytes = checked_product(rows, row_bytes);
  if (!bytes || *bytes > kBytes.max) {
    s.fail("rows", "rows x row_bytes (" + std::to_string(rows) + " x " + std::to_string(row_bytes) + ") is more than " +
                       std::to_string(kBytes.max) + " bytes (1 TiB)");
  }
  return static_cast<double>(*bytes);
}

void read_ess_bench(const nlohmann::json& doc, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  require_known_keys(doc, {"schema", "environment", "samples"}, in.path, "");
  const auto env = doc.find("environment");
  if (env == doc.end() || !env->is_object()) throw MeasurementError(in.path, "/environment", "missing (an object)");
  require_known_keys(*env,
                     {"tool", "date", "host", "gpu", "gpu_count", "compute_capability", "sm_count", "memory_bytes",
                      "l2_bytes", "clocks", "driver", "cuda_driver_api", "cuda_runtime", "cublas", "nccl", "method"},
                     in.path, "/environment");
  const auto str = [&](const char* key) -> std::string {
    const auto it = env->find(key);
    if (it == env->end() || it->is_null()) return "not recorded";
    if (!it->is_string()) {
      throw MeasurementError(in.path, std::string("/environment/") + key, "expected a string, got " + shown_json(*it));
    }
    return it->get<std::string>();
  };
  in.gpu = str("gpu");
  if (in.gpu == "not recorded") throw MeasurementError(in.path, "/environment/gpu", "missing: the GPU measured");
  in.date = str("date");
  in.environment = str("tool") + "; driver " + str("driver") + "; CUDA runtime " + str("cuda_runtime") + "; cuBLAS " +
                   str("cublas");
  if (!gpu_matches(in.gpu, o)) return;
  const auto samples = doc.find("samples");
  if (samples == doc.end() || !samples->is_array()) throw MeasurementError(in.path, "/samples", "missing (an array)");
  const std::vector<std::string> kinds = {"gemm", "norm", "copy", "gather", "gather_interference",
                                          "d2d", "p2p", "allreduce", "alltoall"};
  for (std::size_t i = 0; i < samples->size(); ++i) {
    const nlohmann::json& j = (*samples)[i];
    const std::string pointer = "/samples/" + std::to_string(i);
    if (!j.is_object()) throw MeasurementError(in.path, pointer, "expected an object, got " + shown_json(j));
    const SampleReader s(j, in.path, pointer);
    const std::string kind = s.text("kind", kinds);
    require_known_keys(j, sample_keys().at(kind), in.path, pointer);
    std::string model = kind;
    if (kind == "gemm") {
      out.gemm.push_back({GemmShape{s.integer("m", kTokens), s.integer("n", kFeatures), s.integer("k", kFeatures),
                                    read_dtype(s)},
                          s.median()});
    } else if (kind == "norm") {
      const auto norm = parse_norm_kind(s.text("norm", {"rms", "layer"}));
      out.norm.push_back(
          {NormShape{s.integer("tokens", kTokens), s.integer("hidden", kFeatures), read_dtype(s), *norm}, s.median()});
    } else if (kind == "copy") {
      const std::string dir = s.text("direction", {"h2d", "d2h", "bidirectional"});
      const std::string mem = s.text("host_memory", {"pinned", "pageable"});
      const auto bytes = static_cast<double>(s.integer("bytes", kBytes));
      const double seconds = s.median();
      if (mem != "pinned") {
        ++in.skipped["pageable copies (ESS uses pinned memory; reported, not modelled)"];
        continue;
      }
      if (dir == "bidirectional") {
        ++in.skipped["bidirectional copies (the event simulation shares the link; not fitted)"];
        continue;
      }
      out.copy.push_back({*parse_copy_direction(dir), bytes, 1, seconds});
    } else if (kind == "gather") {
      const auto dir = *parse_copy_direction(s.text("direction", {"h2d", "d2h"}));
      const std::string method = s.text("method", {"per_row", "per_run", "uva_kernel"});
      const double bytes = gather_bytes(s);
      const std::int64_t rows = s.integer("rows", kRows);
      const std::int64_t calls = s.integer("calls", kCalls);
      // kernels/README.md: one call per row, one per run of adjacent rows, or none (a kernel).
      if (method == "per_row" ? calls != rows : method == "per_run" ? (calls < 1 || calls > rows) : calls != 0) {
        s.fail("calls", "a " + method + " gather of " + std::to_string(rows) + " rows makes " +
                            (method == "per_row" ? std::to_string(rows) : method == "per_run" ? "1 to " + std::to_string(rows) : "0") +
                            " copy calls, got " + std::to_string(calls));
      }
      if (method == "uva_kernel") {
        out.gather.push_back({dir, bytes, s.median()});
        model = "gather";
      } else {
        out.copy.push_back({dir, bytes, calls, s.median()});
        model = "copy";
      }
    } else if (kind == "gather_interference") {
      // The GEMM and the gather beside it are described for the record; only the times are fitted.
      (void)s.integer("m", kTokens);
      (void)s.integer("n", kFeatures);
      (void)s.integer("k", kFeatures);
      (void)read_dtype(s);
      (void)gather_bytes(s);
      out.interference.push_back({s.median("alone"), s.median()});
      model = "interference";
    } else if (kind == "d2d") {
      (void)s.integer("bytes", kBytes);
      (void)s.median();
      ++in.skipped["device-to-device copies (reported by ess-bench, no model uses them)"];
      continue;
    } else {
      int gpus = 2;  // a peer copy is between two GPUs (the sample names them as src and dst)
      if (kind == "p2p") {
        if (s.integer("src", kDeviceIndex) == s.integer("dst", kDeviceIndex)) s.fail("dst", "a peer copy needs two GPUs (src != dst)");
      } else {
        gpus = static_cast<int>(s.integer("gpus", kCollectiveGpus));
        (void)read_dtype(s);
      }
      const CollectivePoint p{gpus, static_cast<double>(s.integer("bytes", kBytes)), s.median()};
      if (p.gpus > o.gpus_per_node) {
        ++in.skipped["collectives over more GPUs than a node of the base hardware"];
        continue;
      }
      (kind == "p2p" ? out.p2p : kind == "allreduce" ? out.allreduce : out.alltoall).push_back(p);
    }
    ++in.used[model];
  }
}

}  // namespace

extern const JsonFormat kEssBenchFormat{"ess-bench", "ess-sim/measurements/v1", read_ess_bench};

}  // namespace ess::measurement
