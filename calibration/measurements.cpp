#include "calibration/measurements.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include "calibration/csv_table.h"

#include <nlohmann/json.hpp>

#include "models/check.h"
#include "models/mla_kernels.h"
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

// Tokens of one kernel (GEMM m, norm rows): 2^24 = 16.8M, 16x a one-million-token prefill.
constexpr IntRange kTokens{1, std::int64_t{1} << 24, "tokens"};
// Features of one layer (GEMM n and k, hidden and FFN sizes): 2^22 = 4.2M, 16x the widest layer
// of any model (a 256k-token vocabulary projection).
constexpr IntRange kFeatures{1, std::int64_t{1} << 22, "features"};
// Attention heads of a model: 2^16 (real models have 8 to 128).
constexpr IntRange kHeads{1, std::int64_t{1} << 16, "heads"};
// GPUs taking part in a collective, a tensor-parallel group or a node: 2^16, more than any job.
// A collective needs at least 2; a node or a TP group may be 1.
constexpr IntRange kGpus{1, std::int64_t{1} << 16, "GPUs"};
constexpr IntRange kCollectiveGpus{2, std::int64_t{1} << 16, "GPUs"};
constexpr IntRange kDeviceIndex{0, (std::int64_t{1} << 16) - 1, "device index"};
// Bytes of one copy, gather or collective buffer: 2^40 = 1 TiB, 7x an H200's HBM (141 GB) and more
// than any pinned host buffer.
constexpr IntRange kBytes{1, std::int64_t{1} << 40, "bytes"};
// Rows of one gather (656-byte rows: 2^32 rows would already be 2.8 TB) and calls per repetition.
constexpr IntRange kRows{1, std::int64_t{1} << 32, "rows"};
constexpr IntRange kCalls{0, std::int64_t{1} << 32, "calls"};

