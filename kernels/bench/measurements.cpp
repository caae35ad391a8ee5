#include "kernels/bench/measurements.h"

#include <cstdio>
#include <map>
#include <stdexcept>

#include "kernels/bench/json_writer.h"

namespace ess::bench {

namespace {

Sample make(std::string kind, std::vector<std::pair<std::string, FieldValue>> fields,
            const Stats& stats) {
  return Sample{std::move(kind), std::move(fields), {{"stats", stats}}};
}

FieldValue text(std::string_view s) { return FieldValue(std::string(s)); }

void write_stats(JsonWriter& w, const Stats& s) {
  w.begin_object(Layout::inline_);
  w.key("repetitions");
  w.integer(s.repetitions);
  w.key("median_s");
  w.number(s.median_s);
  w.key("mean_s");
  w.number(s.mean_s);
  w.key("min_s");
  w.number(s.min_s);
  w.key("max_s");
  w.number(s.max_s);
  w.key("p10_s");
  w.number(s.p10_s);
  w.key("p90_s");
  w.number(s.p90_s);
  w.key("std_s");
  w.number(s.std_s);
  w.end_object();
}

void member(JsonWriter& w, std::string_view key, std::string_view value) {
  w.key(key);
  w.string(value);
}

void member(JsonWriter& w, std::string_view key, std::int64_t value) {
  w.key(key);
  w.integer(value);
}

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string format_seconds(double s) {
  if (s < 1e-3) return printf_string("%.3f us", s * 1e6);
  if (s < 1.0) return printf_string("%.3f ms", s * 1e3);
  return printf_string("%.3f s", s);
}

std::string format_rate(double bytes, double seconds) {
  return printf_string("%.1f GB/s", seconds > 0.0 ? bytes / seconds / 1e9 : 0.0);
}

// One summary line candidate: the sample with the highest score in its (kind, label) group wins.
struct Line {
  std::string kind;
  std::string label;
  double score = 0.0;
  std::string text;
};

Line summarise(const Sample& s) {
  const double median = s.statistics().median_s;
  const auto i = [&s](std::string_view name) { return static_cast<double>(s.integer(name)); };
  Line l{s.kind, "", 0.0, ""};
  if (s.kind == "gemm") {
    const double flops = 2.0 * i("m") * i("n") * i("k");
    l.label = s.text("dtype");
    l.score = median > 0.0 ? flops / median : 0.0;
    l.text = "best " + printf_string("%.1f TFLOP/s", l.score / 1e12) + " at m=" +
             std::to_string(s.integer("m")) + " n=" + std::to_string(s.integer("n")) +
             " k=" + std::to_string(s.integer("k")) + " (" + format_seconds(median) + ")";
  } else if (s.kind == "norm") {
    const double elements = i("tokens") * i("hidden");
    l.label = s.text("norm");
    l.score = elements;
    // bf16 read once and written once.
    l.text = std::to_string(s.integer("tokens")) + "x" + std::to_string(s.integer("hidden")) +
             ": " + format_seconds(median) + ", " + format_rate(2.0 * 2.0 * elements, median);
  } else if (s.kind == "copy" || s.kind == "d2d" || s.kind == "p2p" || s.kind == "allreduce" ||
             s.kind == "alltoall") {
    if (s.kind == "copy") l.label = s.text("direction") + " " + s.text("host_memory");
    if (s.kind == "p2p") {
      l.label = std::to_string(s.integer("src")) + "->" + std::to_string(s.integer("dst"));
    }
    if (s.kind == "allreduce" || s.kind == "alltoall") {
      l.label = std::to_string(s.integer("gpus")) + " GPUs";
    }
    l.score = i("bytes");
    l.text = std::to_string(s.integer("bytes")) + " B: " + format_seconds(median) + ", " +
             format_rate(i("bytes"), median);
  } else if (s.kind == "gather") {
    l.label = s.text("direction") + " " + s.text("method");
    l.score = i("rows");
    l.text = std::to_string(s.integer("rows")) + " rows: " + format_seconds(median) + ", " +
             format_rate(i("rows") * i("row_bytes"), median);
  } else if (s.kind == "gather_interference") {
    const double alone = s.statistics("alone").median_s;
    l.label = std::to_string(s.integer("rows")) + " rows";
    l.score = i("rows");
    l.text = "GEMM " + format_seconds(alone) + " alone, " + format_seconds(median) +
             " beside the gather (" +
             printf_string("%+.1f%%", alone > 0.0 ? (median / alone - 1.0) * 100.0 : 0.0) + ")";
  }
  return l;
}

}  // namespace

std::int64_t Sample::integer(std::string_view name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) {
      if (const auto* v = std::get_if<std::int64_t>(&value)) return *v;
    }
  }
  throw std::out_of_range(kind + " sample has no integer field " + std::string(name));
}

