#include "calibration/measurements.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/config/did_you_mean.h"
#include "sim/io/read_file.h"
#include "sim/io/sha256.h"

namespace ess {

MeasurementError::MeasurementError(const std::string& path, const std::string& where, const std::string& message)
    : std::runtime_error(path + (where.empty() ? "" : ": " + where) + ": " + message) {}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

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

// --- CSV (RFC 4180: quoted fields, "" inside quotes) --------------------------------------------

struct CsvRow {
  std::size_t line = 0;
  std::vector<std::string> fields;
};

std::vector<CsvRow> parse_csv(const std::string& text, const std::string& path) {
  std::vector<CsvRow> rows;
  CsvRow row;
  row.line = 1;
  std::string field;
  bool quoted = false;
  bool any = false;
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.fields.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.fields.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      field.clear();
      row = CsvRow{};
      any = false;
      ++line;
      row.line = line;
    } else {
      field += c;
      any = true;
    }
  }
  if (quoted) throw MeasurementError(path, "line " + std::to_string(row.line), "unterminated quoted field");
  if (any || !field.empty()) {
    row.fields.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

class CsvTable {
 public:
  CsvTable(std::vector<CsvRow> rows, std::string path) : path_(std::move(path)) {
    header_ = std::move(rows.front().fields);
    rows.erase(rows.begin());
    rows_ = std::move(rows);
    for (std::size_t i = 0; i < header_.size(); ++i) columns_.emplace(header_[i], i);
  }
  [[nodiscard]] bool has(const std::string& column) const { return columns_.count(column) > 0; }
  [[nodiscard]] std::size_t column(const std::string& name) const {
    const auto it = columns_.find(name);
    if (it == columns_.end()) {
      throw MeasurementError(path_, "line 1", "missing column \"" + name + "\"" + did_you_mean(name, header_));
    }
    return it->second;
  }
  [[nodiscard]] const std::vector<CsvRow>& rows() const { return rows_; }
  [[nodiscard]] const std::string& text(const CsvRow& r, std::size_t col) const {
    if (col >= r.fields.size()) {
      throw MeasurementError(path_, "line " + std::to_string(r.line),
                             "has " + std::to_string(r.fields.size()) + " fields; column \"" + header_[col] +
                                 "\" is field " + std::to_string(col + 1));
    }
    return r.fields[col];
  }
  [[nodiscard]] double number(const CsvRow& r, std::size_t col) const {
    const std::string& s = text(r, col);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
      throw MeasurementError(path_, "line " + std::to_string(r.line),
                             "column \"" + header_[col] + "\": expected a number, got \"" + s + "\"");
    }
    return v;
  }
  [[nodiscard]] std::int64_t integer(const CsvRow& r, std::size_t col) const {
    const double v = number(r, col);
    if (v != std::floor(v) || v < 1.0 || v > 9.0e15) {
      throw MeasurementError(path_, "line " + std::to_string(r.line),
                             "column \"" + header_[col] + "\": expected a positive integer, got \"" + text(r, col) + "\"");
    }
    return static_cast<std::int64_t>(v);
  }
  [[nodiscard]] double positive_ms(const CsvRow& r, std::size_t col) const {
    const double v = number(r, col);
    if (!(v > 0.0)) {
      throw MeasurementError(path_, "line " + std::to_string(r.line),
                             "column \"" + header_[col] + "\": a time must be > 0, got \"" + text(r, col) + "\"");
    }
    return v * 1e-3;
  }
  [[nodiscard]] std::string where(const CsvRow& r) const { return "line " + std::to_string(r.line); }

 private:
  std::string path_;
  std::vector<std::string> header_;
  std::vector<CsvRow> rows_;
  std::map<std::string, std::size_t> columns_;
};

// The GPU a Vidur file was measured on: the `<gpu>` of compute_<gpu>_... or network_<gpu>_dgx_...
std::string vidur_gpu(const std::string& path, const std::string& prefix) {
  const std::string name = std::filesystem::path(path).filename().string();
  if (name.rfind(prefix, 0) == 0) {
    const auto end = name.find('_', prefix.size());
    if (end != std::string::npos && end > prefix.size()) return name.substr(prefix.size(), end - prefix.size());
  }
  throw MeasurementError(path, "", "a Vidur table records its GPU only in its file name, which must start with " + prefix +
                                       "<gpu>_ (as in microsoft/vidur's exports, e.g. " + prefix + "a100_...)");
}