// a x b, or nothing when the product does not fit in an int64.
std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return std::nullopt;
  return p;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string shown_json(const nlohmann::json& v) {
  return shown(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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

// time_stats.<op>.<stat> for each of Vidur's statistics.
void add_time_stats(std::vector<std::string>& columns, const std::string& op) {
  for (const char* stat : {"min", "max", "mean", "median", "std"}) columns.push_back("time_stats." + op + "." + stat);
}

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

// Whether a row measured on `gpu` passes the --gpu filter; a row that does not is counted as skipped.
bool keep_gpu(const std::string& gpu, const ReadOptions& o, MeasurementInput& in) {
  if (gpu_matches(gpu, o)) return true;
  ++in.skipped["rows of another GPU"];
  return false;
}

std::string joined(const std::set<std::string>& s) {
  std::string j;
  for (const auto& x : s) j += (j.empty() ? "" : ", ") + x;
  return j;
}

// The one GPU of a table's rows (by its gpu column), after the --gpu filter.
void one_gpu(const std::set<std::string>& gpus, MeasurementInput& in) {
  if (gpus.size() > 1) {
    throw MeasurementError(in.path, "", "has rows from several GPUs (" + joined(gpus) + "); choose one with --gpu");
  }
  in.gpu = joined(gpus);
}

void read_vidur_compute(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "vidur-compute";
  // The columns of microsoft/vidur's mlp.csv (@ 7d47513): five statistics of each operator's
  // time, then the model and the point.
  std::vector<std::string> known;
  for (const char* op : {"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
                         "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"}) {
    add_time_stats(known, op);
  }
  for (const char* c : {"n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
                        "num_tensor_parallel_workers"}) {
    known.emplace_back(c);
  }
  t.require_known(known, "Vidur compute");
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
  std::vector<std::string> statistics;
  for (const auto& c : known) {
    // The medians fitted are checked as times; every other statistic as a number.
    const auto is_median = [&c](const Op& op) { return c == std::string("time_stats.") + op.name + ".median"; };
    const bool fitted = std::any_of(std::begin(gemms), std::end(gemms), is_median) ||
                        std::any_of(std::begin(norms), std::end(norms), is_median);
    if (!fitted && (c.rfind("time_stats.", 0) == 0 || c == "vocab_size")) statistics.push_back(c);
  }
  const std::vector<std::size_t> other_numbers = t.present(statistics);
  for (const CsvRow& r : t.rows()) {
    t.check_non_negative(r, other_numbers);
    const std::int64_t m = t.integer(r, c_tokens, kTokens);
    const std::int64_t tp = t.integer(r, c_tp, kGpus);
    const std::int64_t embd = t.integer(r, c_embd, kFeatures);
    const std::int64_t ffn = t.integer(r, c_ffn, kFeatures);
    const std::int64_t heads = t.integer(r, c_heads, kHeads);
    const std::int64_t kv = t.integer(r, c_kv, kHeads);
    const std::string gated = lower(t.text(r, c_gated));
    if (gated != "true" && gated != "false") {
      t.fail(r, c_gated, "expected True or False, got \"" + shown(t.text(r, c_gated)) + "\"");
    }
    // Grouped-query attention: the query heads split evenly over the KV heads.
    if (embd % heads != 0 || heads % kv != 0 || heads % tp != 0 || kv % tp != 0 || ffn % tp != 0) {
      throw MeasurementError(in.path, t.where(r),
                             "the model's sizes (n_embd " + std::to_string(embd) + ", n_head " + std::to_string(heads) +
                                 ", n_kv_head " + std::to_string(kv) + ", n_expanded_embd " + std::to_string(ffn) +
                                 ") do not divide by its heads, its KV heads or by TP " + std::to_string(tp));
    }
    const std::int64_t head_dim = embd / heads;
    // Y[m x n] = X[m x k] W[k x n] with the column-parallel (QKV, up) and row-parallel (O, down)
    // split of Megatron-style tensor parallelism. The bounds keep these products far below 2^63;
    // they are checked all the same, so that a change of bound cannot make them overflow.
    const auto product = [&](std::int64_t a, std::int64_t b) {
      const auto p = checked_product(a, b);
      if (!p) throw MeasurementError(in.path, t.where(r), "the model's sizes overflow a 64-bit integer");
      return *p;
    };
    const std::int64_t shapes[4][2] = {{product(heads + 2 * kv, head_dim) / tp, embd},
                                       {embd, product(heads, head_dim) / tp},
                                       {product(gated == "true" ? 2 : 1, ffn) / tp, embd},
                                       {embd, ffn / tp}};
    for (int g = 0; g < 4; ++g) {
      out.gemm.push_back({GemmShape{m, shapes[g][0], shapes[g][1], DType::fp16}, t.seconds_from_ms(r, gemms[g].col)});
      ++in.used["gemm"];
    }
    // Norms do not shard with TP: the same kernel is in every TP row; keep the TP = 1 rows.
    for (const Op& n : norms) {
      if (tp == 1) {
        out.norm.push_back({NormShape{m, embd, DType::fp16, NormKind::rms}, t.seconds_from_ms(r, n.col)});
        ++in.used["norm"];
      } else {
        ++in.skipped["norm rows with TP > 1 (the same kernel as TP 1)"];
      }
    }
  }
}

void read_vidur_network(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "vidur-network";
  const bool allreduce = t.has("time_stats.all_reduce.median");
  const std::string op = allreduce ? "all_reduce" : "send_recv";
  // The columns of microsoft/vidur's network tables (@ 7d47513): the pandas index (no name), the
  // five statistics of one collective's time, then the point.
  std::vector<std::string> known{""};
  add_time_stats(known, op);
  for (const char* c : {"rank", "num_workers", "size", "collective", "devices_per_node", "max_devices_per_node"}) {
    known.emplace_back(c);
  }
  t.require_known(known, "Vidur " + op);
  in.gpu = vidur_gpu(in.path, "network_");
  in.date = "not recorded (microsoft/vidur profiling data)";
  in.environment = "NCCL kernel times from the PyTorch profiler; Vidur records no NCCL or driver version";
  if (!gpu_matches(in.gpu, o)) return;
  const std::size_t c_time = t.column("time_stats." + op + ".median");
  const std::size_t c_workers = t.column("num_workers");
  const std::size_t c_size = t.column("size");
  const std::size_t c_dpn = t.column("devices_per_node");
  const std::size_t c_collective = t.column("collective");
  const std::size_t c_max_dpn = t.column("max_devices_per_node");
  std::vector<std::string> statistics{"", "rank"};
  add_time_stats(statistics, op);
  std::erase(statistics, "time_stats." + op + ".median");  // the time fitted, checked as one
  const std::vector<std::size_t> other_numbers = t.present(statistics);
  for (const CsvRow& r : t.rows()) {
    t.check_non_negative(r, other_numbers);
    if (t.text(r, c_collective) != op) {
      t.fail(r, c_collective, "expected " + op + " (the table's time column), got \"" + shown(t.text(r, c_collective)) + "\"");
    }
    const std::int64_t workers = t.integer(r, c_workers, kCollectiveGpus);
    const std::int64_t per_node = t.integer(r, c_dpn, kGpus);
    if (per_node > t.integer(r, c_max_dpn, kGpus)) {
      t.fail(r, c_dpn, "more devices per node than the row's max_devices_per_node (" + t.text(r, c_max_dpn) + ")");
    }
    const std::int64_t bytes = t.integer(r, c_size, kBytes);
    const double seconds = t.seconds_from_ms(r, c_time);
    if (!allreduce && workers != 2) t.fail(r, c_workers, "a send_recv row must have 2 workers");
    if (per_node != workers) {
      ++in.skipped["rows spanning nodes (the fit covers one node)"];
      continue;
    }
    if (workers > o.gpus_per_node) {
      ++in.skipped["rows over more GPUs than a node of the base hardware"];
      continue;
    }
    const CollectivePoint p{static_cast<int>(workers), static_cast<double>(bytes), seconds};
    if (allreduce) {
      out.allreduce.push_back(p);
      ++in.used["allreduce"];
    } else {
      out.p2p.push_back(p);
      ++in.used["p2p"];
    }
  }
}

// {"M": 4096, "dtype": "torch.float32", "eps": 1e-06} -> M and the dtype.
void read_liger_norm(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "liger-norm";
  // The columns of linkedin/Liger-Kernel's benchmark/data/all_benchmark_data.csv (@ ead96b6).
  t.require_known({"kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
                   "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str",
                   "gpu_name", "timestamp", "liger_version"},
                  "Liger-Kernel benchmark");
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
  const std::vector<std::size_t> other_numbers = t.present({"y_value_20", "y_value_80"});
  for (const CsvRow& r : t.rows()) {
    t.check_non_negative(r, other_numbers);
    const std::string& kernel = t.text(r, c_kernel);
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    if (kernel != "rms_norm" && kernel != "layer_norm") {
      ++in.skipped["other kernels (fused-add and Megatron variants, unknown dtype or extra traffic)"];
      continue;
    }
    if (t.text(r, c_provider) != "liger" || t.text(r, c_mode) != "forward" || t.text(r, c_metric) != "speed") {
      ++in.skipped["other providers, backward passes and memory rows"];
      continue;
    }
    if (t.text(r, c_unit) != "ms") t.fail(r, c_unit, "expected ms, got \"" + shown(t.text(r, c_unit)) + "\"");
    nlohmann::json extra;
    try {
      extra = parse_json_text(t.text(r, c_extra), in.path);
    } catch (const ConfigError& e) {
      t.fail(r, c_extra, "not JSON: " + e.message());
    }
    const auto m = extra.is_object() ? extra.find("M") : extra.end();
    const auto dt = extra.is_object() ? extra.find("dtype") : extra.end();
    if (m == extra.end() || !m->is_number_unsigned() || m->get<std::uint64_t>() < static_cast<std::uint64_t>(kTokens.min) ||
        m->get<std::uint64_t>() > static_cast<std::uint64_t>(kTokens.max) || dt == extra.end() || !dt->is_string()) {
      t.fail(r, c_extra, "expected an object with \"M\", " + range_text(kTokens) + ", and a \"dtype\" string");
    }
    const auto tokens = static_cast<std::int64_t>(m->get<std::uint64_t>());
    const std::string torch_dtype = dt->get<std::string>();
    DType dtype = DType::fp32;
    if (torch_dtype == "torch.float32") {
      dtype = DType::fp32;
    } else if (torch_dtype == "torch.bfloat16") {
      dtype = DType::bf16;
    } else if (torch_dtype == "torch.float16") {
      dtype = DType::fp16;
    } else {
      t.fail(r, c_extra, "unknown dtype \"" + shown(torch_dtype) + "\" (expected torch.float32, torch.bfloat16 or "
                         "torch.float16)");
    }
    const NormShape shape{tokens, t.integer(r, c_x, kFeatures), dtype,
                          kernel == "rms_norm" ? NormKind::rms : NormKind::layer};
    out.norm.push_back({shape, t.seconds_from_ms(r, c_y)});
    ++in.used["norm"];
    gpus.insert(t.text(r, c_gpu));
    dates.insert(t.text(r, c_time));
    versions.insert(t.text(r, c_version));
  }
  one_gpu(gpus, in);
  in.date = dates.empty() ? "not recorded" : joined(dates);
  in.environment = "triton do_bench median (CUDA events); Liger-Kernel " + joined(versions);
}

// --- DeepSeek transcriptions (calibration/data/public/deepseek/) --------------------------------
//
// Hand-typed tables of published numbers: each row is checked against the arithmetic its header
// states (a TFLOPS figure against its derived time, a GB/s figure against its bytes), so a typing
// error is an error here rather than a bad point in a fit.

// Kernels in one grouped GEMM (MoE experts on one GPU): 2^16, far above any model's experts.
constexpr IntRange kGroups{1, std::int64_t{1} << 16, "groups"};
// Published rates: up to 1e6 TFLOP/s and 1e6 GB/s, far above any GPU (a unit error otherwise).
constexpr double kMaxTflops = 1e6;
constexpr double kMaxGbps = 1e6;
// A derived column must agree with the figure it was derived from to within this fraction: the
// published figures have 3-4 significant digits (rounding: at most 0.5% of 100-999).
constexpr double kDerivedTolerance = 0.01;
// A GB/s figure of 2-3 significant digits (DeepEP prints 39-158 GB/s) rounds by up to 1.3%.
constexpr double kRoundedRateTolerance = 0.03;

// A number > 0 and <= max, from a cell.
double positive_number(const CsvTable& t, const CsvRow& r, std::size_t col, double max, const char* unit) {
  const double v = t.number(r, col);
  if (!(v > 0.0 && v <= max)) {
    t.fail(r, col, "expected a number > 0 and at most " + check::number(max) + " " + unit + ", got \"" + shown(t.text(r, col)) + "\"");
  }
  return v;
}

// A time derived from a rate, within [kMinSeconds, kMaxSeconds].
double checked_time(const CsvTable& t, const CsvRow& r, std::size_t col, double seconds) {
  if (!(seconds >= kMinSeconds && seconds <= kMaxSeconds)) {
    t.fail(r, col, "gives a kernel time of " + check::number(seconds) + " s, outside 1 ns to 1 hour");
  }
  return seconds;
}

// `derived` must agree with `expected` within `tolerance` (relative).
void check_agrees(const CsvTable& t, const CsvRow& r, std::size_t col, double derived, double expected,
                  double tolerance, const std::string& what) {
  if (!(std::abs(derived - expected) <= tolerance * std::abs(expected))) {
    t.fail(r, col, "is " + shown(t.text(r, col)) + " but " + what + " gives " + check::number(expected) + " (more than " +
                       check::number(tolerance * 100.0) + "% apart: a typing error?)");
  }
}

// One of `allowed`, else an error with a "did you mean".
std::string choice(const CsvTable& t, const CsvRow& r, std::size_t col, const std::vector<std::string>& allowed) {
  const std::string& s = t.text(r, col);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    t.fail(r, col, "unknown value \"" + shown(s) + "\"" + did_you_mean(s, allowed) + " (expected " + quoted_list(allowed) + ")");
  }
  return s;
}

// The README versions of a table, in file order, each in one block of rows; a version that
// reappears after another began is an error (the newest-version rule needs the order).
class VersionBlocks {
 public:
  void see(const CsvTable& t, const CsvRow& r, std::size_t col) {
    const std::string& v = t.text(r, col);
    if (v.empty()) t.fail(r, col, "expected the README commit of the row, got an empty cell");
    if (!order_.empty() && order_.back() == v) return;
    if (std::find(order_.begin(), order_.end(), v) != order_.end()) {
      t.fail(r, col, "version " + shown(v) + " reappears after " + shown(order_.back()) +
                         ": list each README version as one block of rows, oldest first");
    }
    order_.push_back(v);
  }
  [[nodiscard]] std::string text() const {
    std::string s;
    for (const auto& v : order_) s += (s.empty() ? "" : ", ") + v;
    return s;
  }

 private:
  std::vector<std::string> order_;
};

// Keeps, for each key, the row read last (the newest README version); counts the others.
template <class Key, class Row>
class Newest {
 public:
  void add(const Key& k, Row row) {
    const auto [it, fresh] = index_.emplace(k, rows_.size());
    if (fresh) {
      rows_.push_back(std::move(row));
    } else {
      rows_[it->second] = std::move(row);
      ++superseded_;
    }
  }
  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }
  [[nodiscard]] std::size_t superseded() const { return superseded_; }

 private:
  std::map<Key, std::size_t> index_;
  std::vector<Row> rows_;
  std::size_t superseded_ = 0;
};

