// linkedin/Liger-Kernel's benchmark table: RMSNorm and LayerNorm forward times.
#include "calibration/measurement_formats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/config_error.h"
#include "sim/config/json_text.h"

#include "calibration/format_helpers.h"

namespace ess::measurement {

namespace {

// {"M": 4096, "dtype": "torch.float32", "eps": 1e-06} -> M and the dtype.
void read_liger_norm(const CsvTable& t, MeasurementInput& in, MeasurementSet& out, const ReadOptions& o) {
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

}  // namespace

extern const CsvFormat kLigerNormFormat{
    "liger-norm", "the Liger-Kernel benchmark CSV",
    [](const CsvTable& t) { return t.has("kernel_name") && t.has("y_value_50"); }, read_liger_norm};

}  // namespace ess::measurement
