#include "calibration/measurements.h"

#include <array>
#include <functional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "calibration/csv_table.h"
#include "calibration/measurement_formats.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/json_text.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"

namespace ess {

MeasurementError::MeasurementError(const std::string& path, const std::string& where, const std::string& message)
    : InputError(path + (where.empty() ? "" : ": " + where) + ": " + message) {}

namespace {

using namespace measurement;  // NOLINT(google-build-using-namespace): the CSV helpers of csv_table.h

std::string read_file(const std::string& path) {
  std::string text;
  const ReadProblem problem = read_whole_file(path, text);
  switch (problem) {
    case ReadProblem::none: return text;
    case ReadProblem::directory:
      throw MeasurementError(path, "", "is a directory; name the measurement files (e.g. " + path + "/*.json)");
    default: break;
  }
  throw MeasurementError(path, "", describe(problem));
}

// Merges points with the same key (the same shape measured more than once) into their mean.
template <class Point, class Key>
std::size_t merge_duplicates(std::vector<Point>& points, const std::function<Key(const Point&)>& key,
                             const std::function<double&(Point&)>& seconds) {
  std::map<Key, std::pair<std::size_t, std::size_t>> first;  // key -> (index in out, count)
  std::vector<Point> out;
  for (Point& p : points) {
    const Key k = key(p);
    const auto it = first.find(k);
    if (it == first.end()) {
      first.emplace(k, std::make_pair(out.size(), std::size_t{1}));
      out.push_back(p);
    } else {
      auto& [at, count] = it->second;
      double& mean = seconds(out[at]);
      mean = (mean * static_cast<double>(count) + seconds(p)) / static_cast<double>(count + 1);
      ++count;
    }
  }
  const std::size_t merged = points.size() - out.size();
  points = std::move(out);
  return merged;
}

std::size_t merge_all(MeasurementSet& s) {
  using K4 = std::tuple<std::int64_t, std::int64_t, std::int64_t, int>;
  std::size_t merged = 0;
  merged += merge_duplicates<GemmPoint, K4>(
      s.gemm, [](const GemmPoint& p) { return K4{p.shape.m, p.shape.n, p.shape.k, static_cast<int>(p.shape.dtype)}; },
      [](GemmPoint& p) -> double& { return p.seconds; });
  using KN = std::tuple<std::int64_t, std::int64_t, int, int>;
  merged += merge_duplicates<NormPoint, KN>(
      s.norm,
      [](const NormPoint& p) {
        return KN{p.shape.tokens, p.shape.hidden, static_cast<int>(p.shape.dtype), static_cast<int>(p.shape.kind)};
      },
      [](NormPoint& p) -> double& { return p.seconds; });
  using KC = std::tuple<int, double, std::int64_t>;
  merged += merge_duplicates<CopyPoint, KC>(
      s.copy, [](const CopyPoint& p) { return KC{static_cast<int>(p.direction), p.bytes, p.calls}; },
      [](CopyPoint& p) -> double& { return p.seconds; });
  using KG = std::tuple<int, double>;
  merged += merge_duplicates<GatherPoint, KG>(
      s.gather, [](const GatherPoint& p) { return KG{static_cast<int>(p.direction), p.bytes}; },
      [](GatherPoint& p) -> double& { return p.seconds; });
  using KGG = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int>;
  merged += merge_duplicates<GroupedGemmPoint, KGG>(
      s.grouped_gemm,
      [](const GroupedGemmPoint& p) {
        return KGG{p.shape.groups, p.shape.m_total, p.shape.n, p.shape.k, static_cast<int>(p.shape.dtype)};
      },
      [](GroupedGemmPoint& p) -> double& { return p.seconds; });
  using KS = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, double>;
  merged += merge_duplicates<SparseMlaPoint, KS>(
      s.sparse_attention,
      [](const SparseMlaPoint& p) {
        return KS{p.shape.requests, p.shape.queries_per_request, p.shape.heads, p.shape.qk_dim, p.shape.v_dim,
                  p.selected, p.shape.entry_bytes.value()};
      },
      [](SparseMlaPoint& p) -> double& { return p.seconds; });
  merged += merge_duplicates<DenseMlaPoint, KS>(
      s.dense_attention,
      [](const DenseMlaPoint& p) {
        return KS{p.shape.requests, p.shape.queries_per_request, p.shape.heads, p.shape.qk_dim, p.shape.v_dim,
                  p.context, p.shape.entry_bytes.value()};
      },
      [](DenseMlaPoint& p) -> double& { return p.seconds; });
  using KP = std::tuple<std::int64_t, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  merged += merge_duplicates<PrefillAttentionPoint, KP>(
      s.prefill_attention,
      [](const PrefillAttentionPoint& p) {
        return KP{p.shape.queries, p.shape.key_pairs, p.shape.keys, p.shape.heads, p.shape.qk_dim, p.shape.v_dim};
      },
      [](PrefillAttentionPoint& p) -> double& { return p.seconds; });
  using KA = std::tuple<int, int, double>;
  merged += merge_duplicates<ExpertAlltoallPoint, KA>(
      s.expert_alltoall, [](const ExpertAlltoallPoint& p) { return KA{p.expert_parallel, p.gpus_per_node, p.bytes}; },
      [](ExpertAlltoallPoint& p) -> double& { return p.seconds; });
  using KK = std::tuple<int, double>;
  for (auto* v : {&s.allreduce, &s.alltoall, &s.p2p}) {
    merged += merge_duplicates<CollectivePoint, KK>(
        *v, [](const CollectivePoint& p) { return KK{p.gpus, p.bytes}; },
        [](CollectivePoint& p) -> double& { return p.seconds; });
  }
  return merged;
}

// The registries (measurement_formats.h), in detection order.
constexpr auto kJsonFormats = std::to_array<const JsonFormat*>({&kEssBenchFormat});
constexpr auto kCsvFormats = std::to_array<const CsvFormat*>({
    &kVidurComputeFormat,
    &kVidurNetworkFormat,
    &kLigerNormFormat,
    &kDeepGemmFormat,
    &kFlashMlaFormat,
    &kFlashMlaDenseFormat,
    &kFlashAttentionFormat,
    &kDeepEpLowLatencyFormat,
    &kDeepEpNormalFormat,
    &kPcieSweepFormat,
});

// A JSON document, read by the format its "schema" names.
void read_json(std::string_view text, MeasurementInput& in, MeasurementSet& out, const ReadOptions& options) {
  nlohmann::json doc;
  try {
    // Duplicate keys, nesting deeper than kMaxJsonDepth and numbers beyond a double are errors.
    doc = parse_json_text(text, in.path);
  } catch (const ConfigError& e) {
    throw MeasurementError(in.path, e.pointer(), e.message());
  }
  const auto schema = doc.find("schema");
  for (const JsonFormat* f : kJsonFormats) {
    if (schema != doc.end() && *schema == f->schema) {
      in.format = f->name;
      f->read(doc, in, out, options);
      return;
    }
  }
  std::vector<std::string> schemas;
  for (const JsonFormat* f : kJsonFormats) schemas.emplace_back(f->schema);
  throw MeasurementError(in.path, "/schema", "not a measurements document this version reads (expected \"schema\": " +
                                                 quoted_list(schemas) + "; see calibration/README.md)");
}

// A CSV table, read by the first format that recognises its header.
void read_csv(std::string_view text, MeasurementInput& in, MeasurementSet& out, const ReadOptions& options) {
  std::vector<CsvRow> rows = parse_csv(text, in.path);
  if (rows.size() < 2) throw MeasurementError(in.path, "", "a CSV table needs a header and at least one row");
  const CsvTable t(std::move(rows), in.path);
  for (const CsvFormat* f : kCsvFormats) {
    if (f->detect(t)) {
      in.format = f->name;
      f->read(t, in, out, options);
      return;
    }
  }
  std::string known;
  for (const CsvFormat* f : kCsvFormats) known += std::string(known.empty() ? "" : ", ") + f->what;
  throw MeasurementError(in.path, "line " + std::to_string(t.header_line()),
                         "unrecognised table: expected ess-bench JSON or one of the tables calibration/README.md "
                         "describes (" + known + ")");
}

// Reads one file's text into `set` (its points appended, its input recorded).
void read_one(std::string_view text, const std::string& path, const ReadOptions& options, MeasurementSet& set) {
  MeasurementInput in;
  in.path = path;
  in.sha256 = sha256_hex(text);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw MeasurementError(path, "", "the file is empty");
  MeasurementSet part;
  if (text[first] == '{') {
    read_json(text, in, part, options);
  } else {
    read_csv(text, in, part, options);
  }
  std::size_t used = 0;
  for (const auto& [model, n] : in.used) used += n;
  if (used == 0) {
    throw MeasurementError(path, "", "no usable measurement" +
                                         (options.gpu.empty() ? std::string()
                                                              : " for GPU \"" + options.gpu + "\" (this file: " +
                                                                    (in.gpu.empty() ? "other GPUs" : in.gpu) + ")"));
  }
  const auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(set.gemm, part.gemm);
  append(set.norm, part.norm);
  append(set.copy, part.copy);
  append(set.gather, part.gather);
  append(set.interference, part.interference);
  append(set.allreduce, part.allreduce);
  append(set.alltoall, part.alltoall);
  append(set.p2p, part.p2p);
  append(set.grouped_gemm, part.grouped_gemm);
  append(set.sparse_attention, part.sparse_attention);
  append(set.attention_rates, part.attention_rates);
  append(set.dense_attention, part.dense_attention);
  append(set.prefill_attention, part.prefill_attention);
  append(set.expert_alltoall, part.expert_alltoall);
  append(set.alltoall_normal, part.alltoall_normal);
  set.inputs.push_back(std::move(in));
}

// Checks that the inputs come from one GPU and merges repeated shapes.
void finish(MeasurementSet& set, const ReadOptions& options) {
  if (options.gpu.empty()) {
    std::set<std::string> gpus;
    for (const auto& in : set.inputs) gpus.insert(in.gpu);
    if (gpus.size() > 1) {
      std::string list;
      for (const auto& g : gpus) list += (list.empty() ? "\"" : ", \"") + g + "\"";
      throw MeasurementError(set.inputs.front().path, "",
                             "the inputs were measured on different GPUs (" + list + "); choose one with --gpu");
    }
  }
  set.duplicates_merged = merge_all(set);
}

}  // namespace

namespace measurement {
std::span<const CsvFormat* const> csv_formats() { return kCsvFormats; }
std::span<const JsonFormat* const> json_formats() { return kJsonFormats; }
}  // namespace measurement

MeasurementSet read_measurements(const std::vector<std::string>& paths, const ReadOptions& options) {
  if (paths.empty()) throw MeasurementError("calibrate", "", "no measurement files given");
  MeasurementSet set;
  for (const std::string& path : paths) read_one(read_file(path), path, options, set);
  finish(set, options);
  return set;
}

MeasurementSet read_measurement_text(std::string_view text, const std::string& origin, const ReadOptions& options) {
  MeasurementSet set;
  read_one(text, origin, options, set);
  finish(set, options);
  return set;
}

}  // namespace ess