// Appends the rows `newest` kept to `to` and counts them as used by `model`.
template <class Key, class Row>
void use_newest(const Newest<Key, Row>& newest, std::vector<Row>& to, const char* model, MeasurementInput& in) {
  for (const auto& p : newest.rows()) to.push_back(p);
  if (!newest.rows().empty()) in.used[model] = newest.rows().size();
}

constexpr const char* kSuperseded = "rows superseded by a later README version of the same shape (the newest is used)";

// deepseek-ai/DeepGEMM README "Performance" tables (deepgemm_h800_fp8_gemm.csv).
void read_deepgemm(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "deepgemm";
  t.require_known({"readme_commit", "gpu", "kind", "groups", "m", "n", "k", "tflops", "gbps", "us_derived",
                   "speedup_vs_cutlass36"},
                  "DeepGEMM");
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_kind = t.column("kind");
  const std::size_t c_groups = t.column("groups");
  const std::size_t c_m = t.column("m");
  const std::size_t c_n = t.column("n");
  const std::size_t c_k = t.column("k");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  const std::size_t c_us = t.column("us_derived");
  const std::size_t c_speedup = t.column("speedup_vs_cutlass36");
  VersionBlocks versions;
  std::set<std::string> gpus;
  struct Row {
    bool grouped;
    std::int64_t groups, m, n, k;
    double seconds;
  };
  Newest<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, Row> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string kind = choice(t, r, c_kind, {"normal", "grouped-contiguous", "grouped-masked"});
    const std::int64_t g = t.integer(r, c_groups, kGroups);
    if (kind == "normal" && g != 1) t.fail(r, c_groups, "a normal GEMM has 1 group, got " + shown(t.text(r, c_groups)));
    const std::int64_t m = t.integer(r, c_m, kTokens);
    const std::int64_t n = t.integer(r, c_n, kFeatures);
    const std::int64_t k = t.integer(r, c_k, kFeatures);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    const double gbps = positive_number(t, r, c_gbps, kMaxGbps, "GB/s");
    const double us = positive_number(t, r, c_us, kMaxSeconds * 1e6, "us");
    // The speed-up over CUTLASS 3.6 is recorded, not used: "1.4x".
    const std::string& speedup = t.text(r, c_speedup);
    double x = 0.0;
    const auto [end, ec] = std::from_chars(speedup.data(), speedup.data() + speedup.size(), x);
    if (ec != std::errc() || end != speedup.data() + speedup.size() - 1 || *end != 'x' || !(x > 0.0)) {
      t.fail(r, c_speedup, "expected a speed-up such as 1.4x, got \"" + shown(speedup) + "\"");
    }
    // The header's arithmetic: FLOP = 2 groups m n k; bytes = groups (m k + k n + 2 m n).
    const double gd = static_cast<double>(g);
    const double md = static_cast<double>(m);
    const double nd = static_cast<double>(n);
    const double kd = static_cast<double>(k);
    const double seconds = checked_time(t, r, c_tflops, 2.0 * gd * md * nd * kd / (tflops * 1e12));
    check_agrees(t, r, c_us, us * 1e-6, seconds, kDerivedTolerance, "2 groups m n k / TFLOPS");
    check_agrees(t, r, c_gbps, gbps, gd * (md * kd + kd * nd + 2.0 * md * nd) / seconds / 1e9, kDerivedTolerance,
                 "groups (m k + k n + 2 m n) / time");
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    gpus.insert(t.text(r, c_gpu));
    newest.add({kind, g, m, n, k}, Row{kind != "normal", g, m, n, k, seconds});
  }
  for (const Row& row : newest.rows()) {
    if (row.grouped) {
      // Every group has the same rows in DeepGEMM's benchmark (masked rows: masked_m = m).
      out.grouped_gemm.push_back({GroupedGemmShape{row.groups, row.groups * row.m, row.n, row.k, DType::fp8}, row.seconds});
      ++in.used["grouped-gemm"];
    } else {
      out.gemm.push_back({GemmShape{row.m, row.n, row.k, DType::fp8}, row.seconds});
      ++in.used["gemm"];
    }
  }
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  one_gpu(gpus, in);
  in.date = "DeepGEMM README versions " + versions.text() + " (dates in the file's header; the newest version of each shape is used)";
  in.environment = "DeepGEMM bench_kineto kernel times as TFLOPS, transcribed (the file's header names NVCC and method)";
}