const std::string& Sample::text(std::string_view name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) {
      if (const auto* v = std::get_if<std::string>(&value)) return *v;
    }
  }
  throw std::out_of_range(kind + " sample has no string field " + std::string(name));
}

const Stats& Sample::statistics(std::string_view name) const {
  for (const auto& [key, value] : stats) {
    if (key == name) return value;
  }
  throw std::out_of_range(kind + " sample has no statistics " + std::string(name));
}

std::string_view to_string(Direction d) { return d == Direction::h2d ? "h2d" : "d2h"; }

std::string_view to_string(CopyDirection d) {
  switch (d) {
    case CopyDirection::h2d: return "h2d";
    case CopyDirection::d2h: return "d2h";
    case CopyDirection::bidirectional: return "bidirectional";
  }
  return "?";
}

std::string_view to_string(HostMemory h) { return h == HostMemory::pinned ? "pinned" : "pageable"; }

Sample gemm_sample(std::int64_t m, std::int64_t n, std::int64_t k, GemmDtype dtype,
                   const Stats& stats) {
  return make("gemm", {{"m", m}, {"n", n}, {"k", k}, {"dtype", text(to_string(dtype))}}, stats);
}

Sample norm_sample(NormKind norm, std::int64_t tokens, std::int64_t hidden, const Stats& stats) {
  return make("norm",
              {{"norm", text(to_string(norm))},
               {"tokens", tokens},
               {"hidden", hidden},
               {"dtype", text("bf16")}},
              stats);
}

Sample copy_sample(CopyDirection direction, HostMemory memory, std::int64_t bytes,
                   const Stats& stats) {
  return make("copy",
              {{"direction", text(to_string(direction))},
               {"host_memory", text(to_string(memory))},
               {"bytes", bytes}},
              stats);
}

Sample gather_sample(Direction direction, GatherMethod method, std::int64_t rows,
                     std::int64_t row_bytes, std::int64_t calls, const Stats& stats) {
  return make("gather",
              {{"direction", text(to_string(direction))},
               {"method", text(to_string(method))},
               {"rows", rows},
               {"row_bytes", row_bytes},
               {"calls", calls}},
              stats);
}

Sample interference_sample(const GemmPoint& gemm, std::int64_t rows, std::int64_t row_bytes,
                           const Stats& alone, const Stats& beside) {
  return Sample{"gather_interference",
                {{"m", gemm.m},
                 {"n", gemm.n},
                 {"k", gemm.k},
                 {"dtype", text("bf16")},
                 {"rows", rows},
                 {"row_bytes", row_bytes}},
                {{"alone", alone}, {"stats", beside}}};
}

Sample d2d_sample(std::int64_t bytes, const Stats& stats) {
  return make("d2d", {{"bytes", bytes}}, stats);
}

Sample p2p_sample(int src, int dst, std::int64_t bytes, const Stats& stats) {
  return make("p2p", {{"src", std::int64_t{src}}, {"dst", std::int64_t{dst}}, {"bytes", bytes}},
              stats);
}

Sample allreduce_sample(int gpus, std::int64_t bytes, const Stats& stats) {
  return make("allreduce", {{"gpus", std::int64_t{gpus}}, {"bytes", bytes}, {"dtype", text("bf16")}},
              stats);
}

Sample alltoall_sample(int gpus, std::int64_t bytes, const Stats& stats) {
  return make("alltoall", {{"gpus", std::int64_t{gpus}}, {"bytes", bytes}, {"dtype", text("bf16")}},
              stats);
}