bool gpu_matches(const std::string& gpu, const ReadOptions& o) {
  return o.gpu.empty() || lower(gpu).find(lower(o.gpu)) != std::string::npos;
}

void read_vidur_compute(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "vidur-compute";
  in.gpu = vidur_gpu(in.path, "compute_");
  in.date = "not recorded (microsoft/vidur profiling data)";
  in.environment = "PyTorch profiler kernel times, fp16; Vidur records no driver or CUDA version";
  if (!gpu_matches(in.gpu, o)) return;
  const std::size_t c_tokens = t.column("num_tokens");
  const std::size_t c_tp = t.column("num_tensor_parallel_workers");
  const std::size_t c_embd = t.column("n_embd");
  const std::size_t c_ffn = t.column("n_expanded_embd");
  const std::size_t c_heads = t.column("n_head");
  const std::size_t c_kv = t.column("n_kv_head");
  const std::size_t c_gated = t.column("use_gated_mlp");
  struct Op {
    const char* name;
    std::size_t col;
  };
  const Op gemms[] = {{"attn_pre_proj", t.column("time_stats.attn_pre_proj.median")},
                      {"attn_post_proj", t.column("time_stats.attn_post_proj.median")},
                      {"mlp_up_proj", t.column("time_stats.mlp_up_proj.median")},
                      {"mlp_down_proj", t.column("time_stats.mlp_down_proj.median")}};
  const Op norms[] = {{"input_layernorm", t.column("time_stats.input_layernorm.median")},
                      {"post_attention_layernorm", t.column("time_stats.post_attention_layernorm.median")}};
  for (const CsvRow& r : t.rows()) {
    const std::int64_t m = t.integer(r, c_tokens);
    const std::int64_t tp = t.integer(r, c_tp);
    const std::int64_t embd = t.integer(r, c_embd);
    const std::int64_t ffn = t.integer(r, c_ffn);
    const std::int64_t heads = t.integer(r, c_heads);
    const std::int64_t kv = t.integer(r, c_kv);
    const std::string gated = lower(t.text(r, c_gated));
    if (gated != "true" && gated != "false") {
      throw MeasurementError(in.path, t.where(r), "column \"use_gated_mlp\": expected True or False, got \"" +
                                                      t.text(r, c_gated) + "\"");
    }
    if (embd % heads != 0 || heads % tp != 0 || kv % tp != 0 || ffn % tp != 0) {
      throw MeasurementError(in.path, t.where(r), "the model's sizes do not divide by its heads or by TP " + std::to_string(tp));
    }
    const std::int64_t head_dim = embd / heads;
    // Y[m x n] = X[m x k] W[k x n] with the column-parallel (QKV, up) and row-parallel (O, down)
    // split of Megatron-style tensor parallelism.
    const std::int64_t shapes[4][2] = {{(heads + 2 * kv) * head_dim / tp, embd},
                                       {embd, heads * head_dim / tp},
                                       {(gated == "true" ? 2 : 1) * ffn / tp, embd},
                                       {embd, ffn / tp}};
    for (int g = 0; g < 4; ++g) {
      out.gemm.push_back({GemmShape{m, shapes[g][0], shapes[g][1], DType::fp16}, t.positive_ms(r, gemms[g].col)});
      ++in.used["gemm"];
    }
    // Norms do not shard with TP: the same kernel is in every TP row; keep the TP = 1 rows.
    for (const Op& n : norms) {
      if (tp == 1) {
        out.norm.push_back({NormShape{m, embd, DType::fp16, NormKind::rms}, t.positive_ms(r, n.col)});
        ++in.used["norm"];
      } else {
        ++in.skipped["norm rows with TP > 1 (the same kernel as TP 1)"];
      }
    }
  }
}