// DeepSeek-V3 MLA sizes FlashMLA's figures are for: kv_lora_rank 512 + rope 64, 656-byte FP8 entries
// (the file's header: 512 e4m3 + 4 fp32 scales + 64 bf16 RoPE).
constexpr std::int64_t kMlaQkDim = 576;
constexpr std::int64_t kMlaVDim = 512;
constexpr double kMlaFp8EntryBytes = 656.0;

// deepseek-ai/FlashMLA README and FP8 sparse deep-dive figures (flashmla_h800.csv).
void read_flashmla(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "flashmla";
  t.require_known({"gpu", "kernel", "regime", "batch", "h_q", "s_q", "topk", "tflops", "gbps", "us_derived", "cuda",
                   "commit"},
                  "FlashMLA");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_kernel = t.column("kernel");
  const std::size_t c_regime = t.column("regime");
  const std::size_t c_batch = t.column("batch");
  const std::size_t c_hq = t.column("h_q");
  const std::size_t c_sq = t.column("s_q");
  const std::size_t c_topk = t.column("topk");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  const std::size_t c_us = t.column("us_derived");
  std::set<std::string> gpus;
  std::set<std::string> commits;
  Newest<std::string, KernelRatePoint> rates;  // by regime: the last figure (newest README/CUDA)
  Newest<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, SparseMlaPoint> sparse;
  for (const CsvRow& r : t.rows()) {
    const std::string kernel = choice(t, r, c_kernel, {"dense-bf16", "sparse-fp8kv", "sparse-fp8kv-no-crossover"});
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    gpus.insert(t.text(r, c_gpu));
    commits.insert(t.text(r, t.column("commit")));
    if (kernel == "dense-bf16") {
      const std::string regime = choice(t, r, c_regime, {"memory-bound", "compute-bound"});
      const bool compute = regime == "compute-bound";
      const std::size_t c_rate = compute ? c_tflops : c_gbps;
      const double rate = positive_number(t, r, c_rate, compute ? kMaxTflops : kMaxGbps, compute ? "TFLOPS" : "GB/s");
      rates.add(regime, KernelRatePoint{compute, rate * (compute ? 1e12 : 1e9)});
      continue;
    }
    if (kernel == "sparse-fp8kv-no-crossover") {
      ++in.skipped["sparse kernel without its crossover optimisation (an ablation, not the shipped kernel)"];
      continue;
    }
    const std::int64_t b = t.integer(r, c_batch, kTokens);
    const std::int64_t h = t.integer(r, c_hq, kHeads);
    const std::int64_t sq = t.integer(r, c_sq, kHeads);
    const std::int64_t topk = t.integer(r, c_topk, kTokens);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    // FLOP as FlashMLA counts them (the header): 2 b s_q h_q topk (576 + 512).
    const double flops = 2.0 * static_cast<double>(b) * static_cast<double>(sq) * static_cast<double>(h) *
                         static_cast<double>(topk) * static_cast<double>(kMlaQkDim + kMlaVDim);
    const double seconds = checked_time(t, r, c_tflops, flops / (tflops * 1e12));
    check_agrees(t, r, c_us, positive_number(t, r, c_us, kMaxSeconds * 1e6, "us") * 1e-6, seconds, kDerivedTolerance,
                 "2 b s_q h_q topk 1088 / TFLOPS");
    sparse.add({b, h, sq, topk}, SparseMlaPoint{MlaShape{b, sq, h, kMlaQkDim, kMlaVDim, Bytes(kMlaFp8EntryBytes)}, topk, seconds});
  }
  use_newest(rates, out.attention_rates, "attention", in);
  use_newest(sparse, out.sparse_attention, "sparse-attention", in);
  if (rates.superseded() + sparse.superseded() > 0) {
    in.skipped["figures superseded by a later README version or CUDA release (the last row is used)"] =
        rates.superseded() + sparse.superseded();
  }
  one_gpu(gpus, in);
  in.date = "FlashMLA README/doc versions " + joined(commits) + " (dates in the file's header)";
  in.environment = "published TFLOPS and GB/s figures, transcribed; H800 SXM5, CUDA 12.8 for the rows used";
}

