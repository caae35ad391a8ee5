// microsoft/vidur profiling tables: compute (mlp.csv) and network (all_reduce, send_recv).
#include "calibration/measurement_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>
#include <filesystem>

#include "calibration/format_helpers.h"

namespace ess::measurement {

namespace {

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

void read_vidur_compute(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
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

}  // namespace

extern const CsvFormat kVidurComputeFormat{
    "vidur-compute", "a Vidur compute CSV",
    [](const CsvTable& t) { return t.has("time_stats.attn_pre_proj.median"); }, read_vidur_compute};

extern const CsvFormat kVidurNetworkFormat{
    "vidur-network", "a Vidur network CSV",
    [](const CsvTable& t) {
      return t.has("time_stats.all_reduce.median") || t.has("time_stats.send_recv.median");
    },
    read_vidur_network};

}  // namespace ess::measurement