void read_vidur_network(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "vidur-network";
  in.gpu = vidur_gpu(in.path, "network_");
  in.date = "not recorded (microsoft/vidur profiling data)";
  in.environment = "NCCL kernel times from the PyTorch profiler; Vidur records no NCCL or driver version";
  if (!gpu_matches(in.gpu, o)) return;
  const bool allreduce = t.has("time_stats.all_reduce.median");
  const std::size_t c_time = t.column(allreduce ? "time_stats.all_reduce.median" : "time_stats.send_recv.median");
  const std::size_t c_workers = t.column("num_workers");
  const std::size_t c_size = t.column("size");
  const std::size_t c_dpn = t.column("devices_per_node");
  for (const CsvRow& r : t.rows()) {
    const std::int64_t workers = t.integer(r, c_workers);
    const std::int64_t per_node = t.integer(r, c_dpn);
    if (per_node != workers) {
      ++in.skipped["rows spanning nodes (the fit covers one node)"];
      continue;
    }
    if (workers > o.gpus_per_node) {
      ++in.skipped["rows over more GPUs than a node of the base hardware"];
      continue;
    }
    const CollectivePoint p{static_cast<int>(workers), static_cast<double>(t.integer(r, c_size)), t.positive_ms(r, c_time)};
    if (allreduce) {
      out.allreduce.push_back(p);
      ++in.used["allreduce"];
    } else {
      if (workers != 2) throw MeasurementError(in.path, t.where(r), "a send_recv row must have num_workers 2");
      out.p2p.push_back(p);
      ++in.used["p2p"];
    }
  }
}

// {"M": 4096, "dtype": "torch.float32", "eps": 1e-06} -> M and the dtype.
void read_liger_norm(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "liger-norm";
  const std::size_t c_kernel = t.column("kernel_name");
  const std::size_t c_provider = t.column("kernel_provider");
  const std::size_t c_mode = t.column("kernel_operation_mode");
  const std::size_t c_metric = t.column("metric_name");
  const std::size_t c_unit = t.column("metric_unit");
  const std::size_t c_x = t.column("x_value");
  const std::size_t c_y = t.column("y_value_50");
  const std::size_t c_extra = t.column("extra_benchmark_config_str");
  const std::size_t c_gpu = t.column("gpu_name");
  const std::size_t c_time = t.column("timestamp");
  const std::size_t c_version = t.column("liger_version");
  std::set<std::string> dates;
  std::set<std::string> versions;
  std::set<std::string> gpus;
  for (const CsvRow& r : t.rows()) {
    const std::string& kernel = t.text(r, c_kernel);
    if (!gpu_matches(t.text(r, c_gpu), o)) {
      ++in.skipped["rows of another GPU"];
      continue;
    }
    if (kernel != "rms_norm" && kernel != "layer_norm") {
      ++in.skipped["other kernels (fused-add and Megatron variants, unknown dtype or extra traffic)"];
      continue;
    }
    if (t.text(r, c_provider) != "liger" || t.text(r, c_mode) != "forward" || t.text(r, c_metric) != "speed") {
      ++in.skipped["other providers, backward passes and memory rows"];
      continue;
    }
    if (t.text(r, c_unit) != "ms") {
      throw MeasurementError(in.path, t.where(r), "column \"metric_unit\": expected ms, got \"" + t.text(r, c_unit) + "\"");
    }
    nlohmann::json extra;
    try {
      extra = nlohmann::json::parse(t.text(r, c_extra));
    } catch (const nlohmann::json::exception& e) {
      throw MeasurementError(in.path, t.where(r), "column \"extra_benchmark_config_str\" is not JSON: " + std::string(e.what()));
    }
    const auto m = extra.find("M");
    const auto dt = extra.find("dtype");
    if (m == extra.end() || !m->is_number_integer() || m->get<std::int64_t>() < 1 || dt == extra.end() || !dt->is_string()) {
      throw MeasurementError(in.path, t.where(r), "extra_benchmark_config_str needs an integer \"M\" >= 1 and a \"dtype\"");
    }
    const std::string torch_dtype = dt->get<std::string>();
    DType dtype = DType::fp32;
    if (torch_dtype == "torch.float32") {
      dtype = DType::fp32;
    } else if (torch_dtype == "torch.bfloat16") {
      dtype = DType::bf16;
    } else if (torch_dtype == "torch.float16") {
      dtype = DType::fp16;
    } else {
      throw MeasurementError(in.path, t.where(r), "unknown dtype \"" + torch_dtype + "\"");
    }
    const NormShape shape{m->get<std::int64_t>(), t.integer(r, c_x), dtype,
                          kernel == "rms_norm" ? NormKind::rms : NormKind::layer};
    out.norm.push_back({shape, t.positive_ms(r, c_y)});
    ++in.used["norm"];
    gpus.insert(t.text(r, c_gpu));
    dates.insert(t.text(r, c_time));
    versions.insert(t.text(r, c_version));
  }
  const auto join = [](const std::set<std::string>& s) {
    std::string j;
    for (const auto& x : s) j += (j.empty() ? "" : ", ") + x;
    return j;
  };
  if (gpus.size() > 1) {
    throw MeasurementError(in.path, "", "has rows from several GPUs (" + join(gpus) + "); choose one with --gpu");
  }
  in.gpu = join(gpus);
  in.date = dates.empty() ? "not recorded" : join(dates);
  in.environment = "triton do_bench median (CUDA events); Liger-Kernel " + join(versions);
}