// Third-party runs of FlashMLA's dense decode test (tests/test_flash_mla.py) on H100 and H20
// (flashmla_h100_h20_dense.csv): BF16 cache, h_kv 1, d 576, dv 512, b requests of mean_s_k tokens.
// The file prints "<ms> ms, <TFLOPS>, <GB/s>" with FLOP = 2 b s_q h_q s_k (576 + 512) (useful FLOP,
// before the kernel's 64-row padding) and bytes = (b s_k 576 + b s_q h_q (576 + 512)) 2; TFLOPS and
// GB/s are whole numbers, so they must agree with ms within 3%. Rows with variable lengths (varlen
// True: each s_k drawn from normal(mean, mean / 2), the draw not recorded) are skipped: the model
// prices equal contexts and the file does not say the total.
constexpr double kMlaBf16EntryBytes = 1152.0;  // (512 + 64) x 2 B
constexpr double kPrintedRateTolerance = 0.03;

void read_flashmla_dense(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "flashmla-dense";
  t.require_known({"gpu", "batch", "s_q", "mean_s_k", "h_q", "varlen", "ms", "tflops", "gbps"}, "FlashMLA dense test");
  const std::size_t c_gpu = t.column("gpu");
  const std::size_t c_batch = t.column("batch");
  const std::size_t c_sq = t.column("s_q");
  const std::size_t c_sk = t.column("mean_s_k");
  const std::size_t c_hq = t.column("h_q");
  const std::size_t c_varlen = t.column("varlen");
  const std::size_t c_ms = t.column("ms");
  const std::size_t c_tflops = t.column("tflops");
  const std::size_t c_gbps = t.column("gbps");
  std::set<std::string> gpus;
  for (const CsvRow& r : t.rows()) {
    const bool varlen = choice(t, r, c_varlen, {"False", "True"}) == "True";
    if (!keep_gpu(t.text(r, c_gpu), o, in)) continue;
    const std::int64_t b = t.integer(r, c_batch, kTokens);
    const std::int64_t sq = t.integer(r, c_sq, kHeads);
    const std::int64_t sk = t.integer(r, c_sk, kTokens);
    const std::int64_t h = t.integer(r, c_hq, kHeads);
    const double seconds = checked_time(t, r, c_ms, positive_number(t, r, c_ms, kMaxSeconds * 1e3, "ms") * 1e-3);
    const double tflops = positive_number(t, r, c_tflops, kMaxTflops, "TFLOPS");
    const double gbps = positive_number(t, r, c_gbps, kMaxGbps, "GB/s");
    if (varlen) {
      ++in.skipped["variable-length rows (the drawn contexts are not recorded; the model prices equal ones)"];
      continue;
    }
    gpus.insert(t.text(r, c_gpu));
    const double bd = static_cast<double>(b);
    const double qh = static_cast<double>(sq) * static_cast<double>(h);
    const double flops = 2.0 * bd * qh * static_cast<double>(sk) * static_cast<double>(kMlaQkDim + kMlaVDim);
    const double bytes = (bd * static_cast<double>(sk) * static_cast<double>(kMlaQkDim) +
                          bd * qh * static_cast<double>(kMlaQkDim + kMlaVDim)) * 2.0;
    check_agrees(t, r, c_tflops, tflops, flops / seconds / 1e12, kPrintedRateTolerance, "2 b s_q h_q s_k 1088 / ms");
    check_agrees(t, r, c_gbps, gbps, bytes / seconds / 1e9, kPrintedRateTolerance, "(b s_k 576 + b s_q h_q 1088) 2 / ms");
    MlaShape shape{b, sq, h, kMlaQkDim, kMlaVDim, Bytes(kMlaBf16EntryBytes)};
    shape.row_tile = find_mla_kernel("flashmla")->row_tile;
    out.dense_attention.push_back(DenseMlaPoint{shape, sk, seconds});
    ++in.used["dense-attention"];
  }
  one_gpu(gpus, in);
  in.date = "third-party runs of February 2025 (the file's header: achatbot PR 123 on Modal H100, FlashMLA issue 30 on H20)";
  in.environment = "FlashMLA's first release; H100: pytorch 2.6.0 + CUDA 12.6; H20: not recorded";
}