std::string measurements_json(const Environment& env, std::span<const Sample> samples) {
  JsonWriter w;
  w.begin_object();
  member(w, "schema", kSchema);

  w.key("environment");
  w.begin_object();
  member(w, "tool", env.tool);
  member(w, "date", env.date);
  member(w, "host", env.host);
  member(w, "gpu", env.gpu);
  member(w, "gpu_count", env.gpu_count);
  member(w, "compute_capability", env.compute_capability);
  member(w, "sm_count", env.sm_count);
  member(w, "memory_bytes", env.memory_bytes);
  member(w, "l2_bytes", env.l2_bytes);
  w.key("clocks");
  w.begin_object(Layout::inline_);
  if (env.clocks.sm_mhz) member(w, "sm_mhz", *env.clocks.sm_mhz);
  if (env.clocks.memory_mhz) member(w, "memory_mhz", *env.clocks.memory_mhz);
  w.end_object();
  member(w, "driver", env.driver);
  member(w, "cuda_driver_api", env.cuda_driver_api);
  member(w, "cuda_runtime", env.cuda_runtime);
  member(w, "cublas", env.cublas);
  w.key("nccl");
  if (env.nccl) {
    w.string(*env.nccl);
  } else {
    w.null();
  }
  member(w, "method", env.method);
  w.end_object();

  w.key("samples");
  w.begin_array();
  for (const Sample& s : samples) {
    w.begin_object(Layout::inline_);
    member(w, "kind", s.kind);
    for (const auto& [key, value] : s.fields) {
      w.key(key);
      if (const auto* i = std::get_if<std::int64_t>(&value)) {
        w.integer(*i);
      } else {
        w.string(std::get<std::string>(value));
      }
    }
    for (const auto& [key, stats] : s.stats) {
      w.key(key);
      write_stats(w, stats);
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.finish();
}

std::string method_text(const Sweep& sweep, std::int64_t l2_bytes,
                        std::span<const std::string> skipped) {
  const RepetitionPolicy& r = sweep.repetitions;
  std::string m =
      "CUDA events around each repetition after " + std::to_string(sweep.warmups) +
      " warm-ups; statistics over R repetitions, R filling about " +
      printf_string("%g", r.target_s * 1e3) + " ms of GPU time (" + std::to_string(r.min) +
      " <= R <= " + std::to_string(r.max) +
      "), median and p10/p90 interpolated linearly, std with n-1; buffers rotated over N copies "
      "with N x footprint > 2 x L2 (L2 " + std::to_string(l2_bytes) +
      " B); random non-zero data (|x| uniform in [0.25, 1), random sign, SplitMix64 hash); "
      "GEMMs (cuBLASLt, heuristic's first algorithm, 32 MiB workspace), norms and d2d copies "
      "queued behind a blocking kernel so that host launch gaps are excluded; host copies, "
      "gathers, interference, peer copies and collectives timed as the host issues them.";
  if (!skipped.empty()) {
    m += " Skipped: ";
    for (std::size_t i = 0; i < skipped.size(); ++i) {
      if (i > 0) m += "; ";
      m += skipped[i];
    }
    m += ".";
  }
  return m;
}

std::string summary_table(std::span<const Sample> samples) {
  std::vector<Line> lines;
  std::map<std::string, std::int64_t> counts;
  std::vector<std::string> kinds;  // in order of first appearance
  for (const Sample& s : samples) {
    if (counts[s.kind]++ == 0) kinds.push_back(s.kind);
    Line l = summarise(s);
    bool placed = false;
    for (Line& existing : lines) {
      if (existing.kind == l.kind && existing.label == l.label) {
        if (l.score > existing.score) existing = l;
        placed = true;
        break;
      }
    }
    if (!placed) lines.push_back(std::move(l));
  }
  std::string out = "ess-bench: " + std::to_string(samples.size()) + " samples\n";
  char buffer[512];
  for (const std::string& kind : kinds) {
    std::snprintf(buffer, sizeof buffer, "%-20s %6lld samples\n", kind.c_str(),
                  static_cast<long long>(counts[kind]));
    out += buffer;
    for (const Line& l : lines) {
      if (l.kind != kind) continue;
      std::snprintf(buffer, sizeof buffer, "  %-22s %s\n", l.label.c_str(), l.text.c_str());
      out += buffer;
    }
  }
  return out;
}

}  // namespace ess::bench