// --- ess-bench JSON -----------------------------------------------------------------------------

class SampleReader {
 public:
  SampleReader(const nlohmann::json& j, std::string path, std::string pointer)
      : j_(j), path_(std::move(path)), pointer_(std::move(pointer)) {}
  [[nodiscard]] const nlohmann::json& field(const std::string& key) const {
    const auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    return *it;
  }
  [[nodiscard]] std::int64_t integer(const std::string& key, std::int64_t min) const {
    const auto& v = field(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
      fail(key, "expected an integer >= " + std::to_string(min) + ", got " + v.dump());
    }
    return v.get<std::int64_t>();
  }
  [[nodiscard]] std::string text(const std::string& key, const std::vector<std::string>& allowed) const {
    const auto& v = field(key);
    if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
    const std::string s = v.get<std::string>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(key, "unknown value \"" + s + "\"" + did_you_mean(s, allowed) + " (expected one of " + list + ")");
    }
    return s;
  }
  // stats.median_s (or another stats object's) in seconds, > 0.
  [[nodiscard]] double median(const std::string& key = "stats") const {
    const auto& st = field(key);
    const auto it = st.is_object() ? st.find("median_s") : st.end();
    if (it == st.end() || !it->is_number() || !(it->get<double>() > 0.0) || !std::isfinite(it->get<double>())) {
      fail(key + "/median_s", "expected a time in seconds > 0");
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

void read_ess_bench(const nlohmann::json& doc, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "ess-bench";
  const auto env = doc.find("environment");
  if (env == doc.end() || !env->is_object()) throw MeasurementError(in.path, "/environment", "missing (an object)");
  const auto str = [&](const char* key) -> std::string {
    const auto it = env->find(key);
    if (it == env->end() || it->is_null()) return "not recorded";
    if (!it->is_string()) throw MeasurementError(in.path, std::string("/environment/") + key, "expected a string");
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
    if (!j.is_object()) throw MeasurementError(in.path, pointer, "expected an object");
    const SampleReader s(j, in.path, pointer);
    const std::string kind = s.text("kind", kinds);
    if (kind == "gemm") {
      out.gemm.push_back({GemmShape{s.integer("m", 1), s.integer("n", 1), s.integer("k", 1), read_dtype(s)}, s.median()});
    } else if (kind == "norm") {
      const auto norm = parse_norm_kind(s.text("norm", {"rms", "layer"}));
      out.norm.push_back({NormShape{s.integer("tokens", 1), s.integer("hidden", 1), read_dtype(s), *norm}, s.median()});
    } else if (kind == "copy") {
      const std::string dir = s.text("direction", {"h2d", "d2h", "bidirectional"});
      const std::string mem = s.text("host_memory", {"pinned", "pageable"});
      const auto bytes = static_cast<double>(s.integer("bytes", 1));
      if (mem != "pinned") {
        ++in.skipped["pageable copies (ESS uses pinned memory; reported, not modelled)"];
        continue;
      }
      if (dir == "bidirectional") {
        ++in.skipped["bidirectional copies (the event simulation shares the link; not fitted)"];
        continue;
      }
      out.copy.push_back({*parse_copy_direction(dir), bytes, 1, s.median()});
    } else if (kind == "gather") {
      const auto dir = *parse_copy_direction(s.text("direction", {"h2d", "d2h"}));
      const std::string method = s.text("method", {"per_row", "per_run", "uva_kernel"});
      const auto bytes = static_cast<double>(s.integer("rows", 1) * s.integer("row_bytes", 1));
      if (method == "uva_kernel") {
        out.gather.push_back({dir, bytes, s.median()});
      } else {
        out.copy.push_back({dir, bytes, s.integer("calls", 1), s.median()});
      }
    } else if (kind == "gather_interference") {
      out.interference.push_back({s.median("alone"), s.median()});
    } else if (kind == "d2d") {
      ++in.skipped["device-to-device copies (reported by ess-bench, no model uses them)"];
      continue;
    } else {
      // A peer copy is between two GPUs (the sample names them as src and dst).
      const int gpus = kind == "p2p" ? 2 : static_cast<int>(s.integer("gpus", 2));
      const CollectivePoint p{gpus, static_cast<double>(s.integer("bytes", 1)), s.median()};
      if (p.gpus > o.gpus_per_node) {
        ++in.skipped["collectives over more GPUs than a node of the base hardware"];
        continue;
      }
      (kind == "p2p" ? out.p2p : kind == "allreduce" ? out.allreduce : out.alltoall).push_back(p);
    }
    ++in.used[kind == "gather" ? (j.value("method", "") == "uva_kernel" ? "gather" : "copy") :
              kind == "gather_interference" ? "interference" : kind];
  }
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
  using KK = std::tuple<int, double>;
  for (auto* v : {&s.allreduce, &s.alltoall, &s.p2p}) {
    merged += merge_duplicates<CollectivePoint, KK>(
        *v, [](const CollectivePoint& p) { return KK{p.gpus, p.bytes}; },
        [](CollectivePoint& p) -> double& { return p.seconds; });
  }
  return merged;
}

}  // namespace

MeasurementSet read_measurements(const std::vector<std::string>& paths, const ReadOptions& options) {
  if (paths.empty()) throw MeasurementError("calibrate", "", "no measurement files given");
  MeasurementSet set;
  for (const std::string& path : paths) {
    const std::string text = read_file(path);
    MeasurementInput in;
    in.path = path;
    in.sha256 = sha256_hex(text);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) throw MeasurementError(path, "", "the file is empty");
    MeasurementSet part;
    if (text[first] == '{') {
      nlohmann::json doc;
      try {
        doc = nlohmann::json::parse(text);
      } catch (const nlohmann::json::parse_error& e) {
        throw MeasurementError(path, "byte " + std::to_string(e.byte), "not valid JSON: " + std::string(e.what()));
      }
      const auto schema = doc.find("schema");
      if (schema == doc.end() || *schema != "ess-sim/measurements/v1") {
        throw MeasurementError(path, "/schema", "not an ess-bench measurements file (expected \"schema\": "
                                                "\"ess-sim/measurements/v1\"; see calibration/README.md)");
      }
      read_ess_bench(doc, in, part, options);
    } else {
      std::vector<CsvRow> rows = parse_csv(text, path);
      if (rows.size() < 2) throw MeasurementError(path, "", "a CSV table needs a header and at least one row");
      const CsvTable t(std::move(rows), path);
      if (t.has("time_stats.attn_pre_proj.median")) {
        read_vidur_compute(t, in, part, options);
      } else if (t.has("time_stats.all_reduce.median") || t.has("time_stats.send_recv.median")) {
        read_vidur_network(t, in, part, options);
      } else if (t.has("kernel_name") && t.has("y_value_50")) {
        read_liger_norm(t, in, part, options);
      } else {
        throw MeasurementError(path, "line 1",
                               "unrecognised table: expected ess-bench JSON, a Vidur compute or network CSV, or the "
                               "Liger-Kernel benchmark CSV (see calibration/README.md)");
      }
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
    set.inputs.push_back(std::move(in));
  }
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
  return set;
}

}  // namespace ess