// DeepEP's low-latency test (deepseek-ai/DeepEP tests/test_low_latency.py, hidden 7168, top-8) counts
// one token copy as 7408 bytes dispatched (FP8 with scales) and 14336 bytes combined (BF16); the
// file's header records these.
constexpr double kDeepEpDispatchBytes = 7408.0;
constexpr double kDeepEpCombineBytes = 14336.0;
constexpr std::int64_t kDeepEpTopk = 8;
// DeepEP's README measured on H800 with one CX7 400 Gb/s NIC per GPU; the tables have no GPU column.
constexpr const char* kDeepEpGpu = "H800 (DeepEP README: H800 + CX7 InfiniBand 400 Gb/s per GPU)";

void read_deepep_low_latency(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "deepep-ll";
  t.require_known({"readme_commit", "kernels", "ep", "tokens_per_rank", "dispatch_us", "dispatch_gbps", "combine_us",
                   "combine_gbps"},
                  "DeepEP low-latency");
  in.gpu = kDeepEpGpu;
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_kernels = t.column("kernels");
  const std::size_t c_ep = t.column("ep");
  const std::size_t c_tokens = t.column("tokens_per_rank");
  const struct {
    std::size_t us, gbps;
    double bytes_per_copy;
  } ops[2] = {{t.column("dispatch_us"), t.column("dispatch_gbps"), kDeepEpDispatchBytes},
              {t.column("combine_us"), t.column("combine_gbps"), kDeepEpCombineBytes}};
  VersionBlocks versions;
  Newest<std::tuple<std::int64_t, std::int64_t, int>, ExpertAlltoallPoint> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string kernels = choice(t, r, c_kernels, {"low-latency pure RDMA", "low-latency with NVLink"});
    const std::int64_t ep = t.integer(r, c_ep, kCollectiveGpus);
    const std::int64_t tokens = t.integer(r, c_tokens, kTokens);
    if (ep % o.gpus_per_node != 0 && o.gpus_per_node % ep != 0) {
      t.fail(r, c_ep, "EP " + std::to_string(ep) + " neither divides nor is a multiple of the base's " +
                          std::to_string(o.gpus_per_node) + " GPUs per node");
    }
    for (int op = 0; op < 2; ++op) {
      const double bytes = static_cast<double>(tokens * kDeepEpTopk) * ops[op].bytes_per_copy;
      const double seconds = positive_number(t, r, ops[op].us, kMaxSeconds * 1e6, "us") * 1e-6;
      (void)checked_time(t, r, ops[op].us, seconds);
      check_agrees(t, r, ops[op].gbps, positive_number(t, r, ops[op].gbps, kMaxGbps, "GB/s"), bytes / seconds / 1e9,
                   kRoundedRateTolerance, "tokens x 8 copies x bytes per copy / time");
      if (kernels != "low-latency with NVLink") continue;
      if (!gpu_matches(in.gpu, o)) continue;
      newest.add({ep, tokens, op}, ExpertAlltoallPoint{static_cast<int>(ep), o.gpus_per_node, bytes, seconds});
    }
    if (kernels != "low-latency with NVLink") {
      ++in.skipped["pure-RDMA rows (the older kernels; the engine carries traffic within a node over NVLink)"];
    } else if (!gpu_matches(in.gpu, o)) {
      ++in.skipped["rows of another GPU"];
    }
  }
  use_newest(newest, out.expert_alltoall, "alltoall", in);
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  in.date = "DeepEP README versions " + versions.text() + " (dates in the file's header)";
  in.environment = "DeepEP tests/test_low_latency.py, 128 tokens per rank, hidden 7168, top-8, FP8 dispatch, BF16 combine";
}

void read_deepep_normal(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "deepep-normal";
  t.require_known({"readme_commit", "type", "ep", "tokens_per_batch", "dispatch_gbps", "combine_gbps"}, "DeepEP normal");
  in.gpu = kDeepEpGpu;
  const std::size_t c_commit = t.column("readme_commit");
  const std::size_t c_type = t.column("type");
  const std::size_t c_ep = t.column("ep");
  const std::size_t c_tokens = t.column("tokens_per_batch");
  const std::size_t c_rate[2] = {t.column("dispatch_gbps"), t.column("combine_gbps")};
  VersionBlocks versions;
  Newest<std::tuple<std::string, std::int64_t, int>, MeasurementSet::LinkRatePoint> newest;
  for (const CsvRow& r : t.rows()) {
    versions.see(t, r, c_commit);
    const std::string type = choice(t, r, c_type, {"intranode-NVLink", "internode-RDMA"});
    const std::int64_t ep = t.integer(r, c_ep, kCollectiveGpus);
    (void)t.integer(r, c_tokens, kTokens);
    for (int op = 0; op < 2; ++op) {
      const double rate = positive_number(t, r, c_rate[op], kMaxGbps, "GB/s") * 1e9;
      if (gpu_matches(in.gpu, o)) newest.add({type, ep, op}, {type == "intranode-NVLink", static_cast<int>(ep), rate});
    }
  }
  use_newest(newest, out.alltoall_normal, "alltoall-normal", in);
  if (newest.superseded() > 0) in.skipped[kSuperseded] = newest.superseded();
  in.date = "DeepEP README versions " + versions.text() + " (dates in the file's header)";
  in.environment = "DeepEP normal kernels, 4096 tokens per batch, bottleneck bandwidth as published";
}

// vLLM's KV-offloading blog (pcie_h100_block_sweep.csv): each point moves 1000 blocks.
constexpr std::int64_t kSweepBlocks = 1000;
constexpr const char* kSweepGpu = "H100 80GB HBM3 (PCIe Gen5, Xeon Sapphire Rapids host; vLLM blog)";
constexpr IntRange kBlockKib{1, std::int64_t{1} << 20, "KiB"};

void read_pcie_sweep(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
  in.format = "pcie-sweep";
  t.require_known({"block_kib", "h2d_dma_gbps", "h2d_kernel_gbps", "d2h_dma_gbps", "d2h_kernel_gbps"}, "PCIe block sweep");
  in.gpu = kSweepGpu;
  in.date = "2026-01-08 (the blog post; the file's header)";
  in.environment = "CUDA 12.9; one cudaMemcpyAsync per block (dma) vs a UVA copy kernel, read off charts (+-3% of full scale)";
  const std::size_t c_kib = t.column("block_kib");
  const struct {
    CopyDirection dir;
    std::size_t dma, kernel;
  } cols[2] = {{CopyDirection::h2d, t.column("h2d_dma_gbps"), t.column("h2d_kernel_gbps")},
               {CopyDirection::d2h, t.column("d2h_dma_gbps"), t.column("d2h_kernel_gbps")}};
  for (const CsvRow& r : t.rows()) {
    const double bytes = static_cast<double>(t.integer(r, c_kib, kBlockKib) * 1024 * kSweepBlocks);
    for (const auto& c : cols) {
      const double dma = positive_number(t, r, c.dma, kMaxGbps, "GB/s") * 1e9;
      const double kernel = positive_number(t, r, c.kernel, kMaxGbps, "GB/s") * 1e9;
      const double dma_s = checked_time(t, r, c.dma, bytes / dma);
      const double kernel_s = checked_time(t, r, c.kernel, bytes / kernel);
      if (!gpu_matches(in.gpu, o)) continue;
      out.copy.push_back({c.dir, bytes, kSweepBlocks, dma_s});
      out.gather.push_back({c.dir, bytes, kernel_s});
      ++in.used["copy"];
      ++in.used["gather"];
    }
  }
}

// --- ess-bench JSON (kernels/README.md, "The measurements JSON") --------------------------------

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
  in.format = "ess-bench";
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

// Reads one file's text into `set` (its points appended, its input recorded).
void read_one(std::string_view text, const std::string& path, const ReadOptions& options, MeasurementSet& set) {
  MeasurementInput in;
  in.path = path;
  in.sha256 = sha256_hex(text);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw MeasurementError(path, "", "the file is empty");
  MeasurementSet part;
  if (text[first] == '{') {
    nlohmann::json doc;
    try {
      // Duplicate keys, nesting deeper than kMaxJsonDepth and numbers beyond a double are errors.
      doc = parse_json_text(text, path);
    } catch (const ConfigError& e) {
      throw MeasurementError(path, e.pointer(), e.message());
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
    } else if (t.has("speedup_vs_cutlass36")) {
      read_deepgemm(t, in, part, options);
    } else if (t.has("h_q") && t.has("topk")) {
      read_flashmla(t, in, part, options);
    } else if (t.has("h_q") && t.has("mean_s_k")) {
      read_flashmla_dense(t, in, part, options);
    } else if (t.has("dispatch_us")) {
      read_deepep_low_latency(t, in, part, options);
    } else if (t.has("dispatch_gbps") && t.has("tokens_per_batch")) {
      read_deepep_normal(t, in, part, options);
    } else if (t.has("block_kib")) {
      read_pcie_sweep(t, in, part, options);
    } else {
      throw MeasurementError(path, "line " + std::to_string(t.header_line()),
                             "unrecognised table: expected ess-bench JSON, a Vidur compute or network CSV, the "
                             "Liger-Kernel benchmark CSV or one of the DeepSeek tables in data/public/deepseek/ "
                             "(see calibration/README.md)");
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
  append(set.grouped_gemm, part.grouped_gemm);
  append(set.sparse_attention, part.sparse_attention);
  append(set.attention_rates, part.attention_rates);
  append(set.dense_attention, part.dense_attention);
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
